"""The HTTP client against fake coordinators (http.server on loopback): what
it does with answers a real one gives only in bad moments or in other
versions. No built executables needed."""

import http.server
import json
import math
import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import tailsweep  # noqa: E402


class Fake:
    """A loopback HTTP server answering GETs and POSTs from `answers`: path
    -> list of (status, headers, body) given in turn (the last one
    repeats). POST bodies are kept in `posted`: (path, parsed JSON)."""

    def __init__(self, answers):
        self.answers = answers
        self.drop = False
        self.requests = []  # (path, peer port, user agent)
        self.posted = []  # (path, body)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                assert self.headers.get("Content-Type") == "application/json"
                fake.posted.append((self.path, json.loads(body)))
                self.do_GET()

            def do_GET(self):
                path = self.path.split("?")[0]
                fake.requests.append((path, self.client_address[1],
                                      self.headers.get("User-Agent")))
                turns = fake.answers[path]
                status, headers, body = turns.pop(0) if len(turns) > 1 \
                    else turns[0]
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                # An idle keep-alive connection the server drops without a
                # word (as the gateway does after 5 s).
                self.close_connection = fake.drop

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


SWEEP = {"sweep": {"name": "s", "kind": "train", "created_ms": "0",
                   "counts": {}}, "fixed": [], "spec_yaml": "",
         "version": "0.1.0"}
STATUS = {"jobs_by_state": {"done": "2"}, "runs_stopped_early": "0",
          "steps_saved": "0", "coordinator_problem": ""}


@pytest.fixture
def fake():
    servers = []

    def make(answers):
        servers.append(Fake(answers))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_busy_answers_are_asked_again_after_retry_after(fake):
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/status": [
                  (503, {"Retry-After": "0"},
                   {"error": "busy", "code": "UNAVAILABLE"}),
                  (429, {"Retry-After": "0"},
                   {"error": "slow down", "code": "RESOURCE_EXHAUSTED"}),
                  (200, {}, STATUS)]})
    status = tailsweep.Client(f.url).sweep("s").status()
    assert status.counts["done"] == 2
    statuses = [p for p, _, _ in f.requests if p.endswith("/status")]
    assert len(statuses) == 3
    # Every request on one kept connection, as tailsweep's client.
    assert len({port for _, port, _ in f.requests}) == 1
    assert all(ua.startswith("tailsweep-python/") for _, _, ua in f.requests)


def test_busy_for_good_is_raised_after_a_few_tries(fake):
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/status": [
                  (503, {"Retry-After": "0"},
                   {"error": "still busy", "code": "UNAVAILABLE"})]})
    sweep = tailsweep.Client(f.url).sweep("s")
    with pytest.raises(tailsweep.Unavailable, match="still busy"):
        sweep.status()
    assert len([p for p, _, _ in f.requests if p.endswith("/status")]) == 6


def test_a_coordinator_before_0_2_0_is_named_not_misread(fake):
    # 0.1.0's results answer: no table, train's rows (a command sweep's
    # came out as NaN ratios); and no GET /api/jobs/ID.
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/results": [(200, {}, {
                  "kind": "command", "jobs": "2", "done": "2",
                  "rows": [{"cell": [], "jobs": "2", "done": "2",
                            "ratio_median": "NaN"}]})],
              "/api/jobs/abcdef": [(404, {}, {
                  "error": "no route", "code": "NOT_FOUND"})]})
    c = tailsweep.Client(f.url)
    with pytest.raises(tailsweep.FailedPrecondition,
                       match="0.2.0 or newer"):
        c.sweep("s").results(per="cell")
    with pytest.raises(tailsweep.NotFound):
        c.job("abcdef")


def test_a_table_of_a_kind_this_client_never_heard_of_is_shown_as_it_is(
        fake):
    table = {"columns": [{"name": "cell", "type": "text", "role": "key"},
                         {"name": "score", "type": "number",
                          "role": "value"},
                         {"name": "ok", "type": "fraction", "role": "value"},
                         {"name": "shown", "type": "text",
                          "role": "display"}],
             "rows": [["a", "inf", {"count": 1, "of": 4}, "x"],
                      ["b", None, {"count": 0, "of": 0}, "y"]],
             "headline": "", "group_by": "", "note": ""}
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/results": [(200, {}, {
                  "kind": "from-the-future", "jobs": 2, "done": 2,
                  "table": table})]})
    rows = tailsweep.Client(f.url).sweep("s").results(per="cell",
                                                      output="records")
    assert rows[0] == {"params_cell": "a", "score": math.inf, "ok": 0.25}
    assert rows[1]["score"] is None and math.isnan(rows[1]["ok"])


def test_a_kept_connection_the_server_dropped_is_opened_again(fake):
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/status": [(200, {}, STATUS)]})
    f.drop = True
    sweep = tailsweep.Client(f.url).sweep("s")
    for _ in range(3):
        assert sweep.status().total == 2
    assert len({port for _, port, _ in f.requests}) == 4


# A sweep's settings and hours as the gateway writes them: proto3 JSON with
# the proto's field names, 64-bit integers as strings, doubles as numbers
# (or the protocol's words).
SETTINGS = {"priority": "-5", "max_running": "4", "paused": True,
            "held": "held after 3 failed attempts (max_failures: 3)",
            "max_failures": "3", "failures": "3", "timeout_s": 90.5,
            "tags": {"team": "vision", "stage": "b"}, "notes": "why",
            "stop_rule": '{"rule":"asha"}'}
HOURS = {"gpu_hours": 2.5, "cpu_hours": "inf", "preempted_gpu_hours": 0.5,
         "preempted_cpu_hours": 0}
TYPED = {"priority": -5, "max_running": 4, "paused": True,
         "held": "held after 3 failed attempts (max_failures: 3)",
         "max_failures": 3, "failures": 3, "timeout_s": 90.5,
         "tags": {"stage": "b", "team": "vision"}, "notes": "why",
         "stop_rule": '{"rule":"asha"}', "gpu_hours": 2.5,
         "cpu_hours": math.inf, "preempted_gpu_hours": 0.5,
         "preempted_cpu_hours": 0.0}
# What a coordinator before the settings gives: every field its zero.
ZEROS = {"priority": 0, "max_running": 0, "paused": False, "held": "",
         "max_failures": 0, "failures": 0, "timeout_s": 0.0, "tags": {},
         "notes": "", "stop_rule": "", "gpu_hours": 0.0, "cpu_hours": 0.0,
         "preempted_gpu_hours": 0.0, "preempted_cpu_hours": 0.0}


def test_settings_and_hours_are_typed_in_status_and_the_list(fake):
    counts = dict(STATUS, settings=SETTINGS, hours=HOURS)
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/status": [(200, {}, counts)],
              "/api/sweeps": [(200, {}, {"sweeps": [
                  {"name": "s", "kind": "train", "created_ms": "0",
                   "counts": counts},
                  {"name": "old", "kind": "train", "created_ms": "0",
                   "counts": STATUS}]})]})
    c = tailsweep.Client(f.url)
    status = c.sweep("s").status()
    assert {k: getattr(status, k) for k in TYPED} == TYPED
    assert all(type(getattr(status, k)) is type(v) for k, v in TYPED.items())
    assert status["paused"] is True and status.total == 2
    s, old = c.sweeps()
    assert {k: getattr(s, k) for k in TYPED} == TYPED
    assert {k: getattr(old, k) for k in ZEROS} == ZEROS
    assert all(type(getattr(old, k)) is type(v) for k, v in ZEROS.items())


def test_status_from_a_coordinator_before_the_settings_reads_zeros(fake):
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/status": [(200, {}, STATUS)]})
    status = tailsweep.Client(f.url).sweep("s").status()
    assert {k: getattr(status, k) for k in ZEROS} == ZEROS


def test_settings_writes_post_only_what_they_change(fake):
    name = "a b/c"  # quoted in the path
    base = "/api/sweeps/a%20b%2Fc"
    answer = {"settings": SETTINGS}
    f = fake({base: [(200, {}, dict(SWEEP, sweep=dict(SWEEP["sweep"],
                                                      name=name)))],
              base + "/settings": [(200, {}, answer)],
              base + "/remove": [(200, {}, {
                  "jobs": "3", "shared_jobs": "1", "running": "0",
                  "metric_points": "120", "checkpoint_files": "2",
                  "checkpoint_bytes": "4096"})]})
    c = tailsweep.Client(f.url)
    sweep = c.sweep(name)
    settings = sweep.pause()
    assert settings == {k: TYPED[k] for k in list(TYPED)[:10]}
    sweep.unpause()
    sweep.set_priority(12)
    sweep.set_priority(-3, max_running=0)
    sweep.tag({"a": "1", "b": None}, c="", d="4")
    sweep.untag("x", "y")
    sweep.note("")
    sweep.note("two\nlines")
    route = base + "/settings"
    assert f.posted == [
        (route, {"paused": True}), (route, {"paused": False}),
        (route, {"priority": 12}), (route, {"priority": -3, "max_running": 0}),
        (route, {"tags": {"a": "1", "b": "", "c": "", "d": "4"}}),
        (route, {"tags": {"x": "", "y": ""}}),
        (route, {"notes": ""}), (route, {"notes": "two\nlines"})]
    del f.posted[:]
    assert sweep.remove() == c.remove(name, force=True, dry_run=True) == {
        "jobs": 3, "shared_jobs": 1, "running": 0, "metric_points": 120,
        "checkpoint_files": 2, "checkpoint_bytes": 4096}
    assert f.posted == [
        (base + "/remove", {"force": False, "dry_run": False}),
        (base + "/remove", {"force": True, "dry_run": True})]


def test_settings_refusals_carry_the_coordinators_words(fake):
    f = fake({"/api/sweeps/s": [(200, {}, SWEEP)],
              "/api/sweeps/s/settings": [(400, {}, {
                  "error": "priority 5000 is out of range; allowed: "
                           "-1000..1000", "code": "INVALID_ARGUMENT"})],
              "/api/sweeps/s/remove": [(400, {}, {
                  "error": "sweep 's' has 1 running job(s); cancel it and "
                           "wait, or remove it with --force",
                  "code": "FAILED_PRECONDITION"})]})
    sweep = tailsweep.Client(f.url).sweep("s")
    with pytest.raises(tailsweep.InvalidArgument, match="out of range"):
        sweep.set_priority(5000)
    with pytest.raises(tailsweep.FailedPrecondition, match="1 running"):
        sweep.remove()
    # Caught here, never sent: values of the wrong type.
    for bad in (lambda: sweep.set_priority("5"),
                lambda: sweep.set_priority(1.5),
                lambda: sweep.set_priority(1, max_running=False),
                lambda: sweep.tag(a=1), lambda: sweep.note(None)):
        with pytest.raises(tailsweep.InvalidArgument):
            bad()
    assert len(f.posted) == 2
