"""tailsweep.Client against a real coordinator and worker (the executables
in $TAILSWEEP_BIN_DIR): its frames equal `tailsweep export`'s, its status
the CLI's, a live database reads while a worker writes, and bad input
raises the exception that names it.
"""

import dataclasses
import json
import math
import os
import shutil
import signal
import socket
import tempfile
import time

import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402
from services import BIN, Services, wait_for  # noqa: E402,F401

pytestmark = pytest.mark.skipif(
    not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
    reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator")

TINY = """name: tiny
grid: {kernel: [softmax, log], seed: [0, 1]}
fixed: {steps: 20, n_points: 64, layers: 1, d_model: 16, heads: 2,
        eval_instances: 2, reference_trials: 2, warmup: 2, log_every: 5}
"""
# A child that logs "nan" too, and a slow one for the live read.
STEPS = """name: steps
kind: command
command: [sh, -c, 'i=1; while [ $i -le 30 ]; do v=$i; [ $i -eq 7 ] && v="\\"nan\\""; echo "{\\"step\\": $i, \\"loss\\": $v, \\"acc\\": 0.5}" >> "$TAILSWEEP_METRICS_FILE"; sleep $0; i=$((i+1)); done', "${pause}"]
grid: {pause: [0, 0.05], variant: [a, b]}
"""


@pytest.fixture(scope="module")
def services():
    root = tempfile.mkdtemp(prefix="tailsweep_client_")
    s = Services(root)
    s.submit("tiny", TINY)
    s.submit("steps", STEPS)
    client = tailsweep.Client.open(s.db)
    live = s.worker()
    # Read while the worker writes: every read succeeds and sees a
    # consistent prefix of the sweep.
    reads = 0
    while live.poll() is None:
        status = client.sweep("steps").status()
        assert status["total"] == 4
        history = client.sweep("steps").history(output="records")
        steps = [p["step"] for p in history if p["name"] == "acc"]
        assert len(steps) == len(set((p["job_id"], p["step"]) for p in history
                                     if p["name"] == "acc"))
        reads += 1
        time.sleep(0.05)
    assert live.returncode == 0
    s.live_reads = reads
    yield s
    client.close()
    s.stop()
    shutil.rmtree(root, ignore_errors=True)


def export(services, sweep, what):
    r = services.cli("export", sweep, "--what", what, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def flat(row):
    """An export row as the client's: nested objects dotted, the protocol's
    "nan"/"inf" as floats."""
    out = {}

    def put(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                put(prefix + "." + k if prefix else k, v)
        elif isinstance(value, str) and value in ("nan", "inf", "-inf"):
            out[prefix] = float(value)
        else:
            out[prefix] = value
    for k, v in row.items():
        put(k, v)
    return out


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float)
                      and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("sweep", ["tiny", "steps"])
def test_results_equal_the_cli_export(services, sweep):
    client = tailsweep.Client.open(services.db)
    mine = client.sweep(sweep).results(output="records")
    theirs = [flat(r) for r in export(services, sweep, "results")]
    assert len(mine) == len(theirs) == 4
    for m, t in zip(mine, theirs):
        assert list(m) == list(t)
        for k in m:
            assert same(m[k], t[k]), (k, m[k], t[k])


def test_history_is_unsampled_and_equals_the_cli_export(services):
    client = tailsweep.Client.open(services.db)
    mine = client.sweep("steps").history(output="records")
    theirs = export(services, "steps", "metrics")
    assert len(mine) == len(theirs) == 4 * 30 * 2
    for m, t in zip(mine, theirs):
        assert (m["job_id"], m["name"], m["step"]) == (t["job_id"], t["name"],
                                                       t["step"])
        assert same(m["value"], float(t["value"]))
    nans = [p for p in mine if p["name"] == "loss" and p["step"] == 7]
    assert len(nans) == 4 and all(math.isnan(p["value"]) for p in nans)
    frame = client.sweep("steps").history(names=["loss"], step_min=10,
                                          step_max=12)
    assert len(frame) == 4 * 3
    assert str(frame["job_id"].dtype) == "category"
    assert str(frame["step"].dtype) == "int64"


def test_history_pages_hold_every_point_once(services):
    http = tailsweep.Client(services.http, token=services.token)._source
    route = "/api/sweeps/steps/history"
    whole = http.fetch(route).decode().split("\r\n")
    assert whole[0] == "job_id,name,step,value" and whole[-1] == ""
    assert len(whole) == 2 + 4 * 30 * 2
    assert sum(line.endswith(",loss,7,nan") for line in whole) == 4
    rows, token, pages = [], "", 0
    while True:
        lines = http.fetch(route, page_size=7, page_token=token or None)
        lines = lines.decode().split("\r\n")
        assert lines[0] == whole[0] and 0 < len(lines) - 2 <= 7
        rows += lines[1:-1]
        pages += 1
        token = http.last_headers["X-Next-Page-Token"]
        if not token:
            break
    assert rows == whole[1:-1] and pages >= 240 // 7
    # JSON: one series per (job, name), steps as numbers, NaN as "nan".
    doc = json.loads(http.fetch(route, format="json", names="loss"))
    assert doc["next_page_token"] == "" and len(doc["series"]) == 4
    assert doc["series"][0]["steps"] == list(range(1, 31))
    assert doc["series"][0]["values"][6] == "nan"
    # gzip on request: the same points, the same frame.
    zipped = tailsweep.Client(services.http, token=services.token,
                              compress=True)
    assert zipped._source.fetch(route).decode().split("\r\n") == whole
    assert zipped._source.last_headers.get("Content-Encoding") == "gzip"
    plain = tailsweep.Client(services.http, token=services.token)
    assert zipped.sweep("steps").history().equals(
        plain.sweep("steps").history())
    with pytest.raises(tailsweep.InvalidArgument,
                       match=r"'format' is 'xml'; allowed: csv, json"):
        http.fetch(route, format="xml")
    with pytest.raises(tailsweep.InvalidArgument, match="step range"):
        http.fetch(route, step_min=5, step_max=2)
    with pytest.raises(tailsweep.NotFound, match="no sweep 'nope'"):
        http.fetch("/api/sweeps/nope/history")


def test_status_and_jobs_match_the_cli(services):
    client = tailsweep.Client.open(services.db)
    r = services.cli("status", "--format", "json")
    assert r.returncode == 0, r.stderr
    for row in client.sweeps():
        assert row["counts"]["done"] == row["total"] == 4
    assert client.sweep("tiny").wait(poll=0.1, timeout=5)["counts"]["done"] == 4
    jobs = list(client.sweep("tiny").jobs(where={"kernel": "log"}))
    assert [j.params["kernel"] for j in jobs] == ["log", "log"]
    assert all(j.state == "done" and j.result["steps_done"] == 20 for j in jobs)
    assert client.job(jobs[0].id[:8]).id == jobs[0].id
    frame = client.sweep("tiny").results(columns=["params_kernel",
                                                  "ratio_median"],
                                         where={"seed": 1})
    assert list(frame.columns) == ["job_id", "params_kernel", "ratio_median"]
    assert list(frame["params_kernel"]) == ["softmax", "log"]


def test_errors_name_what_was_wrong(services, tmp_path):
    client = tailsweep.Client.open(services.db)
    with pytest.raises(tailsweep.NotFound,
                       match=r"^no sweep 'nope'; sweeps: tiny, steps$"):
        client.sweep("nope")
    with pytest.raises(tailsweep.InvalidArgument, match="6 to 64 hex digits"):
        client.job("xyz")
    with pytest.raises(tailsweep.NotFound, match="no job 'abcdef0'"):
        client.job("abcdef0")
    with pytest.raises(tailsweep.InvalidArgument, match="state 'running'"):
        list(client.sweep("tiny").jobs(state="running"))
    with pytest.raises(tailsweep.InvalidArgument, match="columns nope"):
        client.sweep("tiny").results(columns=["nope"])
    with pytest.raises(tailsweep.NotFound, match="no such database file"):
        tailsweep.Client.open(str(tmp_path / "none.db"))
    other = tmp_path / "other.db"
    import sqlite3
    sqlite3.connect(str(other)).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(tailsweep.InvalidArgument,
                       match="not a tailsweep database"):
        tailsweep.Client.open(str(other))
    assert services.live_reads >= 1
    # The file's marks: the coordinator's numbers are the client's.
    from tailsweep import _database
    marks = sqlite3.connect(services.db)
    assert marks.execute("PRAGMA application_id").fetchone()[0] == \
        _database.APPLICATION_ID
    assert marks.execute("PRAGMA user_version").fetchone()[0] == \
        _database.SCHEMA_VERSION
    marks.close()
    newer = tmp_path / "newer.db"
    shutil.copy(services.db, newer)
    db = sqlite3.connect(str(newer))
    db.execute("PRAGMA user_version = %d" % (_database.SCHEMA_VERSION + 1))
    db.close()
    with pytest.raises(tailsweep.FailedPrecondition,
                       match="schema version is %d, newer than this client's "
                             "%d" % (_database.SCHEMA_VERSION + 1,
                                     _database.SCHEMA_VERSION)):
        tailsweep.Client.open(str(newer))


def test_online_reads_equal_offline_reads(services):
    # One job a page: paging returns every row once, in order.
    online = tailsweep.Client(services.http, token=services.token,
                              page_size=1)
    offline = tailsweep.Client.open(services.db)
    strip = lambda rows: [dataclasses.replace(r, created=None)  # noqa: E731
                          for r in rows]
    assert strip(online.sweeps()) == strip(offline.sweeps())
    for name in ("tiny", "steps"):
        a, b = online.sweep(name), offline.sweep(name)
        assert a.info() == b.info()
        sa, sb = a.status(), b.status()
        assert sa == sb
        ra, rb = a.results(output="records"), b.results(output="records")
        assert len(ra) == len(rb) == 4
        for x, y in zip(ra, rb):
            assert list(x) == list(y)
            assert all(same(x[k], y[k]) for k in x)
        ha, hb = a.history(output="records"), b.history(output="records")
        assert len(ha) == len(hb) > 0
        assert all(x["job_id"] == y["job_id"] and x["step"] == y["step"] and
                   same(x["value"], y["value"]) for x, y in zip(ha, hb))
        ja, jb = list(a.jobs(where={"variant": "a"} if name == "steps"
                             else None)), \
            list(b.jobs(where={"variant": "a"} if name == "steps" else None))
        assert [(j.id, j.state, j.params, j.result) for j in ja] == \
            [(j.id, j.state, j.params, j.result) for j in jb]
    api = online.api()
    assert api["api_version"] == "v1"
    from tailsweep import _database
    assert api["schema_version"] == _database.SCHEMA_VERSION
    train = next(k for k in api["kinds"] if k["name"] == "train")
    keys = {k["name"]: k for k in train["keys"]}
    assert keys["lr"]["type"] == "number" and keys["symlog"]["type"] == \
        "boolean" and keys["kernel"]["type"] == "text"
    assert next(k for k in api["kinds"] if k["name"] == "command")[
        "free_form_keys"]
    with pytest.raises(tailsweep.NotAvailableOffline, match="Client\\(url\\)"):
        offline.api()
    job = next(offline.sweep("tiny").jobs())
    assert online.job(job.id[:10]).params == job.params
    assert online.job(job.id).log_tails() == offline.job(job.id).log_tails()
    with pytest.raises(tailsweep.NotFound,
                       match=r"^no sweep 'nope'; sweeps: tiny, steps$"):
        online.sweep("nope")
    with pytest.raises(tailsweep.Unauthenticated, match="missing or wrong "
                                                        "token"):
        tailsweep.Client(services.http, token="wrong").sweeps()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d" % s.getsockname()[1]
    with pytest.raises(tailsweep.Unavailable,
                       match="cannot reach the coordinator at " + closed):
        tailsweep.Client(closed).sweeps()


def test_a_snapshot_reads_like_the_live_file(services, tmp_path):
    snap = str(tmp_path / "snap.db")
    r = services.cli("snapshot", "tiny", "--db", services.db, "--out", snap)
    assert r.returncode == 0, r.stderr
    live = tailsweep.Client.open(services.db).sweep("tiny")
    copy = tailsweep.Client.open(snap).sweep("tiny")
    assert copy.results(output="records") == live.results(output="records")
    a, b = (s.history(output="records") for s in (live, copy))
    assert [(p["job_id"], p["step"], p["value"]) for p in a] == \
        [(p["job_id"], p["step"], p["value"]) for p in b]


WRITES = """name: writes
kind: command
command: [sh, -c, 'exit 0', "${x}"]
grid: {x: [1, 2]}
fixed: {tag: t}
"""


def test_writes_submit_add_cancel_and_resume(services, tmp_path):
    client = tailsweep.Client(services.http, token=services.token)
    spec = tmp_path / "writes.yaml"
    spec.write_text(WRITES)
    dry = client.submit(str(spec), dry_run=True)
    assert (dry["sweep"], dry["jobs"], dry["jobs_added"], dry["dry_run"]) == \
        ("writes", 2, 2, True)
    assert "writes" not in [s["name"] for s in client.sweeps()]
    dry = client.submit(str(spec), overrides=["x=[5,6,7]"], dry_run=True)
    assert dry["jobs"] == 3 and "x=[5,6,7]" in dry["spec"]
    done = client.submit(str(spec))
    assert (done["jobs_added"], done["jobs_existing"]) == (2, 0)
    # The workdir is resolved in the spec's folder, as the CLI does it.
    assert str(tmp_path) in done["spec"]
    again = client.submit(str(spec))
    assert (again["jobs_added"], again["jobs_existing"]) == (0, 2)
    sweep = client.sweep("writes")
    ids = sweep.add_jobs([{"x": 3}, {"x": 0.001}])
    assert len(ids) == 2 and all(len(i) == 64 for i in ids)
    assert sweep.add_jobs([{"x": 3}, {"x": 0.001}]) == ids  # a retry
    assert sweep.status()["total"] == 4
    params = {j.id: j.params for j in sweep.jobs()}
    assert params[ids[1]]["x"] == 0.001 and params[ids[1]]["tag"] == "t"
    with pytest.raises(tailsweep.InvalidArgument, match="'tag' is fixed at t"):
        sweep.add_jobs([{"x": 4, "tag": "u"}])
    assert sweep.status()["total"] == 4
    assert sweep.cancel_job(ids[0]) == {"jobs_cancelled": 1,
                                        "jobs_kept_running": 0}
    assert sweep.status()["counts"]["cancelled"] == 1
    with pytest.raises(tailsweep.NotFound, match="has no job"):
        sweep.cancel_job("0" * 64)
    assert sweep.cancel()["jobs_cancelled"] == 3
    assert sweep.resume() == {"jobs_requeued": 4}
    assert sweep.status()["counts"]["queued"] == 4
    sweep.cancel()
    # Refusals: a bad spec names its line, a wrong token, offline writes.
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ngrid: {kernel: [softmax, nope]}\n")
    with pytest.raises(tailsweep.InvalidArgument, match=r"bad.yaml:2:"):
        client.submit(str(bad))
    with pytest.raises(tailsweep.InvalidArgument, match="override"):
        client.submit(str(spec), overrides=["nonsense"])
    with pytest.raises(tailsweep.Unauthenticated):
        tailsweep.Client(services.http, token="wrong").sweep("writes").cancel()
    with pytest.raises(tailsweep.ReadOnly, match="never written"):
        tailsweep.Client.open(services.db).sweep("writes").cancel()
    # A browser's cookie, or a form's body, never writes.
    import urllib.error
    import urllib.request
    for headers in ({"Cookie": "tailsweep_token=" +
                     services.token.encode().hex(),
                     "Content-Type": "application/json"},
                    {"Authorization": "Bearer " + services.token,
                     "Content-Type": "application/x-www-form-urlencoded"}):
        request = urllib.request.Request(
            services.http + "/api/sweeps/writes/resume", data=b"{}",
            headers=headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request)
        assert e.value.code in (400, 401)
    assert sweep.status()["counts"]["queued"] == 0


SEARCH = """name: edge
grid: {kernel: [softmax, log]}
fixed: {steps: 20, warmup: 2}
search: {key: lr, range: [1e-3, 1e-2], seeds: 2, extra_seeds: 0,
         tolerance: 0.2}
"""


def test_cells_and_boundaries_are_the_coordinators(services, tmp_path):
    client = tailsweep.Client(services.http, token=services.token)
    # Results per cell: `tailsweep results --format json`'s rows.
    cells = client.sweep("tiny").results(per="cell", output="records")
    r = services.cli("results", "tiny", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert len(cells) == 2 and {c["params_kernel"] for c in cells} == \
        {"softmax", "log"}
    assert all(c["jobs"] == 2 and c["done"] == 2 for c in cells)
    per_seed = client.sweep("tiny").results(per="seed")
    assert len(per_seed) == 4 and "params_seed" in per_seed.columns
    # Boundaries: the coordinator's plan, as the CLI prints it.
    spec = tmp_path / "edge.yaml"
    spec.write_text(SEARCH)
    assert client.submit(str(spec))["jobs_added"] == 2 * 2 * 2
    mine = client.sweep("edge").boundaries(output="records")
    r = services.cli("results", "edge", "--format", "json")
    assert r.returncode == 0, r.stderr
    theirs = json.loads(r.stdout)
    assert [m["params_kernel"] for m in mine] == [t["kernel"] for t in theirs]
    for m, t in zip(mine, theirs):
        assert (m["state"], m["runs"], m["key"]) == (t["state"], t["runs"],
                                                      "lr")
        assert [(p["value"], p["pending"]) for p in m["probes"]] == \
            [(p["value"], p["pending"]) for p in t["probes"]]
        assert math.isnan(m["estimate"])
    client.sweep("edge").cancel()
    with pytest.raises(tailsweep.FailedPrecondition, match="no boundary"):
        client.sweep("tiny").boundaries()
    with pytest.raises(tailsweep.NotAvailableOffline, match="online|URL"):
        tailsweep.Client.open(services.db).sweep("tiny").results(per="cell")


def test_the_openapi_document_lists_what_is_served(services):
    http = tailsweep.Client(services.http, token=services.token)._source
    doc = http.get("/api/openapi.json")
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    assert "/api/sweeps/{sweep}/history" in paths
    assert "post" in paths["/api/sweeps/{sweep}/jobs"]
    job = next(tailsweep.Client.open(services.db).sweep("tiny").jobs()).id
    for path, ops in paths.items():
        concrete = path.replace("{sweep}", "tiny").replace(
            "{job}", job).replace("{stream}", "stderr").replace(
            "{path}", "plots/none.png")
        if "get" in ops:  # every GET route is served: no "no page" 404
            try:
                http.fetch(concrete)
            except tailsweep.Error as e:
                assert "no page" not in str(e), path
                # What this sweep has not: a search, the job's stored
                # files (NotFound naming what is stored).
                assert path.endswith("/boundaries") or (
                    path.endswith(("/checkpoint", "/logs/{stream}",
                                   "/artifacts/{path}")) and
                    isinstance(e, tailsweep.NotFound)), (path, e)
    # A route that is not there says where the routes are.
    with pytest.raises(tailsweep.NotFound, match="no page /api/nope"):
        http.fetch("/api/nope")


def test_filters_run_in_the_coordinator_and_the_database(services):
    online = tailsweep.Client(services.http, token=services.token)
    offline = tailsweep.Client.open(services.db)
    for c in (online, offline):
        s = c.sweep("tiny")
        jobs = list(s.jobs())
        newest = max(j.updated_ms for j in jobs)
        assert newest > 0
        assert list(s.jobs(updated_since=newest)) == []
        assert len(list(s.jobs(updated_since=newest - 1))) >= 1
        softmax = list(s.jobs(where={"kernel": "softmax", "seed": [0, 1]}))
        assert len(softmax) == 2
        assert {j.params["kernel"] for j in softmax} == {"softmax"}
        assert list(s.jobs(where={"kernel": "nope"})) == []


# The client of the release before (0.1.0, read from git) against this
# coordinator: it reads what it read then, its numbers spelled as it reads
# them (proto3's "NaN"), its results from the first release's fields.
OLD_CLIENT = "b4f1bcf"


def old_client(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    if shutil.which("git") is None or not os.path.isdir(
            os.path.join(repo, ".git")):
        pytest.skip("needs a git checkout to read the 0.1.0 client from")
    folder = tmp_path / "old" / "tailsweep"
    folder.mkdir(parents=True)
    import subprocess
    for name in ("__init__.py", "_database.py", "_frames.py", "_http.py",
                 "client.py", "errors.py"):
        text = subprocess.run(
            ["git", "-C", repo, "show",
             "%s:python/tailsweep/%s" % (OLD_CLIENT, name)],
            check=True, capture_output=True).stdout
        (folder / name).write_bytes(text)
    return str(tmp_path / "old")


def test_a_client_of_0_1_0_still_reads_this_coordinator(services, tmp_path):
    path = old_client(tmp_path)
    spec = tmp_path / "edge.yaml"
    spec.write_text(SEARCH)  # a boundary sweep: its estimates are NaN
    new = tailsweep.Client(services.http, token=services.token)
    new.submit(str(spec))
    script = """
import json, math, sys
sys.path.insert(0, %r)
import tailsweep
assert tailsweep.__version__ == "0.1.0", tailsweep.__file__
c = tailsweep.Client(%r, token=%r)
cells = c.sweep("tiny").results(per="cell", output="records")
jobs = list(c.sweep("tiny").jobs())
job = c.job(jobs[0].id[:8])
points = job.history(names="loss")
edge = c.sweep("edge").boundaries(output="records")
print(json.dumps({
    "estimates_nan": all(math.isnan(b["estimate"]) for b in edge),
    "cells": [[r["params_kernel"], r["jobs"], r["done"]] for r in cells],
    "job": job.id == jobs[0].id,
    "values_are_numbers": all(isinstance(p["value"], float) for p in points),
    "points": len(points)}))
""" % (path, services.http, services.token)
    import subprocess
    r = subprocess.run([sys.executable, "-c", script], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    old = json.loads(r.stdout)
    mine = new.sweep("tiny").results(per="cell", output="records")
    assert old["cells"] == [[m["params_kernel"], m["jobs"], m["done"]]
                            for m in mine]
    assert old["job"] and old["values_are_numbers"] and old["points"] > 0
    assert old["estimates_nan"]
    # This client reads the same answers in the protocol's spelling.
    for b in new.sweep("edge").boundaries(output="records"):
        assert math.isnan(b["estimate"])
    raw = new._source.fetch("/api/sweeps/edge/boundaries")
    assert b'"nan"' in raw and b"NaN" not in raw


# A sweep's settings and device hours (SweepInfo's and Status's last fields).
CONTROL = ("priority", "max_running", "paused", "held", "max_failures",
           "failures", "timeout_s", "tags", "notes", "stop_rule",
           "gpu_hours", "cpu_hours", "preempted_gpu_hours",
           "preempted_cpu_hours")
CTL = """name: ctl
kind: command
command: [sh, -c, 'exit 0', "${x}"]
grid: {x: [1, 2, 3]}
priority: 5
max_running: 3
timeout_s: 2.5
max_failures: 4
tags: {team: vision, stage: "1"}
notes: from the spec
stop: {rule: asha, metric: loss, goal: minimize, min_steps: 10, reduction: 3}
"""


def listed(client, name):
    """client.sweeps()'s row of `name`, its created left out (None when the
    sweep is not listed)."""
    rows = {s.name: s for s in client.sweeps()}
    return dataclasses.replace(rows[name], created=None) \
        if name in rows else None


def stop_worker(worker):
    """Ends a worker this test started (it gives its jobs back)."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=60)


def test_hours_of_the_jobs_a_cpu_worker_ran(services):
    online = tailsweep.Client(services.http, token=services.token)
    offline = tailsweep.Client.open(services.db)
    for name in ("tiny", "steps"):
        status = online.sweep(name).status()
        assert status.cpu_hours > 0 and status.gpu_hours == 0
        assert status.preempted_cpu_hours == status.preempted_gpu_hours == 0
        # Every attempt ended: the file reads the coordinator's numbers.
        assert offline.sweep(name).status() == status
        assert listed(online, name) == listed(offline, name)
        assert listed(online, name).cpu_hours == status.cpu_hours
        assert status["cpu_hours"] == status.cpu_hours  # read as a dict too
        # A command sweep's jobs ran on one slot each: at least the 30
        # lines of the slow ones (50 ms apart) each.
        if name == "steps":
            assert status.cpu_hours * 3600 > 2 * 30 * 0.05


def test_settings_from_the_spec_and_their_writes(services, tmp_path):
    online = tailsweep.Client(services.http, token=services.token)
    offline = tailsweep.Client.open(services.db)
    spec = tmp_path / "ctl.yaml"
    spec.write_text(CTL)
    assert online.submit(str(spec))["jobs_added"] == 3
    sweep = online.sweep("ctl")
    settings = sweep.pause()  # no worker of the tests after runs its jobs
    assert settings["paused"] is True
    status = sweep.status()
    assert (status.priority, status.max_running, status.paused, status.held,
            status.max_failures, status.failures, status.timeout_s) == \
        (5, 3, True, "", 4, 0, 2.5)
    assert status.tags == {"team": "vision", "stage": "1"}
    assert status.notes == "from the spec"
    assert json.loads(status.stop_rule) == {
        "rule": "asha", "metric": "loss", "goal": "minimize",
        "min_steps": 10, "reduction": 3}
    assert status.gpu_hours == status.cpu_hours == 0
    assert settings == {k: getattr(status, k) for k in CONTROL[:10]}
    # The list, the database file and the CLI say the same.
    assert offline.sweep("ctl").status() == status
    assert listed(online, "ctl") == listed(offline, "ctl")
    assert all(getattr(listed(online, "ctl"), k) == getattr(status, k)
               for k in CONTROL)
    r = services.cli("status", "ctl", "--format", "json")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert {k: cli[k] for k in CONTROL} == \
        {k: getattr(status, k) for k in CONTROL}

    # Each write answers the settings now; what it leaves out stays.
    assert sweep.unpause()["paused"] is False
    assert sweep.pause()["paused"] is True
    s = sweep.set_priority(-20, max_running=0)
    assert (s["priority"], s["max_running"], s["paused"]) == (-20, 0, True)
    s = sweep.set_priority(7)
    assert (s["priority"], s["max_running"]) == (7, 0)
    assert sweep.tag({"team": "audio"}, owner="ana")["tags"] == \
        {"team": "audio", "stage": "1", "owner": "ana"}
    assert sweep.tag(stage=None, tags="kwarg named tags")["tags"] == \
        {"team": "audio", "owner": "ana", "tags": "kwarg named tags"}
    assert sweep.tag({"owner": ""})["tags"] == \
        {"team": "audio", "tags": "kwarg named tags"}
    assert sweep.untag("team", "tags", "never-set")["tags"] == {}
    assert sweep.tag(run="2")["tags"] == {"run": "2"}
    assert sweep.note("lr too high; rerun with 1e-4")["notes"] == \
        "lr too high; rerun with 1e-4"
    s = sweep.untag()  # nothing to change: the settings as they are
    assert (s["priority"], s["tags"], s["notes"]) == \
        (7, {"run": "2"}, "lr too high; rerun with 1e-4")
    # Read back online, from the list and from the file.
    for c in (online, offline):
        status = c.sweep("ctl").status()
        assert (status.priority, status.max_running, status.paused,
                status.tags, status.notes, status.timeout_s,
                status.max_failures) == \
            (7, 0, True, {"run": "2"}, "lr too high; rerun with 1e-4", 2.5, 4)
        row = listed(c, "ctl")
        assert all(getattr(row, k) == getattr(status, k) for k in CONTROL)
    assert sweep.note("")["notes"] == ""
    assert offline.sweep("ctl").status().notes == ""

    # Refusals: the coordinator's ranges and keys, a value of the wrong type
    # before it is sent, every write offline.
    with pytest.raises(tailsweep.InvalidArgument, match=r"-1000\.\.1000"):
        sweep.set_priority(1001)
    with pytest.raises(tailsweep.InvalidArgument, match="max_running"):
        sweep.set_priority(1, max_running=-1)
    with pytest.raises(tailsweep.InvalidArgument, match="integer"):
        sweep.set_priority(True)
    with pytest.raises(tailsweep.InvalidArgument):
        sweep.tag({"no spaces": "x"})
    with pytest.raises(tailsweep.InvalidArgument, match="text"):
        sweep.tag(n=1)
    with pytest.raises(tailsweep.InvalidArgument, match="text"):
        sweep.note(5)
    assert sweep.status().priority == 7
    still = offline.sweep("ctl")
    for write in (still.pause, still.unpause, lambda: still.set_priority(1),
                  lambda: still.tag(a="b"), lambda: still.untag("a"),
                  lambda: still.note("x"), still.remove,
                  lambda: offline.remove("ctl", force=True)):
        with pytest.raises(tailsweep.ReadOnly, match="never written"):
            write()

    # Remove: a dry run says what would go; then it goes, everywhere.
    dry = online.remove("ctl", dry_run=True)
    assert dry == {"jobs": 3, "shared_jobs": 0, "running": 0,
                   "metric_points": 0, "checkpoint_files": 0,
                   "checkpoint_bytes": 0}
    assert listed(online, "ctl") is not None
    assert sweep.remove() == dry
    assert listed(online, "ctl") is None and listed(offline, "ctl") is None
    with pytest.raises(tailsweep.NotFound, match="no sweep 'ctl'"):
        online.sweep("ctl")
    with pytest.raises(tailsweep.NotFound, match="no sweep 'ctl'"):
        online.remove("ctl")
    with pytest.raises(tailsweep.NotFound, match="no sweep 'ctl'"):
        sweep.pause()


SLOW = """name: slow
kind: command
command: [sh, -c, 'touch "$0.started"; while [ ! -f "$0.go" ]; do sleep 0.05; done', "%s", "${x}"]
grid: {x: [1]}
"""


def test_remove_waits_for_running_jobs_unless_forced(services, tmp_path):
    online = tailsweep.Client(services.http, token=services.token)
    offline = tailsweep.Client.open(services.db)
    marker = str(tmp_path / "slow")
    spec = tmp_path / "slow.yaml"
    spec.write_text(SLOW % marker)
    online.submit(str(spec))
    sweep = online.sweep("slow")
    worker = services.worker()
    try:
        wait_for(lambda: os.path.exists(marker + ".started"), "the job")
        status = sweep.status()
        # A running attempt counts up to now.
        assert status.counts["leased"] == 1
        assert status.cpu_hours > 0 and status.gpu_hours == 0
        with pytest.raises(tailsweep.FailedPrecondition, match="1 running"):
            sweep.remove()
        with pytest.raises(tailsweep.FailedPrecondition, match="--force"):
            online.remove("slow", dry_run=True)
        assert sweep.remove(force=True, dry_run=True)["running"] == 1
        assert listed(online, "slow") is not None

        # SIGTERM (a preemption): the worker gives the job back; its
        # attempt is preempted time, in the totals.
        stop_worker(worker)
        status = sweep.status()
        assert status.counts["queued"] == 1
        assert status.preempted_cpu_hours > 0
        assert status.preempted_cpu_hours == status.cpu_hours
        assert status.preempted_gpu_hours == status.gpu_hours == 0
        assert offline.sweep("slow").status() == status

        # Running again: removed with force, the sweep is gone.
        os.remove(marker + ".started")
        worker = services.worker()
        wait_for(lambda: os.path.exists(marker + ".started"), "the job again")
        gone = sweep.remove(force=True)
        assert (gone["jobs"], gone["shared_jobs"], gone["running"]) == \
            (1, 0, 1)
        assert listed(online, "slow") is None
        assert listed(offline, "slow") is None
        with pytest.raises(tailsweep.NotFound):
            offline.sweep("slow")
    finally:
        with open(marker + ".go", "w"):
            pass
        stop_worker(worker)


FLAKY = """name: flaky
kind: command
command: [sh, -c, 'exit 5', "${x}"]
grid: {x: [1, 2]}
max_failures: 1
"""


def test_a_sweep_held_after_max_failures_says_why(services, tmp_path):
    online = tailsweep.Client(services.http, token=services.token)
    offline = tailsweep.Client.open(services.db)
    spec = tmp_path / "flaky.yaml"
    spec.write_text(FLAKY)
    online.submit(str(spec))
    sweep = online.sweep("flaky")
    worker = services.worker()
    try:
        # Held, and nothing of it runs any more (a held queue is not
        # leased).
        wait_for(lambda: sweep.status().held != "" and
                 sweep.status().counts["leased"] == 0, "the hold")
        status = sweep.status()
        assert "max_failures: 1" in status.held
        assert status.failures >= 1 and status.max_failures == 1
        assert status.cpu_hours > 0 and status.preempted_cpu_hours == 0
        assert offline.sweep("flaky").status() == status
        assert listed(online, "flaky").held == status.held
        # Paused first, so that no worker fails it again at once: resume
        # ends the hold.
        sweep.pause()
        sweep.resume()
        status = sweep.status()
        assert (status.held, status.failures, status.paused) == ("", 0, True)
        assert offline.sweep("flaky").status().held == ""
    finally:
        stop_worker(worker)
        sweep.cancel()


def test_a_file_from_before_the_settings_reads_their_zeros(services,
                                                           tmp_path):
    # Schema 7: no settings columns, no lease history.
    old = str(tmp_path / "old.db")
    import sqlite3
    source = sqlite3.connect(services.db)
    target = sqlite3.connect(old)
    source.backup(target)
    source.close()
    target.executescript(
        "CREATE TABLE before AS SELECT sweep_id, name, kind, fixed, "
        "created_ms, spec, version FROM sweeps; DROP TABLE sweeps; "
        "ALTER TABLE before RENAME TO sweeps; "
        "CREATE TABLE old_jobs AS SELECT job_id, kind, params, state, epoch, "
        "attempt, holder, lease_deadline_ms, not_before_ms, last_error, "
        "lease_request, lease_ms, created_ms, updated_ms FROM jobs; "
        "DROP TABLE jobs; ALTER TABLE old_jobs RENAME TO jobs")
    target.execute("PRAGMA user_version = 7")
    target.commit()
    target.close()
    client = tailsweep.Client.open(old)
    status = client.sweep("tiny").status()
    assert status.counts["done"] == 4
    assert {k: getattr(status, k) for k in CONTROL} == {
        "priority": 0, "max_running": 0, "paused": False, "held": "",
        "max_failures": 0, "failures": 0, "timeout_s": 0.0, "tags": {},
        "notes": "", "stop_rule": "", "gpu_hours": 0.0, "cpu_hours": 0.0,
        "preempted_gpu_hours": 0.0, "preempted_cpu_hours": 0.0}
    assert [s.name for s in client.sweeps()][:2] == ["tiny", "steps"]
    assert all(s.priority == 0 and s.cpu_hours == 0
               for s in client.sweeps())
