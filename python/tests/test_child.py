"""Tests of tailsweep.child against the child contract (docs/child-contract.md).

Standard library and pytest only. Run: python3 -m pytest -q python/tests
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PYTHON_DIR)

from tailsweep import child  # noqa: E402

VARIABLES = [
    "TAILSWEEP_JOB_ID", "TAILSWEEP_ATTEMPT", "TAILSWEEP_JOB_DIR",
    "TAILSWEEP_PARAMS_FILE", "TAILSWEEP_METRICS_FILE",
    "TAILSWEEP_CHECKPOINT_DIR", "TAILSWEEP_RESULT_FILE",
    "TAILSWEEP_RESUME_STEP", "TAILSWEEP_STOP_GRACE_S", "TAILSWEEP_LEASE_FILE",
    "TAILSWEEP_LAB_BIN", "RANK", "LOCAL_RANK", "OMP_NUM_THREADS",
]


def job_env(root):
    """The variables a worker sets, pointing into `root` (a job directory)."""
    root = str(root)
    return {
        "TAILSWEEP_JOB_ID": "ab" * 32,
        "TAILSWEEP_ATTEMPT": "2",
        "TAILSWEEP_JOB_DIR": root,
        "TAILSWEEP_PARAMS_FILE": os.path.join(root, "params.json"),
        "TAILSWEEP_METRICS_FILE": os.path.join(root, "metrics.jsonl"),
        "TAILSWEEP_CHECKPOINT_DIR": os.path.join(root, "checkpoints"),
        "TAILSWEEP_RESULT_FILE": os.path.join(root, "result.json"),
        "TAILSWEEP_RESUME_STEP": "0",
        "TAILSWEEP_STOP_GRACE_S": "7",
        "TAILSWEEP_LEASE_FILE": os.path.join(root, "lease"),
        "OMP_NUM_THREADS": "3",
    }


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No tailsweep variables; the working directory a temp dir."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(child._stop, "requested", False)
    return tmp_path


@pytest.fixture
def job(clean_env, monkeypatch):
    """A job directory with every variable set, as a worker would."""
    env = job_env(clean_env / "job")
    (clean_env / "job").mkdir()
    os.mkdir(env["TAILSWEEP_CHECKPOINT_DIR"])
    with open(env["TAILSWEEP_PARAMS_FILE"], "w") as f:
        json.dump({"lr": 0.01, "seed": 1, "use_bias": True,
                   "widths": [64, 128], "name": "x"}, f)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def complete(path):
    return os.path.isfile(os.path.join(path, "COMPLETE"))


# Parameters and identity.

def test_params_typed_from_file_over_defaults(job):
    got = child.params({"lr": 1.0, "steps": 200})
    assert got == {"lr": 0.01, "seed": 1, "use_bias": True,
                   "widths": [64, 128], "name": "x", "steps": 200}
    assert child.params() == {"lr": 0.01, "seed": 1, "use_bias": True,
                              "widths": [64, 128], "name": "x"}


def test_params_outside_tailsweep_are_the_defaults(clean_env):
    assert child.params() == {}
    defaults = {"lr": 1e-3}
    got = child.params(defaults)
    assert got == {"lr": 1e-3}
    got["lr"] = 5
    assert defaults == {"lr": 1e-3}  # a copy


def test_params_not_an_object_is_an_error(job):
    with open(job["TAILSWEEP_PARAMS_FILE"], "w") as f:
        f.write("[1, 2]")
    with pytest.raises(ValueError):
        child.params()


def test_identity_variables(job):
    assert child.in_tailsweep()
    assert child.job_id() == "ab" * 32
    assert child.attempt() == 2
    assert child.job_dir() == job["TAILSWEEP_JOB_DIR"]
    assert child.checkpoint_dir() == job["TAILSWEEP_CHECKPOINT_DIR"]
    assert child.resume_step() == 0
    assert child.stop_grace_s() == 7.0
    assert child.num_threads() == 3
    assert child.is_main_process()


def test_identity_outside_tailsweep(clean_env):
    assert not child.in_tailsweep()
    assert child.job_id() is None
    assert child.attempt() == 1
    assert child.job_dir() == str(clean_env)
    assert child.checkpoint_dir() == os.path.join(str(clean_env), "checkpoints")
    assert child.resume_step() == 0
    assert child.stop_grace_s() == 30.0
    assert child.num_threads() == 1
    assert child.num_threads(default=4) == 4


def test_main_process_follows_rank_then_local_rank(clean_env, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert not child.is_main_process()
    monkeypatch.setenv("RANK", "0")
    assert child.is_main_process()  # RANK wins
    monkeypatch.setenv("RANK", "2")
    assert not child.is_main_process()


# Metrics lines.

def test_log_appends_whole_json_lines(job):
    child.log(1, {"loss": 0.5})
    child.log(2, loss=0.25, acc=[0.1, 0.2], eval={"ratio": 1.5})
    child.log(3, {"loss": float("nan"), "a": float("inf"),
                  "b": float("-inf"), "c": "nan", "n": 7, "ok": True})
    with open(job["TAILSWEEP_METRICS_FILE"], "rb") as f:
        raw = f.read()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 3
    lines = read_lines(job["TAILSWEEP_METRICS_FILE"])
    assert lines[0] == {"step": 1, "loss": 0.5}
    assert lines[1] == {"step": 2, "loss": 0.25, "acc": [0.1, 0.2],
                        "eval": {"ratio": 1.5}}
    assert lines[2] == {"step": 3, "loss": "nan", "a": "inf", "b": "-inf",
                        "c": "nan", "n": 7, "ok": 1}
    assert b"NaN" not in raw and b"Infinity" not in raw  # strict JSON


def test_log_returns_the_line(job):
    assert child.log(5, x=1.5) == '{"step":5,"x":1.5}'


def test_log_accepts_float_convertible_values(job):
    class Scalar:  # a numpy scalar or a 0-d tensor, as far as log cares
        def __float__(self):
            return 2.5
    child.log(1, v=Scalar(), w=[Scalar()])
    assert read_lines(job["TAILSWEEP_METRICS_FILE"]) == [
        {"step": 1, "v": 2.5, "w": [2.5]}]


@pytest.mark.parametrize("step", [0, -1, 1.0, "1", True, None])
def test_log_rejects_a_bad_step(job, step):
    with pytest.raises((TypeError, ValueError)):
        child.log(step, loss=1.0)
    assert not os.path.exists(job["TAILSWEEP_METRICS_FILE"])


@pytest.mark.parametrize("metrics", [
    {"loss": "low"}, {"loss": None}, {"loss": [1, "x"]}, {"loss": [[1]]},
    {"loss": {"a": {"b": 1}}}, {"step": 3}, {"": 1}, {"loss": object()},
])
def test_log_rejects_what_the_worker_would_skip(job, metrics):
    with pytest.raises((TypeError, ValueError)):
        child.log(1, metrics)
    assert not os.path.exists(job["TAILSWEEP_METRICS_FILE"])


def test_log_rejects_a_line_over_one_mib(job):
    # 9000 values, each name 120 bytes: under the count, over 1 MiB.
    wide = {"%0118d" % i: 1.0 / 3 for i in range(9000)}
    with pytest.raises(ValueError, match="limit"):
        child.log(1, w=wide)
    assert not os.path.exists(job["TAILSWEEP_METRICS_FILE"])


def test_log_rejects_too_many_values_and_long_names(job):
    with pytest.raises(ValueError):
        child.log(1, big=[1.0] * (child.MAX_POINTS_PER_LINE + 1))
    with pytest.raises(ValueError):
        child.log(1, {"n" * 129: 1.0})
    with pytest.raises(ValueError):
        child.log(1, {"n" * 100: {"k" * 28: 1.0}})  # n.../k...: 129 bytes
    child.log(1, {"n" * 128: 1.0}, big=[1.0] * (child.MAX_POINTS_PER_LINE - 1))
    assert len(read_lines(job["TAILSWEEP_METRICS_FILE"])) == 1


def test_log_outside_tailsweep_goes_to_stderr(clean_env, capsys):
    child.log(4, loss=0.125)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert json.loads(captured.err) == {"step": 4, "loss": 0.125}


def test_log_on_a_secondary_rank_writes_nothing(job, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    assert child.log(1, loss=1.0) is None
    assert not os.path.exists(job["TAILSWEEP_METRICS_FILE"])


# Checkpoints.

def test_save_checkpoint_makes_a_complete_step_dir(job):
    with child.save_checkpoint(20) as d:
        assert os.path.basename(d) == "step-20.tmp-%d" % os.getpid()
        assert child.latest_checkpoint() is None  # not visible yet
        with open(os.path.join(d, "state.txt"), "w") as f:
            f.write("hello")
    path = os.path.join(job["TAILSWEEP_CHECKPOINT_DIR"], "step-20")
    assert child.latest_checkpoint() == path
    assert complete(path)
    with open(os.path.join(path, "state.txt")) as f:
        assert f.read() == "hello"
    assert os.listdir(job["TAILSWEEP_CHECKPOINT_DIR"]) == ["step-20"]
    assert child.checkpoint_step(path) == 20


def test_save_checkpoint_on_exception_leaves_nothing_complete(job):
    with pytest.raises(RuntimeError):
        with child.save_checkpoint(30) as d:
            with open(os.path.join(d, "half"), "w") as f:
                f.write("x")
            raise RuntimeError("disk full")
    assert child.latest_checkpoint() is None
    assert os.listdir(job["TAILSWEEP_CHECKPOINT_DIR"]) == []


def test_save_checkpoint_keeps_an_existing_complete_step(job):
    with child.save_checkpoint(10) as d:
        open(os.path.join(d, "first"), "w").close()
    with child.save_checkpoint(10) as d:
        open(os.path.join(d, "second"), "w").close()
    path = child.latest_checkpoint()
    assert sorted(os.listdir(path)) == ["COMPLETE", "first"]
    assert os.listdir(job["TAILSWEEP_CHECKPOINT_DIR"]) == ["step-10"]


def test_save_checkpoint_replaces_an_incomplete_step(job):
    stale = os.path.join(job["TAILSWEEP_CHECKPOINT_DIR"], "step-10")
    os.mkdir(stale)
    open(os.path.join(stale, "partial"), "w").close()
    with child.save_checkpoint(10) as d:
        open(os.path.join(d, "whole"), "w").close()
    assert sorted(os.listdir(stale)) == ["COMPLETE", "whole"]


def test_latest_checkpoint_ignores_incomplete_and_foreign_names(job):
    root = job["TAILSWEEP_CHECKPOINT_DIR"]
    for name, done in [("step-9", True), ("step-0100", True),
                       ("step-200", False), ("step-300.tmp-12", True),
                       ("step-x", True), ("other", True)]:
        os.mkdir(os.path.join(root, name))
        if done:
            open(os.path.join(root, name, "COMPLETE"), "w").close()
    assert child.latest_checkpoint() == os.path.join(root, "step-0100")
    assert child.checkpoint_step(child.latest_checkpoint()) == 100
    assert child.checkpoint_step(os.path.join(root, "step-300.tmp-12")) is None


def test_latest_checkpoint_without_a_directory(clean_env):
    assert child.latest_checkpoint() is None
    assert child.resume_checkpoint() is None


def test_resume_checkpoint_is_the_restored_step(job, monkeypatch):
    assert child.resume_checkpoint() is None  # RESUME_STEP=0: fresh
    for step in (40, 60):
        with child.save_checkpoint(step):
            pass
    monkeypatch.setenv("TAILSWEEP_RESUME_STEP", "40")
    assert child.resume_step() == 40
    assert child.resume_checkpoint() == os.path.join(
        job["TAILSWEEP_CHECKPOINT_DIR"], "step-40")
    monkeypatch.setenv("TAILSWEEP_RESUME_STEP", "50")
    with pytest.raises(FileNotFoundError):
        child.resume_checkpoint()


def test_resume_checkpoint_by_hand_is_the_latest(clean_env):
    with child.save_checkpoint(3):
        pass
    with child.save_checkpoint(5):
        pass
    assert child.resume_checkpoint() == os.path.join(
        str(clean_env), "checkpoints", "step-5")


def test_save_checkpoint_on_a_secondary_rank_is_scratch(job, monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "1")
    with child.save_checkpoint(5) as d:
        open(os.path.join(d, "x"), "w").close()
        scratch = d
    assert not os.path.exists(scratch)
    assert os.listdir(job["TAILSWEEP_CHECKPOINT_DIR"]) == []


def test_save_checkpoint_rejects_a_bad_step(job):
    with pytest.raises(TypeError):
        with child.save_checkpoint("5"):
            pass
    for step in (0, -1):
        with pytest.raises(ValueError):
            with child.save_checkpoint(step):
                pass


# Result.

def test_write_result_is_atomic_json(job):
    path = child.write_result({"ratio": 1.25, "bad": float("nan"),
                               "list": [float("inf"), 1]})
    assert path == job["TAILSWEEP_RESULT_FILE"]
    with open(path) as f:
        assert json.load(f) == {"ratio": 1.25, "bad": "nan",
                                "list": ["inf", 1]}
    assert os.listdir(job["TAILSWEEP_JOB_DIR"]).count("result.json") == 1
    assert not [n for n in os.listdir(job["TAILSWEEP_JOB_DIR"]) if ".tmp-" in n]


def test_write_result_outside_tailsweep_does_nothing(clean_env):
    assert child.write_result({"a": 1}) is None
    assert os.listdir(str(clean_env)) == []


def test_write_result_needs_an_object(job):
    with pytest.raises(TypeError):
        child.write_result([1, 2])
    with pytest.raises(TypeError):
        child.write_result({"a": object()})
    assert not os.path.exists(job["TAILSWEEP_RESULT_FILE"])


# Signals and exit codes.

def test_handle_sigterm_sets_the_flag(clean_env):
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    try:
        child.handle_sigterm()
        assert not child.stop_requested()
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.01)  # Python runs handlers between bytecodes
        assert child.stop_requested()
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)


def test_lease_expired_reads_the_monotonic_deadline(job, monkeypatch):
    monkeypatch.setitem(child._lease, "next_read", 0.0)
    lease = job["TAILSWEEP_LEASE_FILE"]
    assert not child.lease_expired()  # no file yet
    with open(lease, "w") as f:
        f.write("%d\n" % (time.monotonic() * 1000 + 60000))
    monkeypatch.setitem(child._lease, "next_read", 0.0)
    assert not child.lease_expired()
    with open(lease, "w") as f:
        f.write("%d\n" % (time.monotonic() * 1000 - 1))
    assert not child.lease_expired()  # read at most every 100 ms
    monkeypatch.setitem(child._lease, "next_read", 0.0)
    assert child.lease_expired()


def test_lease_expired_outside_tailsweep(clean_env):
    assert not child.lease_expired()


def test_exit_preempted_exits_3(clean_env):
    assert child.EXIT_PREEMPTED == 3
    with pytest.raises(SystemExit) as exited:
        child.exit_preempted()
    assert exited.value.code == 3


# A whole child: SIGTERM mid-run, checkpoint, exit 3, then a resumed attempt.

CHILD = textwrap.dedent("""
    import json, os, sys, time
    from tailsweep import child

    p = child.params({"steps": 1000})
    child.handle_sigterm()
    step, state = 0, {"total": 0}
    ckpt = child.resume_checkpoint()
    if ckpt:
        with open(os.path.join(ckpt, "state.json")) as f:
            state = json.load(f)
        step = child.checkpoint_step(ckpt)
        assert step == child.resume_step()
    print("ready", step, flush=True)
    while step < p["steps"]:
        step += 1
        state["total"] += step
        child.log(step, loss=1.0 / step)
        if child.stop_requested():
            with child.save_checkpoint(step) as d:
                with open(os.path.join(d, "state.json"), "w") as f:
                    json.dump(state, f)
            child.exit_preempted()
        time.sleep(0.002)
    child.write_result({"total": state["total"], "steps": step})
""")


def run_child(env, script, timeout=30, term_after_lines=None):
    full = dict(os.environ)
    full.update(env)
    full["PYTHONPATH"] = PYTHON_DIR
    proc = subprocess.Popen([sys.executable, "-c", script], env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().startswith("ready")
    if term_after_lines is not None:
        deadline = time.time() + timeout
        metrics = env["TAILSWEEP_METRICS_FILE"]
        while time.time() < deadline:
            if os.path.exists(metrics):
                with open(metrics) as f:
                    if sum(1 for _ in f) >= term_after_lines:
                        break
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def test_child_stops_on_sigterm_checkpoints_and_resumes(tmp_path):
    env = job_env(tmp_path)
    os.mkdir(env["TAILSWEEP_CHECKPOINT_DIR"])
    with open(env["TAILSWEEP_PARAMS_FILE"], "w") as f:
        json.dump({"steps": 400}, f)

    rc, err = run_child(env, CHILD, term_after_lines=20)
    assert rc == child.EXIT_PREEMPTED, err
    assert not os.path.exists(env["TAILSWEEP_RESULT_FILE"])
    names = os.listdir(env["TAILSWEEP_CHECKPOINT_DIR"])
    assert len(names) == 1 and names[0].startswith("step-"), names
    stopped = int(names[0][len("step-"):])
    assert stopped >= 20
    ckpt = os.path.join(env["TAILSWEEP_CHECKPOINT_DIR"], names[0])
    assert complete(ckpt)
    steps = [line["step"] for line in read_lines(env["TAILSWEEP_METRICS_FILE"])]
    assert steps == list(range(1, stopped + 1))

    # The worker restores the checkpoint and says its step.
    env["TAILSWEEP_RESUME_STEP"] = str(stopped)
    env["TAILSWEEP_ATTEMPT"] = "2"
    rc, err = run_child(env, CHILD)
    assert rc == 0, err
    steps = [line["step"] for line in read_lines(env["TAILSWEEP_METRICS_FILE"])]
    assert steps == list(range(1, 401))  # each step exactly once
    with open(env["TAILSWEEP_RESULT_FILE"]) as f:
        assert json.load(f) == {"total": sum(range(1, 401)), "steps": 400}


def test_child_killed_mid_save_leaves_no_complete_checkpoint(tmp_path,
                                                            monkeypatch):
    env = job_env(tmp_path)
    script = textwrap.dedent("""
        import os, time
        from tailsweep import child
        with child.save_checkpoint(7) as d:
            open(os.path.join(d, "part"), "w").close()
            print("ready", flush=True)
            time.sleep(60)
    """)
    full = dict(os.environ, PYTHONPATH=PYTHON_DIR, **env)
    proc = subprocess.Popen([sys.executable, "-c", script], env=full,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready")
    proc.kill()  # SIGKILL after the grace period: no cleanup runs
    proc.wait(timeout=10)
    proc.stdout.close()
    names = os.listdir(env["TAILSWEEP_CHECKPOINT_DIR"])
    assert names == ["step-7.tmp-%d" % proc.pid]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert child.latest_checkpoint() is None
