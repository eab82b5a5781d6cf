#!/usr/bin/env python3
"""Benchmark: a 200-run random search (100 samples x 2 seeds, 3 parameters:
lr log-uniform, batch log-uniform whole numbers, l2 log-uniform) of
examples/search/fit.py, run in full and then with the ASHA stop rule, each
with its own coordinator and one worker of 2 CPU slots (the same samples:
one sample_seed). Prints what docs/performance.md reports: runs, wall time,
training steps run, steps ASHA saved (as the coordinator counts them), and
the best sample's final val_loss (mean over its seeds; for ASHA among the
samples whose runs both went to the end) with the seed spread.

    TAILSWEEP_BIN_DIR=build/bin python3 bench/search_bench.py [--sleep 0.01]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "python", "tests"))
import tailsweep  # noqa: E402
from services import Services, wait_for  # noqa: E402

SPEC = """name: %(name)s
kind: command
command: [python3, %(fit)s, "${args}"]
env: {PYTHONPATH: %(python)s}
stop_grace_s: 10
method: random
sample_seed: 49
parameters:
  lr: {min: 1.0e-3, max: 10, log: true}
  batch: {min: 4, max: 128, int: true, log: true}
  l2: {min: 1.0e-6, max: 1.0e-1, log: true}
run_cap: 200
grid: {seed: [0, 1]}
fixed: {steps: %(steps)d, log_every: 10, checkpoint_every: 100,
        sleep: %(sleep)s}
%(extra)s"""


def status(s, sweep):
    r = s.cli("status", sweep, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def run_arm(name, extra, args):
    root = tempfile.mkdtemp(prefix="tailsweep_search_bench_")
    s = Services(root)
    try:
        path = os.path.join(root, name + ".yaml")
        with open(path, "w") as f:
            f.write(SPEC % dict(name=name, fit=os.path.join(
                REPO, "examples", "search", "fit.py"),
                python=os.path.join(REPO, "python"), steps=args.steps,
                sleep=args.sleep, extra=extra))
        r = s.cli("submit", path)
        assert r.returncode == 0, r.stderr
        t0 = time.time()
        s.worker()
        wait_for(lambda: status(s, name)["done"] == 200, "200 runs done",
                 seconds=3600)
        wall = time.time() - t0
        again = s.cli("submit", path)
        assert "0 jobs added, 200 already there" in again.stdout, again.stdout
        st = status(s, name)
        client = tailsweep.Client(s.http, token=s.token)
        sweep = client.sweep(name)
        frame = sweep.results()
        types = {c: str(frame[c].dtype) for c in
                 ("params_lr", "params_batch", "params_l2")}
        # Steps each run did: its last logged step.
        history = sweep.history(names=["val_loss"], output="pandas")
        last = history.groupby("job_id")["step"].max()
        final = history.sort_values("step").groupby("job_id").last()
        jobs = {j.id: j for j in sweep.jobs()}
        rows = []
        for job_id, j in jobs.items():
            early = bool((j.result or {}).get("early_stop"))
            rows.append((j.params["lr"], j.params["batch"], j.params["l2"],
                         j.params["seed"], early,
                         float(final.loc[job_id, "value"])))
        return dict(wall=wall, status=st, steps_run=int(last.sum()),
                    types=types, rows=rows)
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)


def best(rows, complete_only):
    samples = {}
    for lr, batch, l2, seed, early, value in rows:
        samples.setdefault((lr, batch, l2), []).append((early, value))
    scored = []
    for key, runs in samples.items():
        if complete_only and any(early for early, _ in runs):
            continue
        values = [v for _, v in runs]
        scored.append((sum(values) / len(values),
                       max(values) - min(values), key))
    return min(scored)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--sleep", type=float, default=0.01,
                    help="seconds per training step (a slower model)")
    ap.add_argument("--min-steps", type=int, default=30)
    ap.add_argument("--reduction", type=int, default=3)
    args = ap.parse_args()
    full = run_arm("search-full", "", args)
    asha = run_arm(
        "search-asha",
        "stop: {rule: asha, metric: val_loss, goal: minimize, "
        "min_steps: %d, reduction: %d}\n" % (args.min_steps, args.reduction),
        args)
    planned = 200 * args.steps
    print("random search: 200 runs (100 samples x 2 seeds), %d steps each, "
          "%.3f s/step of sleep; column types %s"
          % (args.steps, args.sleep, full["types"]))
    for name, arm in (("full", full), ("asha", asha)):
        b = best(arm["rows"], complete_only=(name == "asha"))
        print("%s: %.0f s wall, %d of %d steps run (%.0f%%), %d runs stopped "
              "early, steps_saved %d; best sample %s: val_loss %.4f "
              "(seed spread %.4f)"
              % (name, arm["wall"], arm["steps_run"], planned,
                 100.0 * arm["steps_run"] / planned,
                 arm["status"]["runs_stopped_early"],
                 arm["status"]["steps_saved"], b[2], b[0], b[1]))
    saved = 1 - asha["steps_run"] / full["steps_run"]
    print("ASHA saved %.0f%% of the steps; best val_loss %.4f vs %.4f in "
          "full" % (100 * saved, best(asha["rows"], True)[0],
                    best(full["rows"], False)[0]))


if __name__ == "__main__":
    main()
