#!/usr/bin/python3
"""SVG figure of the first layer's attention concentration at initialisation,
from the JSON rows of `tailsweep-lab lab concentration --format json`.

    tailsweep-lab lab concentration --format json > IN.json
    python3 reports/concentration_figure.py IN.json --title TEXT --out OUT.svg
    python3 reports/concentration_figure.py IN.json --table   (markdown)
    (Debian python3, standard library only)

Two panels (heavy-tailed mirrored Pareto inputs, Gaussian inputs) share a
log10 y axis: N times each query's largest attention weight, averaged over
queries and seeds (the concentration factor: 1 when attention is uniform).
N is on a log2 x axis. One line per kernel; error bars are the rows' 95%
percentile-bootstrap interval over seeds, times N. Kernels are nudged a few
pixels apart along x so that overlapping markers and bars stay visible.
"""
import argparse
import json
import math
from xml.sax.saxutils import escape

PANELS = [("mirrored_pareto", "heavy-tailed (mirrored Pareto)"),
          ("gaussian", "Gaussian")]
COLOURS = {"softmax": "#d62728", "quadratic": "#ff7f0e",
           "linear": "#2ca02c", "log": "#1f77b4"}
SPARE = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
W, H = 1000, 470
TOP, BOTTOM, LEFT = 80, 400, 80          # plot area rows; left panel's x0
PANEL_W, GAP = 360, 40                   # panel width; gap between panels
LEGEND_X = LEFT + 2 * PANEL_W + GAP + 30
DODGE = 5                                # px between kernels along x


def decade_label(k):
    return str(10 ** k) if 0 <= k <= 2 else ("0.1" if k == -1 else f"1e{k}")


def text(x, y, s, size=12, anchor="middle", extra=""):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
            f'text-anchor="{anchor}"{extra}>{escape(str(s))}</text>')


def line(x1, y1, x2, y2, stroke="#000", extra=""):
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{stroke}"{extra}/>')


def figure(rows, title):
    ns = sorted({r["n"] for r in rows})
    kernels = [k for k in COLOURS if any(r["kernel"] == k for r in rows)]
    kernels += sorted({r["kernel"] for r in rows} - set(kernels))
    colour = dict(COLOURS)
    for i, k in enumerate(k for k in kernels if k not in COLOURS):
        colour[k] = SPARE[i % len(SPARE)]

    # Shared y range (log10): every bar end and the uniform line, padded.
    ys = [1.0] + [r["n"] * v for r in rows
                  for v in (r["row_max_ci_low"], r["row_max_ci_high"],
                            r["row_max_mean"]) if v > 0]
    ylo = math.log10(min(ys)) - 0.3      # room for "uniform" under its line
    yhi = max(math.ceil(math.log10(max(ys))), ylo + 1)
    xlo = math.log2(ns[0]) - 0.5
    xhi = math.log2(ns[-1]) + 0.5

    def py(v):
        return BOTTOM - (math.log10(v) - ylo) / (yhi - ylo) * (BOTTOM - TOP)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif">',
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           text(W / 2, 28, title, size=15, extra=' font-weight="bold"')]
    ymid = (TOP + BOTTOM) / 2
    out.append(text(22, ymid, "N x largest weight per query (1 = uniform)",
                    extra=f' transform="rotate(-90 22 {ymid:.1f})"'))
    for p, (marginal, label) in enumerate(PANELS):
        x0 = LEFT + p * (PANEL_W + GAP)

        def px(n, x0=x0):
            return x0 + (math.log2(n) - xlo) / (xhi - xlo) * PANEL_W

        out.append(text(x0 + PANEL_W / 2, TOP - 12, label, size=13))
        for k in range(math.ceil(ylo), int(yhi) + 1):   # decade grid, labels
            y = py(10.0 ** k)
            out.append(line(x0, y, x0 + PANEL_W, y, "#ddd"))
            if p == 0:
                out.append(line(x0 - 5, y, x0, y))
                out.append(text(x0 - 8, y + 4, decade_label(k), anchor="end"))
        for n in ns:                                     # N ticks
            x = px(n)
            out.append(line(x, BOTTOM, x, BOTTOM + 5))
            out.append(text(x, BOTTOM + 19, n))
        out.append(text(x0 + PANEL_W / 2, BOTTOM + 40, "N (log2 scale)"))
        y1 = py(1.0)
        out.append(line(x0, y1, x0 + PANEL_W, y1, "#555",
                        ' stroke-dasharray="6 4"'))
        out.append(text(x0 + PANEL_W - 4, y1 + 13, "uniform", size=11,
                        anchor="end", extra=' fill="#555"'))
        for i, kernel in enumerate(kernels):
            pts = sorted((r for r in rows if r["marginal"] == marginal
                          and r["kernel"] == kernel), key=lambda r: r["n"])
            if not pts:
                continue
            dx = (i - (len(kernels) - 1) / 2) * DODGE
            c = colour[kernel]
            xy = [(px(r["n"]) + dx, py(r["n"] * r["row_max_mean"]))
                  for r in pts]
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" '
                       f'points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}"/>')
            for r, (x, y) in zip(pts, xy):
                lo = max(r["n"] * r["row_max_ci_low"], 10 ** ylo)
                hi = r["n"] * r["row_max_ci_high"]
                out.append(line(x, py(lo), x, py(hi), c, ' stroke-width="1.5"'))
                for yb in (py(lo), py(hi)):
                    out.append(line(x - 3, yb, x + 3, yb, c))
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                           f'fill="{c}" stroke="#fff" stroke-width="0.8"/>')
        out.append(f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" '
                   f'height="{BOTTOM - TOP}" fill="none" stroke="#000"/>')
    out.append(text(LEGEND_X, TOP + 4, "kernel", size=13, anchor="start",
                    extra=' font-weight="bold"'))
    for i, kernel in enumerate(kernels):
        y = TOP + 26 + 22 * i
        out.append(line(LEGEND_X, y, LEGEND_X + 26, y, colour[kernel],
                        ' stroke-width="2"'))
        out.append(f'<circle cx="{LEGEND_X + 13}" cy="{y}" r="3.5" '
                   f'fill="{colour[kernel]}"/>')
        out.append(text(LEGEND_X + 34, y + 4, kernel, anchor="start"))
    out.append(text(LEGEND_X, TOP + 40 + 22 * len(kernels),
                    "bars: 95% CI", size=11, anchor="start",
                    extra=' fill="#555"'))
    out.append(text(LEGEND_X, TOP + 55 + 22 * len(kernels),
                    "over seeds", size=11, anchor="start",
                    extra=' fill="#555"'))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def table(rows):
    """The figure's numbers as markdown: one row per (inputs, N), one column
    per kernel, each cell N times the mean largest weight [95% interval]."""
    kernels = []
    for r in rows:
        if r["kernel"] not in kernels:
            kernels.append(r["kernel"])
    cells = {(r["marginal"], r["n"], r["kernel"]): r for r in rows}
    out = ["| inputs | N | " + " | ".join(kernels) + " |",
           "|---|---|" + "---|" * len(kernels)]
    for marginal, _ in PANELS:
        for n in sorted({r["n"] for r in rows if r["marginal"] == marginal}):
            line = f"| {marginal} | {n} |"
            for k in kernels:
                r = cells.get((marginal, n, k))
                line += " - |" if r is None else (
                    f" {n * r['row_max_mean']:.3g} [{n * r['row_max_ci_low']:.3g},"
                    f" {n * r['row_max_ci_high']:.3g}] |")
            out.append(line)
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", help="JSON from lab concentration --format json")
    ap.add_argument("--title", help="the figure's title")
    ap.add_argument("--out", help="SVG file to write")
    ap.add_argument("--table", action="store_true",
                    help="print the numbers as a markdown table instead")
    args = ap.parse_args()
    if not args.table and not (args.title and args.out):
        ap.error("give --title and --out for the figure, or --table")
    with open(args.input) as f:
        rows = json.load(f)
    if args.table:
        print(table(rows), end="")
        return
    with open(args.out, "w") as f:
        f.write(figure(rows, args.title))


if __name__ == "__main__":
    main()
