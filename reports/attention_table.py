#!/usr/bin/python3
"""Attention entropy and largest weight per layer at chosen steps, one row per
(kernel, step), for the runs of one cell and seed, from the product's export.

    build/bin/tailsweep export SWEEP --what metrics --format csv --out M.csv
    reports/attention_table.py M.csv OPERATOR SEED STEP[,STEP...]
    (Debian python3 with pandas)

Entropy is in nats (uniform over N keys: ln N); both are the trainer's
samples (core/kernel_attention.h, SampleAttentionStats), averaged over the
batch and heads.
"""
import sys

import pandas as pd


def main(metrics_csv, operator, seed, steps):
    m = pd.read_csv(metrics_csv)
    m = m[(m.params_operator == operator) & (m.params_seed == int(seed))]
    layers = sorted(int(n.split("/")[1]) for n in m.name.unique()
                    if n.startswith("attention_entropy/"))
    print("| kernel | step | spread ratio | loss | entropy per layer | "
          "largest weight per layer |")
    print("|---|---|---|---|---|---|")
    for kernel in ["softmax", "quadratic", "linear", "log"]:
        runs = m[m.params_kernel == kernel]
        if runs.empty:
            continue
        for step in steps:
            at = runs[runs.step == step].set_index("name").value
            if at.empty:
                continue
            ent = " ".join(f"{at[f'attention_entropy/{l}']:.2f}" for l in layers)
            top = " ".join(f"{at[f'attention_max_weight/{l}']:.2f}"
                           for l in layers)
            print(f"| {kernel} | {step} | {at['spread_ratio']:.3g} | "
                  f"{at['loss']:.3g} | {ent} | {top} |")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3],
         [int(s) for s in sys.argv[4].split(",")])
