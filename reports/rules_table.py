#!/usr/bin/python3
"""Collapse under each of the four rules, per kernel, from results exports.

    build/bin/tailsweep export SWEEP --what results --format csv --out R.csv
    reports/rules_table.py R.csv ...

Prints two markdown tables over every run in the files, grouped by
(operator, kernel):
  1. runs collapsed under each rule of docs/science.md ("The collapse
     criterion"): any_step (every training step), logged_step (a logged
     step), logged_3 (3 consecutive logged steps, the default, chosen before
     these runs) and final_eval (final evaluation spread below 0.25), each
     k/n with its 95% Wilson interval; the median (min-max) of the runs'
     final median distance ratios and Hill-error statistics;
  2. Fisher's exact test (two-sided) of every pair of kernels, per rule.
A run's onset under a rule is in its result's collapse_onsets (null: not
collapsed). Debian python3 with pandas; no scipy.
"""
import json
import math
import sys
from itertools import combinations

import pandas as pd

from collapse_fractions import wilson  # one rule for the interval

RULES = ["any_step", "logged_step", "logged_3", "final_eval"]


def fisher(k1, n1, k2, n2):
    """Two-sided p of Fisher's exact test of k1/n1 against k2/n2."""
    k = k1 + k2
    n = n1 + n2

    def prob(a):  # a collapsed of the first group, margins fixed
        return math.comb(n1, a) * math.comb(n2, k - a) / math.comb(n, k)

    observed = prob(k1)
    low, high = max(0, k - n2), min(k, n1)
    return min(1.0, sum(prob(a) for a in range(low, high + 1)
                        if prob(a) <= observed * (1 + 1e-9)))


def spread(values):
    v = values.dropna().astype(float)
    if v.empty:
        return "-"
    return f"{v.median():.3g} ({v.min():.3g}-{v.max():.3g})"


def main(files):
    if not files:
        sys.exit(__doc__)
    runs = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    onsets = runs["collapse_onsets"].map(json.loads)
    for rule in RULES:
        runs[rule] = onsets.map(lambda o, r=rule: o.get(r) is not None)
    groups = list(runs.groupby(["params_operator", "params_kernel"],
                               sort=False))
    print("| task | kernel | n | " + " | ".join(RULES) +
          " | final ratio, median (range) | Hill statistic, median (range) |")
    print("|---|---|---|" + "---|" * len(RULES) + "---|---|")
    counts = {}
    for (op, kernel), g in groups:
        n = len(g)
        cells = []
        for rule in RULES:
            k = int(g[rule].sum())
            counts[(op, kernel, rule)] = (k, n)
            lo, hi = wilson(k, n)
            cells.append(f"{k}/{n} [{lo:.2f}, {hi:.2f}]")
        print(f"| {op} | {kernel} | {n} | " + " | ".join(cells) +
              f" | {spread(g['ratio_median'])} | {spread(g['hill_stat'])} |")
    print()
    print("| task | kernels | " + " | ".join(RULES) + " |")
    print("|---|---|" + "---|" * len(RULES))
    ops = list(dict.fromkeys(op for (op, _), _ in groups))
    for op in ops:
        kernels = [k for (o, k), _ in groups if o == op]
        for a, b in combinations(kernels, 2):
            ps = []
            for rule in RULES:
                ka, na = counts[(op, a, rule)]
                kb, nb = counts[(op, b, rule)]
                ps.append(f"{fisher(ka, na, kb, nb):.3f}")
            print(f"| {op} | {a} vs {b} | " + " | ".join(ps) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
