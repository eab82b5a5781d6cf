"""reports/collapse_course.py: the course after a lasting collapse, from
hand-made results and metrics exports."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "collapse_course.py"


def test_a_lasting_collapse_and_a_recovery(tmp_path):
    none = {"any_step": None, "logged_step": None, "logged_3": None,
            "final_eval": None}
    runs = [("softmax", 3, dict(none, any_step=30, logged_step=40,
                                logged_3=40, final_eval=100), 1e-6, 28.3),
            ("softmax", 4, dict(none, any_step=50), 0.9, 3.0),
            ("log", 0, none, 1.0, 2.0)]
    results = tmp_path / "R.csv"
    with open(results, "w") as f:
        f.write("params_operator,params_kernel,params_seed,collapse_onsets,"
                "spread_ratio,ratio_median\n")
        for kernel, seed, onsets, spread, ratio in runs:
            text = json.dumps(onsets).replace('"', '""')
            f.write(f'matrix_inverse,{kernel},{seed},"{text}",{spread},'
                    f'{ratio}\n')
    metrics = tmp_path / "M.csv"
    with open(metrics, "w") as f:
        f.write("operator,kernel,seed,metric,step,value\n")
        for step, loss, spread in [(20, 0.5, 0.9), (40, 0.2, 0.01),
                                   (60, 0.8, 0.001), (80, 0.9, 0.3),
                                   (100, 1.1, 0.002)]:
            f.write(f"matrix_inverse,softmax,3,loss,{step},{loss}\n")
            f.write(f"matrix_inverse,softmax,3,spread_ratio,{step},{spread}\n")
    out = subprocess.run([sys.executable, str(SCRIPT), "--results",
                          str(results), "--metrics", str(metrics)],
                         capture_output=True, text=True, check=True).stdout
    rows = [l for l in out.splitlines() if l.startswith("| matrix_inverse")]
    # Only the run with a lasting rule's onset; 3 of the 4 logged steps from
    # step 40 on are below 0.05, the highest of them 0.3.
    assert rows == ["| matrix_inverse | softmax | 3 | 40 | 100 | 0.2 (40) | "
                    "1.1 | 3 of 4 | 0.3 | 1e-06 | 28.3 |"]
