#!/usr/bin/python3
"""Collapse under each of the four rules, per kernel, from results exports.

    build/bin/tailsweep export SWEEP --what results --format csv --out R.csv
    reports/rules_table.py R.csv ...
    reports/rules_table.py --runs R.csv ...   # one row per run instead
    reports/rules_table.py --pool R.csv ...   # every task's runs of a kernel together
    reports/rules_table.py --vs A.csv B.csv   # the same cells, A against B

Prints two markdown tables over every run in the files, grouped by
(operator, kernel):
  1. runs collapsed under each rule of docs/science.md ("The collapse
     criterion"): any_step (every training step), logged_step (a logged
     step), logged_3 (3 consecutive logged steps, the default, chosen before
     these runs) and final_eval (final evaluation spread below 0.25), each
     k/n with its 95% Wilson interval; the median (min-max) of the runs'
     final median distance ratios and Hill-error statistics;
  2. Fisher's exact test (two-sided) of every pair of kernels, per rule,
     and the exact two-sided Mann-Whitney test of their final ratios.
A run's onset under a rule is in its result's collapse_onsets (null: not
collapsed); a `kind: command` export (the PyTorch cross-check) has it in
its `child` column, read the same. Debian python3 with pandas; no scipy.
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


def rank_sum_p(a, b):
    """Two-sided exact p of the Mann-Whitney U test (no ties assumed: the
    runs' final ratios are real numbers): the chance that U is at least as
    far from its mean as observed when the labels are exchangeable."""
    a, b = list(a), list(b)
    u = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    n1, n2 = len(a), len(b)
    # counts[k]: orderings of n1 + n2 items giving U = k (recursion on the
    # largest item: from the first sample it beats every item of the second).
    counts = {(0, 0): {0: 1}}

    def dist(i, j):
        if (i, j) in counts:
            return counts[(i, j)]
        out = {}
        if i > 0:
            for k, c in dist(i - 1, j).items():
                out[k + j] = out.get(k + j, 0) + c
        if j > 0:
            for k, c in dist(i, j - 1).items():
                out[k] = out.get(k, 0) + c
        counts[(i, j)] = out
        return out

    d = dist(n1, n2)
    total = sum(d.values())
    mean = n1 * n2 / 2
    return min(1.0, sum(c for k, c in d.items()
                        if abs(k - mean) >= abs(u - mean) - 1e-9) / total)


def p_text(p, digits=3):
    """A p-value as text: `digits` decimals, or 2 significant digits when
    that would print as 0 (p = 3.4e-05, not 0.000)."""
    return f"{p:.{digits}f}" if p >= 10 ** -digits else f"{p:.1e}"


def spread(values):
    v = values.dropna().astype(float)
    if v.empty:
        return "-"
    return f"{v.median():.3g} ({v.min():.3g}-{v.max():.3g})"


def print_runs(runs, onsets):
    """One row per run: its onsets under each rule (- for none)."""
    print("| task | kernel | seed | " + " | ".join(RULES) +
          " | final spread ratio | final ratio | Hill statistic |")
    print("|---|---|---|" + "---|" * len(RULES) + "---|---|---|")
    order = runs.sort_values(["params_operator", "params_kernel",
                              "params_seed"], kind="stable").index
    for i in order:
        r, o = runs.loc[i], onsets[i]
        cells = ["-" if o.get(rule) is None else str(o[rule])
                 for rule in RULES]
        print(f"| {r['params_operator']} | {r['params_kernel']} | "
              f"{r['params_seed']} | " + " | ".join(cells) +
              f" | {float(r['spread_ratio']):.3g} | "
              f"{float(r['ratio_median']):.3g} | "
              f"{float(r['hill_stat']):.3g} |")


def flatten_child(runs):
    """A `kind: command` export keeps the program's result in a `child`
    column (JSON): the fields the tables read are taken from it, the
    operator, kernel and seed from its `config` (examples/pytorch/train.py
    writes both)."""
    if "collapse_onsets" in runs.columns or "child" not in runs.columns:
        return runs
    child = runs["child"].map(json.loads)
    out = pd.DataFrame(index=runs.index)
    for key in ("operator", "kernel", "seed"):
        out["params_" + key] = child.map(lambda c, k=key: c["config"][k])
    out["collapse_onsets"] = child.map(lambda c: json.dumps(
        c.get("collapse_onsets", {})))
    for key in ("ratio_median", "hill_stat", "spread_ratio"):
        out[key] = child.map(lambda c, k=key: c.get(k, float("nan")))
    return out


def read(files):
    runs = pd.concat([flatten_child(pd.read_csv(f)) for f in files],
                     ignore_index=True)
    onsets = runs["collapse_onsets"].map(json.loads)
    for rule in RULES:
        runs[rule] = onsets.map(lambda o, r=rule: o.get(r) is not None)
    return runs, onsets


def print_vs(first, second):
    """Two implementations (or builds) of the same cells side by side: per
    (operator, kernel) in both, each rule's counts and Fisher's p, and the
    final ratios' medians and Mann-Whitney p."""
    a, _ = read([first])
    b, _ = read([second])
    print("| task | kernel | " + " | ".join(RULES) +
          " | final ratio, median | Mann-Whitney p |")
    print("|---|---|" + "---|" * len(RULES) + "---|---|")
    for (op, kernel), ga in a.groupby(["params_operator", "params_kernel"],
                                      sort=False):
        gb = b[(b["params_operator"] == op) & (b["params_kernel"] == kernel)]
        if gb.empty:
            continue
        cells = []
        for rule in RULES:
            ka, kb = int(ga[rule].sum()), int(gb[rule].sum())
            p = fisher(ka, len(ga), kb, len(gb))
            cells.append(f"{ka}/{len(ga)} vs {kb}/{len(gb)} (p {p:.2f})")
        ra = ga["ratio_median"].astype(float).dropna()
        rb = gb["ratio_median"].astype(float).dropna()
        print(f"| {op} | {kernel} | " + " | ".join(cells) +
              f" | {ra.median():.3g} vs {rb.median():.3g} | "
              f"{p_text(rank_sum_p(ra, rb))} |")


def main(argv):
    if argv[:1] == ["--vs"] and len(argv) == 3:
        return print_vs(argv[1], argv[2])
    flags = {"--runs", "--pool"}
    files = [a for a in argv if a not in flags]
    if not files:
        sys.exit(__doc__)
    runs, onsets = read(files)
    if "--runs" in argv:
        return print_runs(runs, onsets)
    if "--pool" in argv:
        runs["params_operator"] = "pooled"
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
    print("| task | kernels | " + " | ".join(RULES) +
          " | final ratio (Mann-Whitney) |")
    print("|---|---|" + "---|" * len(RULES) + "---|")
    ratios = {(op, kernel): g["ratio_median"].astype(float).dropna()
              for (op, kernel), g in groups}
    ops = list(dict.fromkeys(op for (op, _), _ in groups))
    for op in ops:
        kernels = [k for (o, k), _ in groups if o == op]
        for a, b in combinations(kernels, 2):
            ps = []
            for rule in RULES:
                ka, na = counts[(op, a, rule)]
                kb, nb = counts[(op, b, rule)]
                ps.append(p_text(fisher(ka, na, kb, nb)))
            ps.append(p_text(rank_sum_p(ratios[(op, a)], ratios[(op, b)]), 4))
            print(f"| {op} | {a} vs {b} | " + " | ".join(ps) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
