#!/usr/bin/python3
"""The paper's regime runs (issue 51, item 4), one markdown row per run.

    reports/paper_regime.py RUN_DIR ...

RUN_DIR holds a `tailsweep-lab lab train` run (metrics.jsonl, and
result.json when it ended). Per run: kernel and seed (from the result's
config, else the directory name), steps logged, the lowest logged loss and
its step, the last logged loss, the lowest logged spread ratio and its step,
how many logged steps were below 0.05, the onset under each collapse rule
(result.json's collapse_onsets; "-" none), and the final evaluation's spread
ratio, median distance ratio [95% interval] and Hill statistic (energy
distance between the Hill tail estimates of prediction and target; 0 is a
perfect tail). Then a row per 500 steps, a column per run: the mean
logged loss / the lowest logged spread ratio. Standard library only.
"""
import json
import os
import sys


def row(run):
    points = []
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if "step" in m and "loss" in m:
                points.append((m["step"], m["loss"], m.get("spread_ratio")))
    result = {}
    path = os.path.join(run, "result.json")
    if os.path.exists(path):
        with open(path) as f:
            result = json.load(f)
    config = result.get("config", {})
    name = os.path.basename(os.path.normpath(run))
    kernel = config.get("kernel", name.split("-")[0])
    seed = config.get("seed", name.split("-s")[-1])
    lo_loss = min(points, key=lambda p: p[1])
    spreads = [p for p in points if p[2] is not None]
    lo_spread = min(spreads, key=lambda p: p[2])
    below = sum(1 for p in spreads if p[2] < 0.05)
    onsets = dict(result.get("collapse_onsets") or {})
    # Runs made before the rules (0.3.0) have no collapse_onsets: the
    # logged rules come from the metrics (as JudgeCollapse counts them),
    # any_step from the tracker's collapse_onset point when there is one.
    if not onsets:
        run_len, first, start = 0, None, None
        for step, _, spread in spreads:
            if spread < 0.05:
                first = step if first is None else first
                run_len += 1
                start = step if run_len == 1 else start
                if run_len == 3 and "logged_3" not in onsets:
                    onsets["logged_3"] = start
            else:
                run_len = 0
        onsets["logged_step"] = first
        onsets.setdefault("logged_3", None)
        if result:
            onsets["final_eval"] = (result["steps_done"]
                                    if result.get("spread_ratio", 1) < 0.25
                                    else None)
            # The old rule's onset is any_step's unless the final
            # evaluation made it.
            if onsets["final_eval"] is None:
                onsets["any_step"] = result.get("collapse_step")

    def onset(rule):
        v = onsets.get(rule)
        return "-" if v is None else str(v)

    if "ratio_median" in result:
        final = "%.3g | %.3g [%.3g, %.3g] | %.3g" % (
            result["spread_ratio"], result["ratio_median"],
            result["ratio_ci_low"], result["ratio_ci_high"],
            result.get("hill_stat", float("nan")))
    else:
        final = "running | running | running"
    return ("| %s | %s | %d | %.4g (%d) | %.4g | %.3g (%d) | %d | %s | %s | "
            "%s | %s | %s |" % (
                kernel, seed, points[-1][0], lo_loss[1], lo_loss[0],
                points[-1][1], lo_spread[2], lo_spread[0], below,
                onset("any_step"), onset("logged_step"), onset("logged_3"),
                onset("final_eval"), final))


def windows(runs, width=500):
    """Per `width` steps (a row each), per run (a column each): the mean
    logged loss / the lowest logged spread ratio."""
    series, last = [], 0
    for run in runs:
        name = os.path.basename(os.path.normpath(run))
        with open(os.path.join(run, "metrics.jsonl")) as f:
            pts = [json.loads(line) for line in f]
        pts = [p for p in pts if "loss" in p]
        series.append((name.replace("-s", " s"), pts))
        last = max(last, pts[-1]["step"] if pts else 0)
    print("\n| steps | " + " | ".join(n for n, _ in series) + " |")
    print("|---|" + "---|" * len(series))
    for a in range(0, last, width):
        cells = []
        for _, pts in series:
            xs = [p for p in pts if a < p["step"] <= a + width]
            cells.append("%.3f / %.2f" % (
                sum(p["loss"] for p in xs) / len(xs),
                min(p["spread_ratio"] for p in xs)) if xs else "-")
        print("| %d-%d | %s |" % (a + 1, a + width, " | ".join(cells)))


def main():
    print("| kernel | seed | steps logged to | lowest loss (step) | last loss "
          "| lowest spread (step) | logged steps < 0.05 | onset any_step "
          "| logged_step | logged_3 | final_eval | final eval spread "
          "| final ratio [95%] | Hill statistic |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in sys.argv[1:]:
        print(row(run))
    windows(sys.argv[1:])


if __name__ == "__main__":
    main()
