"""`python3 -m tailsweep.optimize` runs an Optuna study (the search space
from the spec's `parameters:`, examples/optuna/study.yaml) against a real
coordinator and worker: each trial runs exactly one job set, the pruner
cancels jobs, and a driver killed midway re-attaches to its running trials
when started again: no trial lost or run twice."""

import os
import signal
import subprocess
import sys
import tempfile
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402
from services import BIN, Services, wait_for  # noqa: E402

optuna = pytest.importorskip("optuna")
pytest.importorskip("yaml")
pytestmark = pytest.mark.skipif(
    not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
    reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator")

SPEC = os.path.join(REPO, "examples", "optuna", "study.yaml")


def test_a_study_runs_each_trial_once_prunes_and_reattaches():
    root = tempfile.mkdtemp(prefix="tailsweep_optuna_")
    s = Services(root)
    try:
        env = dict(s.env, TAILSWEEP_URL=s.http, PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.path.join(REPO, "python"))
        storage = "sqlite:///" + os.path.join(root, "study.db")
        command = [sys.executable, "-m", "tailsweep.optimize", SPEC,
                   "--trials", "8", "--parallel", "2", "--poll", "0.2",
                   "--storage", storage, "--seed", "0"]
        # The first driver, no worker yet: killed once its first two
        # trials have jobs.
        log = open(os.path.join(root, "drive1.log"), "w+")
        first = subprocess.Popen(command, env=env, stdout=log,
                                 stderr=subprocess.STDOUT, cwd=root)

        def lines():
            with open(log.name) as f:
                return f.read()
        wait_for(lambda: lines().count("-> job") >= 2 or
                 first.poll() is not None, "two trials' jobs")
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert lines().count("-> job") >= 2, lines()
        s.start("tailsweep-worker", "--devices", "cpu", "--slots-per-device",
                "2", "--threads-per-slot", "1", "--work-dir",
                os.path.join(root, "work"))
        # The second: re-attaches, finishes the study.
        second = subprocess.run(command, env=env, capture_output=True,
                                text=True, cwd=root, timeout=600)
        assert second.returncode == 0, second.stdout + second.stderr
        out = second.stdout
        assert "best: trial" in out, out
        # The first driver's trials are the second's first ones, again.
        assert "trial 0 -> job" in out and "trial 1 -> job" in out, out

        study = optuna.load_study(study_name="optuna-example",
                                  storage=storage)
        trials = study.get_trials()
        assert len(trials) == 8
        states = [t.state for t in trials]
        assert all(st.is_finished() for st in states), states
        assert optuna.trial.TrialState.FAIL not in states, out
        assert optuna.trial.TrialState.PRUNED in states, out

        client = tailsweep.Client(s.http, token=s.token)
        jobs = list(client.sweep("optuna-example").jobs())
        # Exactly one job a trial (grid: {}), the re-attached ones included.
        assert len(jobs) == 8
        by_trial = {j.params["trial"]: j for j in jobs}
        assert sorted(by_trial) == list(range(8))
        for t in trials:
            job = by_trial[t.number]
            assert t.user_attrs["tailsweep_jobs"] == [job.id]
            assert job.params["lr"] == pytest.approx(t.params["lr"])
            assert job.params["width"] == t.params["width"]
            if t.state == optuna.trial.TrialState.COMPLETE:
                assert job.state == "done"
                assert t.value == pytest.approx(
                    job.result["summary"]["loss"]["last"])
            else:  # pruned: its job cancelled, or finished first
                assert job.state in ("cancelled", "done")
                assert "trial %d pruned at step" % t.number in out, out
        # The curves Optuna saw are the stored ones.
        done = [t for t in trials
                if t.state == optuna.trial.TrialState.COMPLETE][0]
        points = by_trial[done.number].history(names="loss")
        assert {p["step"]: p["value"] for p in points} == \
            pytest.approx(done.intermediate_values)
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)
