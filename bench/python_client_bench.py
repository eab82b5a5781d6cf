#!/usr/bin/env python3
"""How fast tailsweep.Client reads a big sweep offline, against Optuna's
trials_dataframe on a study of the same size, side by side in one run.

Builds a database with the coordinator's own schema (a tailsweep-coordinator
started once on an empty file creates it), fills it by SQL with JOBS done
train jobs (each the result of a real small run, samples dropped, as the
store keeps it), and a sweep of POINTS points (POINTS / 9000 jobs x 9
metrics x 1000 steps), then times, each in a fresh process (wall time and peak RSS):
  - import tailsweep (no pandas), against a bare interpreter;
  - Sweep.results() of JOBS jobs, as records and as a DataFrame;
  - Sweep.history() of POINTS points as a DataFrame;
  - Client.job(prefix) over HTTP: one request, against 0.1.0's paging;
  - Optuna's trials_dataframe() on a SQLite study of TRIALS trials that
    hold the same data as a sweep's results (the config as params, the
    result's fields as user attributes; made with Optuna's API, then copied
    in SQL), and tailsweep's results() on a sweep of as many jobs.
Imports are inside the timed code (pandas for tailsweep's frames, optuna).

  bench/python_client_bench.py BIN_DIR [--jobs 100000] [--points 1500000]
      [--trials 20000] [--baseline PYTHON_DIR]
Needs python3-pandas and python3-optuna (Debian's).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 1000
METRICS = ["loss", "lr", "grad_norm", "spread_ratio", "step_seconds",
           "attention_entropy/0", "attention_max_weight/0", "eval/x", "eval/y"]


def empty_database(bin_dir, path):
    """A database file with the store's schema and nothing in it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = "127.0.0.1:%d" % s.getsockname()[1]
    data = path + ".data"
    p = subprocess.Popen([os.path.join(bin_dir, "tailsweep-coordinator"),
                          "--db", path, "--data-dir", data, "--listen", address],
                         stderr=subprocess.DEVNULL)
    env = dict(os.environ, TAILSWEEP_COORDINATOR=address)
    for _ in range(200):
        if subprocess.run([os.path.join(bin_dir, "tailsweep"), "status"],
                          env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    p.wait()


def real_result(bin_dir, work):
    out = os.path.join(work, "one")
    subprocess.run([os.path.join(bin_dir, "tailsweep-lab"), "--threads", "1",
                    "lab", "train", "--set", "steps=4", "--set", "n_points=64",
                    "--set", "layers=1", "--set", "d_model=16", "--set",
                    "heads=2", "--set", "eval_instances=2", "--set",
                    "reference_trials=2", "--set", "warmup=0", "--out-dir",
                    out, "--device", "cpu"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "result.json")) as f:
        doc = json.load(f)
    doc.pop("samples", None)
    return doc


def fill(path, name, jobs, history_jobs, result):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    cur = db.execute("INSERT INTO sweeps (name, kind, fixed, created_ms) "
                     "VALUES (?, 'train', '{}', 0)", (name,))
    sweep_id = cur.lastrowid
    kernels = ["softmax", "quadratic", "linear", "log"]

    def rows():
        for i in range(jobs):
            job_id = "%s%058x" % (name[:6].ljust(6, "0").encode().hex()[:6], i)
            cell = {"kernel": kernels[i % 4], "seed": str(i // 4)}
            config = dict(result["config"], kernel=kernels[i % 4], seed=i // 4)
            doc = dict(result, config=config)
            yield (sweep_id, job_id, json.dumps(cell, sort_keys=True), i,
                   json.dumps({k: str(v) for k, v in config.items()},
                              sort_keys=True), json.dumps(doc))
    batch = []
    for r in rows():
        batch.append(r)
        if len(batch) == 10000:
            insert(db, batch)
            batch = []
    if batch:
        insert(db, batch)
    ids = [r[0] for r in db.execute(
        "SELECT job_id FROM sweep_jobs WHERE sweep_id = ? ORDER BY position "
        "LIMIT ?", (sweep_id, history_jobs))]
    for job_id in ids:
        db.executemany(
            "INSERT INTO metrics (job_id, name, step, value, epoch) "
            "VALUES (?, ?, ?, ?, 1)",
            ((job_id, m, s, 1.0 / s, ) for m in METRICS
             for s in range(1, STEPS + 1)))
    db.commit()
    db.close()


def insert(db, batch):
    db.executemany("INSERT INTO jobs (job_id, kind, params, state, epoch, "
                   "attempt, created_ms, updated_ms) VALUES (?, 'train', ?, "
                   "'done', 1, 1, 0, 0)", [(r[1], r[4]) for r in batch])
    db.executemany("INSERT INTO sweep_jobs (sweep_id, job_id, cell, position) "
                   "VALUES (?, ?, ?, ?)", [(r[0], r[1], r[2], r[3])
                                           for r in batch])
    db.executemany("INSERT INTO results (job_id, result, completed_ms) "
                   "VALUES (?, ?, 0)", [(r[1], r[5]) for r in batch])


def optuna_study(path, trials, result):
    """A SQLite study of `trials` trials holding what a sweep's results do:
    the job's config as params, the result's fields as user attributes, its
    ratio as the value. 500 through Optuna's API, then copied in SQL."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = "sqlite:///" + path
    study = optuna.create_study(study_name="bench", storage=storage)
    seed = min(trials, 500)
    config = result["config"]
    fields = {k: v for k, v in result.items()
              if k not in ("config", "samples")
              and isinstance(v, (int, float, str, bool))}

    def objective(t):
        for key, value in config.items():
            if isinstance(value, bool) or isinstance(value, str):
                t.suggest_categorical(key, [value])
            else:
                t.suggest_float(key, float(value), float(value))
        for key, value in fields.items():
            t.set_user_attr(key, value)
        return float(result.get("ratio_median", 1.0))
    study.optimize(objective, n_trials=seed)
    db = sqlite3.connect(path)
    copies = (trials - seed) // seed
    top = db.execute("SELECT MAX(trial_id), MAX(number) FROM trials").fetchone()
    for k in range(1, copies + 1):
        off = k * (top[0] + 1)
        noff = k * (top[1] + 1)
        db.execute("INSERT INTO trials (trial_id, number, study_id, state, "
                   "datetime_start, datetime_complete) SELECT trial_id + ?, "
                   "number + ?, study_id, state, datetime_start, "
                   "datetime_complete FROM trials WHERE trial_id <= ?",
                   (off, noff, top[0]))
        for table, cols in (
                ("trial_params", "param_name, param_value, distribution_json"),
                ("trial_values", "objective, value, value_type"),
                ("trial_user_attributes", "key, value_json")):
            db.execute("INSERT INTO %s (trial_id, %s) SELECT trial_id + ?, %s "
                       "FROM %s WHERE trial_id <= ?" % (table, cols, cols,
                                                        table), (off, top[0]))
    db.commit()
    n = db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    db.close()
    return n


# The peak is reset first (clear_refs 5): a forked child's high-water mark
# starts at its parent's.
CHILD = r"""
import sys, time
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
sys.path.insert(0, %(python)r)
start = time.perf_counter()
%(code)s
took = time.perf_counter() - start
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(took, int(peak.split()[1]) * 1024)
"""


def measure(code, reps=2, python=os.path.join(REPO, "python")):
    """Best wall time of `reps` fresh processes, and their peak RSS, with
    the tailsweep package of the folder `python`."""
    best, rss = None, 0
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, "-c", CHILD % {"python": python, "code": code}],
            check=True, capture_output=True, text=True).stdout.split()
        took, peak = float(out[-2]), int(out[-1])
        best = took if best is None else min(best, took)
        rss = max(rss, peak)
    return best, rss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bin_dir")
    parser.add_argument("--jobs", type=int, default=100000)
    parser.add_argument("--points", type=int, default=1500000)
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--baseline", metavar="PYTHON_DIR",
                        help="also time each tailsweep line with the package "
                        "in this folder (e.g. another commit's python/, from "
                        "git archive), side by side")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="tailsweep_client_bench_")
    try:
        db = os.path.join(work, "ts.db")
        empty_database(args.bin_dir, db)
        result = real_result(args.bin_dir, work)
        history_jobs = max(1, args.points // (len(METRICS) * STEPS))
        t0 = time.time()
        fill(db, "big", args.jobs, 0, result)
        fill(db, "curves", history_jobs, history_jobs, result)
        fill(db, "same", args.trials, 0, result)
        built = time.time() - t0
        study = os.path.join(work, "optuna.db")
        trials = optuna_study(study, args.trials, result)
        print("database: %d jobs + %d jobs, %d points (%d jobs x %d metrics x "
              "%d steps), built in %.0f s; optuna study: %d trials"
              % (args.jobs, args.trials, history_jobs * len(METRICS) * STEPS,
                 history_jobs, len(METRICS), STEPS, built, trials))
        rows = [
            ("bare python3", "pass"),
            ("import tailsweep; tailsweep.Client", "import tailsweep; "
             "tailsweep.Client"),
            ("results(), %d jobs, records" % args.jobs,
             "import tailsweep; tailsweep.Client.open(%r).sweep('big')"
             ".results(output='records')" % db),
            ("results(), %d jobs, DataFrame" % args.jobs,
             "import tailsweep; tailsweep.Client.open(%r).sweep('big')"
             ".results()" % db),
            ("history(), %d points, DataFrame"
             % (history_jobs * len(METRICS) * STEPS),
             "import tailsweep; tailsweep.Client.open(%r).sweep('curves')"
             ".history()" % db),
            ("results(), %d jobs, DataFrame" % args.trials,
             "import tailsweep; tailsweep.Client.open(%r).sweep('same')"
             ".results()" % db),
            ("optuna trials_dataframe(), %d trials" % trials,
             "import optuna; optuna.logging.set_verbosity(30); "
             "optuna.load_study(study_name='bench', storage='sqlite:///%s')"
             ".trials_dataframe()" % study),
        ]
        # The same database served over HTTP by a coordinator.
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            grpc_port = sock.getsockname()[1]
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            http = "127.0.0.1:%d" % sock.getsockname()[1]
        server = subprocess.Popen(
            [os.path.join(args.bin_dir, "tailsweep-coordinator"), "--db", db,
             "--data-dir", db + ".data", "--listen",
             "127.0.0.1:%d" % grpc_port, "--http-listen", http],
            stderr=subprocess.DEVNULL)
        import urllib.request
        for _ in range(200):
            try:
                urllib.request.urlopen("http://%s/api/sweeps" % http).read()
                break
            except OSError:
                time.sleep(0.1)
        # The last job of the big sweep, by its id: one request
        # (GET /api/jobs/ID), against what 0.1.0's client did (its logs,
        # then every sweep's jobs paged until the id showed).
        last = "%s%058x" % ("big".ljust(6, "0").encode().hex()[:6],
                            args.jobs - 1)
        rows += [
            ("HTTP job(id) among %d jobs" % (args.jobs + args.trials),
             "import tailsweep; tailsweep.Client(%r).job(%r)"
             % (http, last)),
            ("HTTP job(id), 0.1.0's way (paging)",
             "import tailsweep; s = tailsweep.Client(%r)._source\n"
             "s.get('/api/jobs/%s/logs')\n"
             "next(r for w in s.sweeps() for r in s.job_rows(w['name'])\n"
             "     if r.job_id == %r)" % (http, last, last)),
        ]
        rows += [
            ("HTTP results(), %d jobs, DataFrame" % args.jobs,
             "import tailsweep; tailsweep.Client(%r).sweep('big').results()"
             % http),
            ("HTTP history(), %d points, DataFrame"
             % (history_jobs * len(METRICS) * STEPS),
             "import tailsweep; tailsweep.Client(%r).sweep('curves')"
             ".history()" % http),
        ]
        print("%-44s %10s %12s" % ("what (fresh process, best of 2)",
                                   "seconds", "peak RSS MB"))
        for what, code in rows:
            took, rss = measure(code)
            print("%-44s %10.3f %12.0f" % (what, took, rss / 2**20))
            sys.stdout.flush()
            if (args.baseline and code.startswith("import tailsweep")
                    and "0.1.0's" not in what):
                took, rss = measure(code, python=args.baseline)
                print("%-44s %10.3f %12.0f" % ("  baseline", took, rss / 2**20))
                sys.stdout.flush()
        server.send_signal(signal.SIGTERM)
        server.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
