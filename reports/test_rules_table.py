"""reports/rules_table.py: its statistics and its tables from a results CSV."""
import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import rules_table  # noqa: E402


def test_fisher_matches_the_hypergeometric_by_hand():
    # 2/3 against 0/3: tables with 2 collapsed in all have probabilities
    # 0.2 (2, 0), 0.6 (1, 1), 0.2 (0, 2); two-sided p = 0.2 + 0.2.
    assert abs(rules_table.fisher(2, 3, 0, 3) - 0.4) < 1e-12
    assert rules_table.fisher(3, 8, 3, 8) == 1.0
    # 8/8 against 0/8: 2 / C(16, 8).
    assert abs(rules_table.fisher(8, 8, 0, 8) - 2 / 12870) < 1e-15


def test_a_small_p_keeps_its_digits():
    assert rules_table.p_text(0.5) == "0.500"
    assert rules_table.p_text(3.4e-5) == "3.4e-05"
    assert rules_table.p_text(0.00019, 4) == "0.0002"


def test_rank_sum_is_exact():
    # 3 against 3, fully separated: 2 of the C(6, 3) = 20 orderings are as
    # extreme, p = 0.1. Interleaved (U = 3, mean 4.5): U's counts over 0..9
    # are 1 1 2 3 3 3 3 2 1 1, and U <= 3 or >= 6 takes 14 of 20.
    assert abs(rules_table.rank_sum_p([4, 5, 6], [1, 2, 3]) - 0.1) < 1e-12
    assert abs(rules_table.rank_sum_p([1, 3, 5], [2, 4, 6]) - 0.7) < 1e-12
    # 8 against 8, separated: 2 / C(16, 8).
    assert abs(rules_table.rank_sum_p(range(8, 16), range(8))
               - 2 / 12870) < 1e-15


def test_each_rule_is_counted_from_the_results_onsets(tmp_path):
    rows = [
        ("softmax", {"any_step": 40, "logged_step": 60, "logged_3": 100,
                     "final_eval": 1000}, 20.0, 1e6),
        ("softmax", {"any_step": 33, "logged_step": None, "logged_3": None,
                     "final_eval": None}, 5.0, 3.0),
        ("log", {"any_step": None, "logged_step": None, "logged_3": None,
                 "final_eval": None}, 2.0, 1.5),
    ]
    csv = tmp_path / "R.csv"
    with open(csv, "w") as f:
        f.write("params_operator,params_kernel,collapse_onsets,ratio_median,"
                "hill_stat\n")
        for kernel, onsets, ratio, hill in rows:
            text = json.dumps(onsets).replace('"', '""')
            f.write(f'sheared_swap,{kernel},"{text}",{ratio},{hill}\n')
    out = io.StringIO()
    with redirect_stdout(out):
        rules_table.main([str(csv)])
    lines = out.getvalue().splitlines()
    softmax = next(l for l in lines if l.startswith("| sheared_swap | softmax"))
    cells = [c.strip() for c in softmax.split("|")]
    assert cells[3] == "2"                       # n
    assert cells[4].startswith("2/2")            # any_step
    assert cells[5].startswith("1/2")            # logged_step
    assert cells[6].startswith("1/2")            # logged_3
    assert cells[7].startswith("1/2")            # final_eval
    assert cells[8] == "12.5 (5-20)"             # final ratios
    pair = next(l for l in lines if "softmax vs log" in l)
    # any_step, 2/2 against 0/1: tables (2, 0) 1/3 and (1, 1) 2/3; p = 1/3.
    assert pair.split("|")[3].strip() == "0.333"


def test_pool_counts_a_kernels_runs_over_every_task(tmp_path):
    none = {"any_step": None, "logged_step": None, "logged_3": None,
            "final_eval": None}
    hit = dict(none, any_step=40, logged_step=60, logged_3=100)
    csv = tmp_path / "R.csv"
    with open(csv, "w") as f:
        f.write("params_operator,params_kernel,collapse_onsets,ratio_median,"
                "hill_stat\n")
        for op, kernel, onsets in [("sheared_swap", "softmax", hit),
                                   ("matrix_inverse", "softmax", hit),
                                   ("matrix_inverse", "softmax", none),
                                   ("sheared_swap", "log", none)]:
            text = json.dumps(onsets).replace('"', '""')
            f.write(f'{op},{kernel},"{text}",2.0,1.0\n')
    out = io.StringIO()
    with redirect_stdout(out):
        rules_table.main(["--pool", str(csv)])
    lines = out.getvalue().splitlines()
    softmax = [l for l in lines if l.startswith("| pooled | softmax |")]
    assert len(softmax) == 1
    cells = [c.strip() for c in softmax[0].split("|")]
    assert cells[3] == "3" and cells[6].startswith("2/3")   # n, logged_3
    assert any(l.startswith("| pooled | softmax vs log |") for l in lines)
    assert not any("sheared_swap" in l for l in lines)


def test_a_command_kinds_export_is_read_from_its_child_column(tmp_path):
    child = {"collapse_onsets": {"any_step": 161, "logged_step": 380,
                                 "logged_3": None, "final_eval": None},
             "ratio_median": 23.8, "spread_ratio": 0.65,
             "config": {"operator": "sheared_swap", "kernel": "softmax",
                        "seed": 0}}
    csv = tmp_path / "P.csv"
    text = json.dumps(child).replace('"', '""')
    csv.write_text(f'job_id,params_kernel,params_seed,child\na,softmax,0,"{text}"\n')
    out = io.StringIO()
    with redirect_stdout(out):
        rules_table.main(["--runs", str(csv)])
    row = out.getvalue().splitlines()[2]
    assert row.startswith("| sheared_swap | softmax | 0 | 161 | 380 | - | - |")


def test_vs_sets_the_same_cells_side_by_side(tmp_path):
    def write(name, rows):
        path = tmp_path / name
        with open(path, "w") as f:
            f.write("params_operator,params_kernel,collapse_onsets,"
                    "ratio_median,hill_stat\n")
            for onset, ratio in rows:
                o = {"any_step": onset, "logged_step": None,
                     "logged_3": None, "final_eval": None}
                text = json.dumps(o).replace('"', '""')
                f.write(f'sheared_swap,softmax,"{text}",{ratio},1\n')
        return str(path)
    a = write("a.csv", [(10, 20.0), (None, 21.0), (12, 22.0)])
    b = write("b.csv", [(None, 1.0), (None, 2.0), (None, 3.0)])
    out = io.StringIO()
    with redirect_stdout(out):
        rules_table.main(["--vs", a, b])
    row = out.getvalue().splitlines()[2]
    assert "| 2/3 vs 0/3 (p 0.40) |" in row     # any_step
    assert row.endswith("| 21 vs 2 | 0.100 |")  # separated, 3 against 3


def test_no_file_prints_its_usage():
    r = subprocess.run([sys.executable, str(Path(__file__).parent /
                                            "rules_table.py")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Collapse under each" in r.stderr
