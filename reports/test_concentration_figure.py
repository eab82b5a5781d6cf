"""reports/concentration_figure.py: its markdown table and its figure from
`lab concentration --format json` rows."""
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import concentration_figure  # noqa: E402

SCRIPT = Path(__file__).parent / "concentration_figure.py"


def row(kernel, marginal, n, mean, low, high):
    return {"kernel": kernel, "marginal": marginal, "n": n, "seeds": 8,
            "row_max_mean": mean, "row_max_ci_low": low,
            "row_max_ci_high": high, "concentration": n * mean,
            "entropy": 1.0}


ROWS = [row("softmax", "mirrored_pareto", 256, 0.25, 0.125, 0.5),
        row("log", "mirrored_pareto", 256, 1 / 128, 1 / 256, 1 / 64),
        row("softmax", "gaussian", 256, 1 / 256, 1 / 256, 1 / 256)]


def test_table_gives_n_times_the_largest_weight_with_its_interval():
    lines = concentration_figure.table(ROWS).splitlines()
    assert lines[0] == "| inputs | N | softmax | log |"
    assert lines[2] == "| mirrored_pareto | 256 | 64 [32, 128] | 2 [1, 4] |"
    # A kernel with no row for a cell shows "-", the heavy tail comes first.
    assert lines[3] == "| gaussian | 256 | 1 [1, 1] | - |"


def test_the_command_prints_the_table_or_writes_the_figure(tmp_path):
    data = tmp_path / "rows.json"
    data.write_text(json.dumps(ROWS))
    out = subprocess.run([sys.executable, str(SCRIPT), str(data), "--table"],
                         capture_output=True, text=True, check=True).stdout
    assert "| mirrored_pareto | 256 | 64 [32, 128] | 2 [1, 4] |" in out
    svg = tmp_path / "f.svg"
    subprocess.run([sys.executable, str(SCRIPT), str(data), "--title", "T",
                    "--out", str(svg)], check=True)
    assert svg.read_text().startswith("<svg")
    # Neither a table nor a whole figure asked for: a usage error.
    bad = subprocess.run([sys.executable, str(SCRIPT), str(data)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--table" in bad.stderr
