#!/usr/bin/python3
"""What happened after each collapse, from results and metrics exports.

    build/bin/tailsweep export SWEEP --what results --format csv --out R.csv
    build/bin/tailsweep export SWEEP --what metrics --format csv \\
        --metric loss --metric spread_ratio --out M.csv
    reports/collapse_course.py --results R.csv ... --metrics M.csv ...

One markdown row per run collapsed under `logged_3` or `final_eval` (the
two rules a lasting collapse meets), ordered by task, kernel and seed: its
onsets under those rules; the lowest logged loss (its step) and the last;
how many of the logged steps from the `logged_3` onset on had a spread
ratio below 0.05, the highest of them; the final evaluation's spread ratio
and median distance ratio. A metrics file has operator, kernel and seed
columns (or the export's params_ columns) with name, step, value. Debian
python3 with pandas.
"""
import argparse
import json

import pandas as pd

KEYS = ["operator", "kernel", "seed"]


def read_metrics(paths):
    frames = []
    for path in paths:
        m = pd.read_csv(path)
        m = m.rename(columns={f"params_{k}": k for k in KEYS})
        m = m.rename(columns={"name": "metric"})
        frames.append(m[KEYS + ["metric", "step", "value"]])
    return pd.concat(frames, ignore_index=True)


def course(run, metrics):
    """The row's cells for one run (a results row), or None if no lasting
    collapse rule fired."""
    onsets = json.loads(run["collapse_onsets"])
    if onsets.get("logged_3") is None and onsets.get("final_eval") is None:
        return None
    mine = metrics[(metrics.operator == run["params_operator"]) &
                   (metrics.kernel == run["params_kernel"]) &
                   (metrics.seed == run["params_seed"])]
    loss = mine[mine.metric == "loss"].sort_values("step")
    spread = mine[mine.metric == "spread_ratio"].sort_values("step")
    low = loss.loc[loss.value.idxmin()]
    start = onsets.get("logged_3")
    held = "- | -"
    if start is not None:
        after = spread[spread.step >= start]
        held = "%d of %d | %.3g" % ((after.value < 0.05).sum(), len(after),
                                    after.value.max())

    def text(v):
        return "-" if v is None else str(v)
    return (f"| {run['params_operator']} | {run['params_kernel']} | "
            f"{run['params_seed']} | {text(start)} | "
            f"{text(onsets.get('final_eval'))} | {low.value:.3g} "
            f"({int(low.step)}) | {loss.value.iloc[-1]:.3g} | "
            f"{held} | "
            f"{run['spread_ratio']:.3g} | {run['ratio_median']:.3g} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", nargs="+", required=True)
    ap.add_argument("--metrics", nargs="+", required=True)
    args = ap.parse_args()
    runs = pd.concat([pd.read_csv(p) for p in args.results],
                     ignore_index=True)
    metrics = read_metrics(args.metrics)
    print("| task | kernel | seed | logged_3 onset | final_eval onset "
          "| lowest loss (step) | last loss | logged steps below 0.05 from "
          "the onset | highest spread from the onset | final eval spread "
          "| final ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    order = runs.sort_values(["params_operator", "params_kernel",
                              "params_seed"])
    for _, run in order.iterrows():
        row = course(run, metrics)
        if row:
            print(row)


if __name__ == "__main__":
    main()
