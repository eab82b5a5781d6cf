#!/usr/bin/python3
"""Per-run collapse evidence of a train sweep, from the product's own exports.

    build/bin/tailsweep export SWEEP --what results --format csv --out R.csv
    build/bin/tailsweep export SWEEP --what metrics --format csv \
        --metric loss --metric spread_ratio --out M.csv
    reports/collapse_table.py R.csv M.csv   (Debian python3 with pandas)

Prints one markdown row per run: the cell (the axes below, and any other
job key whose value differs between the runs), collapsed and onset (the
product's rule, core/training_signals.h), the lowest training spread ratio
and its step, the lowest loss and its step, the last logged loss, the final
evaluation's spread ratio and median distance ratio [95% interval].
"""
import sys

import pandas as pd

AXES = ["operator", "marginal", "norm", "symlog", "kernel", "precision",
        "tail_index_min", "tail_index_max", "seed"]


def main(results_csv, metrics_csv):
    results = pd.read_csv(results_csv)
    # Results written before every key was recorded (KeyListing::kEvery in
    # core/job_config.h) leave keys added later empty at their defaults;
    # shown as "default" rather than nan.
    for key in ["precision", "tail_index_min", "tail_index_max"]:
        if "params_" + key in results.columns:
            results["params_" + key] = (
                results["params_" + key].astype(object).fillna("default"))
    metrics = pd.read_csv(metrics_csv)
    varying = [c[len("params_"):] for c in results.columns
               if c.startswith("params_") and c[len("params_"):] not in AXES
               and results[c].nunique(dropna=False) > 1]
    axes = [a for a in AXES[:-1] + varying + AXES[-1:]
            if "params_" + a in results.columns]
    rows = []
    for _, r in results.iterrows():
        m = metrics[metrics.job_id == r.job_id]
        spread = m[m.name == "spread_ratio"].sort_values("step")
        loss = m[m.name == "loss"].sort_values("step")
        low = spread.loc[spread.value.idxmin()] if len(spread) else None
        best = loss.loc[loss.value.idxmin()] if len(loss) else None
        rows.append({
            **{a: r["params_" + a] for a in axes},
            "collapsed": "yes" if str(r.collapsed).lower() == "true" else "no",
            "onset": "" if pd.isna(r.collapse_step) else int(r.collapse_step),
            "min spread (step)": "" if low is None else
                f"{low.value:.3g} ({int(low.step)})",
            "min loss (step)": "" if best is None else
                f"{best.value:.3g} ({int(best.step)})",
            "last loss": "" if not len(loss) else f"{loss.value.iloc[-1]:.3g}",
            "eval spread": f"{r.spread_ratio:.3g}",
            "ratio [95%]": f"{r.ratio_median:.2f} [{r.ratio_ci_low:.2f}, "
                           f"{r.ratio_ci_high:.2f}]",
        })
    table = pd.DataFrame(rows).sort_values(axes)
    header = list(table.columns)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for _, row in table.iterrows():
        print("| " + " | ".join(str(row[h]) for h in header) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
