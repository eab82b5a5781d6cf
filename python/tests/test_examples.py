"""The examples follow the child contract: stopped by SIGTERM they checkpoint
and exit 3, and a resumed attempt logs every step exactly once.

examples/shell needs sh and awk; examples/pytorch needs torch (skipped
without it) and runs at a toy size here.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def job_env(root, params):
    os.makedirs(os.path.join(root, "checkpoints"), exist_ok=True)
    with open(os.path.join(root, "params.json"), "w") as f:
        json.dump(params, f)
    env = dict(os.environ)
    env.update({
        "TAILSWEEP_JOB_ID": "cd" * 32, "TAILSWEEP_ATTEMPT": "1",
        "TAILSWEEP_JOB_DIR": root,
        "TAILSWEEP_PARAMS_FILE": os.path.join(root, "params.json"),
        "TAILSWEEP_METRICS_FILE": os.path.join(root, "metrics.jsonl"),
        "TAILSWEEP_CHECKPOINT_DIR": os.path.join(root, "checkpoints"),
        "TAILSWEEP_RESULT_FILE": os.path.join(root, "result.json"),
        "TAILSWEEP_RESUME_STEP": "0", "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.path.join(REPO, "python"),
    })
    return env


def metrics(env):
    with open(env["TAILSWEEP_METRICS_FILE"]) as f:
        return [json.loads(line) for line in f]


def stop_then_resume(argv, env, lines_before_stop, timeout=120):
    """Runs argv as a worker would, SIGTERMs its group after some lines,
    then resumes it from its newest complete checkpoint. Returns the stop
    step."""
    proc = subprocess.Popen(argv, env=env, cwd=env["TAILSWEEP_JOB_DIR"],
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if os.path.exists(env["TAILSWEEP_METRICS_FILE"]) and \
                len(metrics(env)) >= lines_before_stop:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGTERM)  # the worker signals the group
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 3, err.decode()
    assert not os.path.exists(env["TAILSWEEP_RESULT_FILE"])
    steps = [int(n[5:]) for n in os.listdir(env["TAILSWEEP_CHECKPOINT_DIR"])
             if n.startswith("step-") and n[5:].isdigit() and os.path.isfile(
                 os.path.join(env["TAILSWEEP_CHECKPOINT_DIR"], n, "COMPLETE"))]
    stopped = max(steps)
    # What the worker does before a resumed attempt: keep lines <= the step.
    kept = [m for m in metrics(env) if m["step"] <= stopped]
    with open(env["TAILSWEEP_METRICS_FILE"], "w") as f:
        f.writelines(json.dumps(m) + "\n" for m in kept)
    env = dict(env, TAILSWEEP_RESUME_STEP=str(stopped), TAILSWEEP_ATTEMPT="2")
    done = subprocess.run(argv, env=env, cwd=env["TAILSWEEP_JOB_DIR"],
                          stderr=subprocess.PIPE, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode()
    return stopped


@pytest.mark.skipif(shutil.which("awk") is None, reason="needs awk")
def test_shell_example_stops_and_resumes(tmp_path):
    params = {"lr": 0.1, "seed": 3, "steps": 30, "checkpoint_every": 10,
              "noise": True, "sleep": 0.02}
    env = job_env(str(tmp_path / "a"), params)
    argv = ["sh", os.path.join(REPO, "examples", "shell", "train.sh")]
    stopped = stop_then_resume(argv, env, lines_before_stop=5)
    assert 5 <= stopped < 30
    resumed = metrics(env)
    assert [m["step"] for m in resumed] == list(range(1, 31))
    # Bit for bit what an uninterrupted run logs.
    straight = job_env(str(tmp_path / "b"), params)
    subprocess.run(argv, env=straight, check=True, timeout=60)
    assert metrics(straight) == resumed
    with open(env["TAILSWEEP_RESULT_FILE"]) as f:
        assert json.load(f)["steps"] == 30


def test_shell_example_takes_args_flags(tmp_path):
    env = job_env(str(tmp_path), {})
    subprocess.run(["sh", os.path.join(REPO, "examples", "shell", "train.sh"),
                    "--lr=0.5", "--steps=3", "--sleep=0", "--noise",
                    "--checkpoint_every=2"], env=env, check=True, timeout=60)
    lines = metrics(env)
    assert [m["step"] for m in lines] == [1, 2, 3]
    assert lines[0]["w"] == 0.5 and lines[0]["lr"] == 0.5
    assert sorted(os.listdir(env["TAILSWEEP_CHECKPOINT_DIR"])) == [
        "step-2", "step-3"]


def test_pytorch_example_stops_and_resumes_exactly(tmp_path):
    pytest.importorskip("torch")
    params = {"kernel": "log", "steps": 80, "n_points": 32, "layers": 2,
              "d_model": 16, "heads": 2, "warmup": 3, "log_every": 1,
              "checkpoint_every": 1000, "eval_instances": 2,
              "reference_trials": 2}
    argv = [sys.executable, os.path.join(REPO, "examples", "pytorch", "train.py")]
    env = job_env(str(tmp_path / "a"), params)
    stopped = stop_then_resume(argv, env, lines_before_stop=3)
    assert stopped < 80
    straight = job_env(str(tmp_path / "b"), params)
    subprocess.run(argv, env=straight, check=True, timeout=120)
    drop = lambda ms: [{k: v for k, v in m.items() if k != "step_seconds"}  # noqa: E731
                       for m in ms]
    assert drop(metrics(env)) == drop(metrics(straight))
    assert [m["step"] for m in metrics(env)] == list(range(1, 81)) + [80]
    with open(env["TAILSWEEP_RESULT_FILE"]) as f:
        result = json.load(f)
    assert result["resumed_from_step"] == stopped
    assert result["steps_done"] == 80 and "ratio_median" in result
