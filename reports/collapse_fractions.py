#!/usr/bin/python3
"""Collapse as a fraction with its interval, per cell, from results exports.

    build/bin/tailsweep export SWEEP --what results --format csv --out R.csv
    reports/collapse_fractions.py [--prior CELL=K/N ...] [--stop-after K] R.csv ...

One markdown row per (operator, kernel) over every file given (seeds
pooled): collapsed k of n, the Wilson 95% interval of k/n (the rule
core/schema/boundary_search.h judges probe points by), the seeds' final
median distance ratios (min-max), and, with --stop-after K, the training
steps early stopping (stop_after_collapse: K) would have saved on the
collapsed runs: steps - (onset + K) each, runs being deterministic up to
there. --prior operator/kernel=K/N adds counts from runs not in the files
(e.g. the earlier builds' seeds 0-2, reports/experiments/earlier-builds.md). Debian python3 with pandas.
"""
import math
import sys

import pandas as pd

Z = 1.959963984540054  # 95%


def wilson(k, n):
    p = k / n
    z2n = Z * Z / n
    center = (p + z2n / 2) / (1 + z2n)
    half = Z * math.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    return max(0.0, center - half), min(1.0, center + half)


def main(argv):
    prior, stop_after, files = {}, None, []
    it = iter(argv)
    for a in it:
        if a == "--prior":
            cell, frac = next(it).split("=")
            k, n = frac.split("/")
            prior[cell] = (int(k), int(n))
        elif a == "--stop-after":
            stop_after = int(next(it))
        else:
            files.append(a)
    runs = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    # The ratios and the savings are of the runs in the files (the priors
    # bring counts only).
    print("| task | kernel | collapsed | fraction [95% Wilson] | final ratios "
          "(runs in the files)"
          + (f" | steps stop_after_collapse: {stop_after} would save |"
             if stop_after is not None else " |"))
    print("|---|---|---|---|---|" + ("---|" if stop_after is not None else ""))
    for (op, kernel), g in runs.groupby(["params_operator", "params_kernel"],
                                        sort=False):
        k = int(g["collapsed"].astype(bool).sum())
        n = len(g)
        pk, pn = prior.get(f"{op}/{kernel}", (0, 0))
        k, n = k + pk, n + pn
        lo, hi = wilson(k, n)
        ratios = g["ratio_median"].astype(float)
        row = (f"| {op} | {kernel} | {k}/{n} | {k / n:.2f} [{lo:.2f}, {hi:.2f}] "
               f"| {ratios.min():.1f}-{ratios.max():.1f} |")
        if stop_after is not None:
            saved = 0
            total = 0
            for _, r in g.iterrows():
                steps = int(r["params_steps"])
                total += steps
                if bool(r["collapsed"]) and not pd.isna(r["collapse_step"]):
                    saved += max(0, steps - (int(r["collapse_step"]) + stop_after))
            row += f" {saved} of {total} ({100 * saved / total:.0f}%) |"
        print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
