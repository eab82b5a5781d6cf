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
    """A loopback HTTP server answering GETs from `answers`: path -> list of
    (status, headers, body) given in turn (the last one repeats)."""

    def __init__(self, answers):
        self.answers = answers
        self.drop = False
        self.requests = []  # (path, peer port, user agent)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive

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
