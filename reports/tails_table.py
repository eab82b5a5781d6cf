#!/usr/bin/python3
"""Where the tail testbed's ED and W2 are smallest, per seam and budget.

    build/bin/tailsweep results tails --format csv > T.csv
    reports/tails_table.py T.csv      (Debian python3 with pandas)

One markdown row per (seam, budget): the index with the smallest mean ED and
mean W2, both statistics in noise units at the grid's largest index, and the
largest |W2 noise units| over the indices above the reference (1.5).
"""
import sys

import pandas as pd


def main(path, reference=1.5):
    t = pd.read_csv(path)
    print("| seam q0 | N | ED argmin a | W2 argmin a | ED noise units at "
          "largest a | W2 noise units at largest a | largest W2 noise units, "
          f"a > {reference} |")
    print("|---|---|---|---|---|---|---|")
    for (seam, n), g in t.groupby(["seam", "n"]):
        last = g.loc[g["index"].idxmax()]
        above = g[g["index"] > reference]
        print(f"| {seam} | {n} | {g.loc[g.ed_mean.idxmin()]['index']:.1f} | "
              f"{g.loc[g.w2_mean.idxmin()]['index']:.1f} | "
              f"{last.ed_noise:.2f} | {last.w2_noise:.2f} | "
              f"{above.w2_noise.abs().max():.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
