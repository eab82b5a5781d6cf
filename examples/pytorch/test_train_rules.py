"""train.py's collapse rules, from their definitions in docs/science.md,
against the cases the C++ core's tests/core/schema/collapse_curves_test.cc
pins down, and a short real run's result."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402


def test_a_dip_between_logged_steps_counts_only_for_any_step():
    logged = [(20, 0.9), (40, 0.8), (60, 0.7)]
    o = train.collapse_onsets(33, logged, 0.05, 60, 0.5)
    assert o == {"any_step": 33, "logged_step": None, "logged_3": None,
                 "final_eval": None}


def test_two_logged_steps_below_are_not_three_in_a_row():
    # The recorded probe: below at 480 and 500, then back up.
    logged = [(460, 0.3), (480, 0.007), (500, 0.015), (520, 0.4),
              (540, 0.02), (560, 0.5)]
    o = train.collapse_onsets(470, logged, 0.05, 1000, 0.6)
    assert o["logged_step"] == 480 and o["logged_3"] is None


def test_three_in_a_row_start_at_the_first_and_nan_is_below():
    logged = [(20, 0.5), (40, 0.01), (60, 0.6), (80, float("nan")),
              (100, 0.02), (120, 0.03), (140, 0.9)]
    o = train.collapse_onsets(35, logged, 0.05, 140, float("nan"))
    assert o == {"any_step": 35, "logged_step": 40, "logged_3": 80,
                 "final_eval": 140}


def test_a_short_run_writes_every_rule_and_the_chosen_one(tmp_path):
    result = tmp_path / "result.json"
    env = dict(os.environ, TAILSWEEP_RESULT_FILE=str(result),
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    r = subprocess.run(
        [sys.executable, os.path.join(HERE, "train.py"), "--steps=4",
         "--n_points=32", "--layers=1", "--d_model=16", "--heads=2",
         "--log_every=2", "--checkpoint_every=100", "--eval_instances=2",
         "--reference_trials=2", "--collapse_rule=any_step"],
        env=env, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(result.read_text())
    assert set(out["collapse_onsets"]) == set(train.RULES)
    assert out["collapse_rule"] == "any_step"
    assert out["collapsed"] == (out["collapse_onsets"]["any_step"] is not None)


def test_an_unknown_rule_is_refused_naming_the_allowed_ones(tmp_path):
    r = subprocess.run(
        [sys.executable, os.path.join(HERE, "train.py"),
         "--collapse_rule=sometimes"],
        env=dict(os.environ,
                 PYTHONPATH=os.path.join(HERE, "..", "..", "python")),
        capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2
    assert "allowed: any_step, logged_step, logged_3, final_eval" in r.stderr
