"""Sweep control against a real coordinator and worker (issue 49): a random
search over distributions read back with typed columns, resubmitting adding
nothing; ASHA stopping runs early; a job's timeout; fail-fast holding a
broken sweep until resume; priority, pause, tags, notes and rm from the
command line."""

import json
import os
import shutil
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402
from services import BIN, Services, wait_for  # noqa: E402

pytestmark = pytest.mark.skipif(
    not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
    reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator")

FIT = os.path.join(REPO, "examples", "search", "fit.py")


def search_spec(name, extra="", sleep=0):
    return """name: %s
kind: command
command: [python3, %s, "${args}"]
env: {PYTHONPATH: %s}
stop_grace_s: 10
method: random
parameters:
  lr: {min: 1.0e-3, max: 10, log: true}
  batch: {min: 4, max: 64, int: true, log: true}
  l2: {min: 1.0e-6, max: 1.0e-1, log: true}
run_cap: 16
grid: {seed: [0, 1]}
fixed: {steps: 60, log_every: 10, checkpoint_every: 30, sleep: %s}
%s""" % (name, FIT, os.path.join(REPO, "python"), sleep, extra)


@pytest.fixture
def services():
    root = tempfile.mkdtemp(prefix="tailsweep_control_")
    s = Services(root)
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)


def done(s, sweep):
    r = s.cli("status", sweep, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_random_search_runs_and_reads_back_typed(services):
    s = services
    path = os.path.join(s.root, "random.yaml")
    with open(path, "w") as f:
        f.write(search_spec("random-search"))
    dry = s.cli("submit", path, "--dry-run", "--print-commands")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("--lr=") == 16, dry.stdout
    first = s.cli("submit", path)
    assert first.returncode == 0, first.stderr
    s.worker()
    wait_for(lambda: done(s, "random-search")["done"] == 16, "16 runs done")
    again = s.cli("submit", path)
    assert again.returncode == 0, again.stderr
    assert "0 jobs added, 16 already there" in again.stdout, again.stdout
    client = tailsweep.Client(s.http, token=s.token)
    frame = client.sweep("random-search").results()
    assert len(frame) == 16
    assert frame["params_lr"].dtype.kind == "f", frame.dtypes
    assert frame["params_batch"].dtype.kind in "iu", frame.dtypes
    assert frame["params_lr"].between(1e-3, 10).all()
    samples = frame.groupby(["params_lr", "params_batch", "params_l2"]).size()
    assert len(samples) == 8 and samples.eq(2).all(), samples
    status = done(s, "random-search")
    assert status["cpu_hours"] > 0, status
    # Each job's device time, online and from the database file.
    online = list(client.sweep("random-search").jobs())
    offline = list(tailsweep.Client.open(s.db).sweep("random-search").jobs())
    assert all(j.cpu_hours > 0 and j.gpu_hours == 0 for j in online)
    assert [j.cpu_hours for j in offline] == [j.cpu_hours for j in online]


def test_asha_stops_runs_early_and_counts_the_steps(services):
    s = services
    s.submit("asha", search_spec(
        "asha-search",
        "stop: {rule: asha, metric: val_loss, goal: minimize, "
        "min_steps: 10, reduction: 3}\n", sleep=0.03))
    s.worker()
    wait_for(lambda: done(s, "asha-search")["done"] == 16, "16 runs done")
    status = done(s, "asha-search")
    assert status["runs_stopped_early"] > 0, status
    assert status["steps_saved"] > 0, status
    client = tailsweep.Client(s.http, token=s.token)
    jobs = client.sweep("asha-search").jobs()
    early = [j for j in jobs if (j.result or {}).get("early_stop")]
    assert early and all(j.result["early_stop"].startswith("asha: val_loss")
                         for j in early), [j.result for j in jobs]


def test_a_timeout_fails_the_attempt_and_fail_fast_holds_the_sweep(services):
    s = services
    s.submit("slow", """name: slow
kind: command
command: [sleep, "${seconds}"]
timeout_s: 1
max_failures: 2
grid: {seconds: [30, 31, 32, 33, 34, 35]}
""")
    s.start("tailsweep-worker", "--devices", "cpu", "--slots-per-device", "2",
            "--threads-per-slot", "1", "--work-dir",
            os.path.join(s.root, "work"))

    def held():
        st = done(s, "slow")
        return st["held"] != ""
    wait_for(held, "the sweep held after 2 failed attempts")
    status = done(s, "slow")
    assert "max_failures: 2" in status["held"], status
    text = s.cli("status", "slow").stdout
    assert "held after" in text and "tailsweep resume slow" in text, text
    jobs = s.cli("jobs", "slow", "--format", "json")
    assert "timed out after 1 s" in jobs.stdout, jobs.stdout
    # Held: nothing more is leased, even once the retries' backoff is over.
    assert status["queued"] >= 4, status
    r = s.cli("resume", "slow")
    assert r.returncode == 0, r.stderr
    assert done(s, "slow")["held"] == ""
    s.cli("cancel", "slow")


def test_priority_pause_tags_notes_and_rm_from_the_command_line(services):
    s = services
    s.submit("ctl", """name: ctl
kind: command
command: [true]
grid: {x: [1, 2, 3]}
tags: {team: vision}
""")
    assert s.cli("priority", "ctl", "7").returncode == 0
    assert s.cli("priority", "ctl", "5000").returncode == 2
    assert s.cli("pause", "ctl").returncode == 0
    assert s.cli("tag", "ctl", "owner=ada", "team=").returncode == 0
    assert s.cli("note", "ctl", "baseline for the lr study").returncode == 0
    st = done(s, "ctl")
    assert st["priority"] == 7 and st["paused"] is True, st
    assert st["tags"] == {"owner": "ada"}, st
    assert st["notes"] == "baseline for the lr study"
    listing = s.cli("status").stdout
    assert "paused" in listing, listing
    dry = s.cli("rm", "ctl", "--dry-run")
    assert dry.returncode == 0 and "would remove 3 jobs" in dry.stdout, dry
    assert done(s, "ctl")["queued"] == 3
    rm = s.cli("rm", "ctl")
    assert rm.returncode == 0 and "removed 3 jobs" in rm.stdout, rm
    gone = s.cli("status", "ctl")
    assert gone.returncode == 2 and "no sweep" in gone.stderr, gone.stderr
