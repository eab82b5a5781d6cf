#!/usr/bin/env python3
"""Judge a train.py checkpoint by tailsweep-lab's own yardstick.

Exports the held-out instances that `tailsweep-lab lab train` evaluates
its models on for the checkpoint's config (`lab bench export`: the same
eval_seed, instances, N, operator and marginal), runs the checkpoint's
model on each input, and has `lab bench judge` give the verdict the C++
core gives its own models: distance ratios to the sampling reference,
spread ratio, Hill statistic, collapsed or not (docs/child-contract.md,
"The paper's benchmark for your model").

  PYTHONPATH=python python3 examples/pytorch/judge.py CHECKPOINT_DIR \\
      [--lab tailsweep-lab] [--work DIR]

CHECKPOINT_DIR: a step-N/ directory train.py wrote (its state.pt). Prints
the judge's JSON verdict.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402  the model's definition

# The config keys `lab bench export` takes from train.py's config: the data
# and the judge, not the model.
BENCH_KEYS = ("operator", "marginal", "n_points", "eval_instances",
              "reference_trials", "eval_seed", "batch", "tail_index_min",
              "tail_index_max")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a step-N/ directory of train.py")
    parser.add_argument("--lab", default="tailsweep-lab",
                        help="the tailsweep-lab executable")
    parser.add_argument("--work", help="where the files go (default: temp)")
    args = parser.parse_args()

    state = torch.load(os.path.join(args.checkpoint, "state.pt"))
    cfg = types.SimpleNamespace(**state["config"])
    model = train.PointTransformer(cfg)
    model.load_state_dict(state["model"])
    model.eval()

    work = args.work or tempfile.mkdtemp(prefix="tailsweep-judge-")
    data, preds = os.path.join(work, "bench"), os.path.join(work, "pred")
    os.makedirs(preds, exist_ok=True)
    sets = []
    for key in BENCH_KEYS:
        sets += ["--set", "%s=%s" % (key, getattr(cfg, key))]
    subprocess.run([args.lab, "--threads", "1", "lab", "bench", "export",
                    "--out-dir", data] + sets, check=True,
                   stdout=subprocess.DEVNULL)
    with torch.no_grad():
        for k in range(cfg.eval_instances):
            with open(os.path.join(data, "input-%d.csv" % k)) as f:
                rows = [line.split(",") for line in f.read().split()[1:]]
            x = torch.tensor([[float(a), float(b)] for a, b in rows])
            y = model(x.unsqueeze(0).float())[0].double()
            with open(os.path.join(preds, "prediction-%d.csv" % k), "w") as f:
                f.write("x,y\n")
                for a, b in y.tolist():
                    f.write("%r,%r\n" % (a, b))
    verdict = subprocess.run(
        [args.lab, "--threads", "1", "lab", "bench", "judge", "--data", data,
         "--predictions", preds], check=True, capture_output=True, text=True)
    print(json.dumps(json.loads(verdict.stdout)))


if __name__ == "__main__":
    main()
