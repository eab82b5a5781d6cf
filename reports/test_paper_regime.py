"""reports/paper_regime.py: a run's row (onsets, final evaluation, Hill
statistic) and the per-window table, from hand-made run folders."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "paper_regime.py"


def make_run(folder, spreads, result=None):
    folder.mkdir()
    with open(folder / "metrics.jsonl", "w") as f:
        for k, spread in enumerate(spreads):
            f.write(json.dumps({"step": 20 * (k + 1), "loss": 1.0 / (k + 1),
                                "spread_ratio": spread}) + "\n")
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))


def test_rows_and_windows(tmp_path):
    done = {"config": {"kernel": "softmax", "seed": 3}, "spread_ratio": 0.9,
            "ratio_median": 2.5, "ratio_ci_low": 2.0, "ratio_ci_high": 3.0,
            "hill_stat": 0.4, "steps_done": 100,
            "collapse_onsets": {"any_step": 41, "logged_step": 60,
                                "logged_3": None, "final_eval": None}}
    make_run(tmp_path / "softmax-s3", [0.5, 0.6, 0.01, 0.7, 0.8], done)
    # A run still going (no result.json, before the rules): its logged
    # rules come from the metrics, three logged steps in a row for logged_3.
    make_run(tmp_path / "log-s1", [0.9, 0.04, 0.03, 0.02, 0.9])
    out = subprocess.run([sys.executable, str(SCRIPT),
                          str(tmp_path / "softmax-s3"), str(tmp_path / "log-s1")],
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[2] == ("| softmax | 3 | 100 | 0.2 (100) | 0.2 | 0.01 (60) | 1 "
                        "| 41 | 60 | - | - | 0.9 | 2.5 [2, 3] | 0.4 |")
    assert lines[3].startswith("| log | 1 | 100 | 0.2 (100) | 0.2 | 0.02 (80) "
                               "| 3 | - | 40 | 40 | - | running |")
    assert "| steps | softmax s3 | log s1 |" in lines
    assert "| 1-500 | 0.457 / 0.01 | 0.457 / 0.02 |" in lines
