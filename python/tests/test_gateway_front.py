"""The gateway behind its front proxy, deploy/haproxy/tailsweep.cfg as
shipped, over real sockets from several loopback addresses (127.0.0.x are
all this machine, each a peer of its own): a peer's connections past its
cap are refused, saying why; floods of idle, half-sent and byte-a-second
connections are held by the proxy, not by the coordinator's threads, and
starve no one; a dribbled request head is cut at its deadline; the
coordinator counts the peer the proxy forwards, not the proxy; a
browser's login token never reaches the proxy's log. Outcomes are counted
(answers, deadlines missed), never slept for.

GATEWAY_FLOOD (default 300) sets how many connections each kind holds.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import resource
import select

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
from services import (BIN, Services, dripping, sample,  # noqa: E402
                      status_field, wait_for)

CONFIG = os.path.join(REPO, "deploy", "haproxy", "tailsweep.cfg")
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

pytestmark = [
    pytest.mark.skipif(
        not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
        reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator"),
    pytest.mark.skipif(not os.path.isfile(HAPROXY),
                       reason="no haproxy (deploy/install-deps.sh --with tests)"),
    # The shipped config's 8,000 connections need about 16,500 open files.
    pytest.mark.skipif(
        resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 16500,
        reason="the hard open-file limit is under 16,500 (ulimit -Hn)"),
]

FLOOD = int(os.environ.get("GATEWAY_FLOOD", "300"))
DEADLINE_S = 1.0  # an answer slower than this is a missed deadline
PEER_SOFT_CAP, PEER_HARD_CAP = 64, 256  # as the shipped config says


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Front:
    """A coordinator on loopback and haproxy in front of it."""

    def __init__(self, root):
        self.services = Services(root, "--http-trusted-proxy", "127.0.0.1")
        self.port = free_port()
        self.metrics_url = "http://127.0.0.1:%d/metrics" % free_port()
        self.log_path = os.path.join(root, "haproxy.log")
        env = dict(os.environ, TAILSWEEP_FRONT="127.0.0.1:%d" % self.port,
                   TAILSWEEP_GATEWAY=self.services.http[len("http://"):],
                   TAILSWEEP_FRONT_METRICS=self.metrics_url[
                       len("http://"):-len("/metrics")])
        self.log = open(self.log_path, "w")
        self.proxy = subprocess.Popen([HAPROXY, "-db", "-f", CONFIG], env=env,
                                      stdout=self.log, stderr=self.log)
        try:
            wait_for(lambda: self.proxy.poll() is not None or
                     self.get("/api/sweeps")[0] == 200, "haproxy")
            assert self.proxy.poll() is None, open(self.log_path).read()
        except BaseException:
            self.stop()
            raise

    def get(self, path, peer="127.0.0.1", token=None, timeout=30):
        """(status or None, body, seconds) of one GET from `peer`."""
        token = self.services.token if token is None else token
        start = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port,
                                           timeout=timeout,
                                           source_address=(peer, 0))
            headers = {"Authorization": "Bearer " + token} if token else {}
            c.request("GET", path, headers=headers)
            answer = c.getresponse()
            body = answer.read()
            c.close()
            return answer.status, body, time.monotonic() - start
        except OSError:
            return None, b"", time.monotonic() - start

    def connections(self, n, peer, first_bytes=b""):
        out = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10,
                                         source_address=(peer, 0))
            if first_bytes:
                s.sendall(first_bytes)
            out.append(s)
        return out

    def stop(self):
        if self.proxy.poll() is None:
            self.proxy.terminate()
        self.proxy.wait(timeout=60)
        self.log.close()
        self.services.stop()


@pytest.fixture(scope="module")
def front():
    root = tempfile.mkdtemp(prefix="tailsweep_front_")
    f = Front(root)
    yield f
    f.stop()
    shutil.rmtree(root, ignore_errors=True)


def probe(front, rounds=10):
    """(answers that failed, answers slower than the deadline, slowest)."""
    failed = missed = 0
    slowest = 0.0
    for _ in range(rounds):
        for path in ("/metrics", "/api/sweeps", "/"):
            code, _, took = front.get(path)
            failed += code != 200
            missed += took > DEADLINE_S
            slowest = max(slowest, took)
    return failed, missed, slowest


def threads_of(pid):
    return status_field(pid, "Threads")


def closed_by_peer(sockets):
    """How many of `sockets` the other end has closed, now."""
    poll = select.poll()
    for s in sockets:
        poll.register(s, select.POLLIN)
    closed = 0
    for fd, _ in poll.poll(0):
        s = next(s for s in sockets if s.fileno() == fd)
        try:
            closed += s.recv(1, socket.MSG_PEEK) == b""
        except OSError:  # reset
            closed += 1
    return closed


def close_all(sockets):
    for s in sockets:
        s.close()


def test_a_peers_connections_past_its_cap_are_refused_saying_why(front):
    held = front.connections(PEER_SOFT_CAP + 4, "127.0.0.2")
    try:
        # Once haproxy has taken them all in (its threads accept in
        # parallel), the peer's requests are refused.
        answers = []
        wait_for(lambda: answers.append(
            front.get("/api/sweeps", peer="127.0.0.2")) or
            answers[-1][0] == 429, "a 429 for 127.0.0.2")
        code, body, _ = answers[-1]
        answer = json.loads(body)
        assert answer["code"] == "RESOURCE_EXHAUSTED"
        assert "too many connections from your address" in answer["error"]
        # Another peer is served meanwhile.
        assert front.get("/api/sweeps", peer="127.0.0.3")[0] == 200
        # Past the hard cap, connections are closed at once, nothing read:
        # the peer keeps at most PEER_HARD_CAP open.
        # (A connection may be reset while it is made: refused too.)
        tries = PEER_HARD_CAP - len(held) + 8
        reset = 0
        for _ in range(tries):
            try:
                held += front.connections(1, "127.0.0.2")
            except ConnectionResetError:
                reset += 1
        total = len(held) + reset
        wait_for(lambda: closed_by_peer(held) + reset >= total - PEER_HARD_CAP,
                 "the connections past the hard cap closed")
    finally:
        close_all(held)
    # Once they are gone, the peer is served again.
    wait_for(lambda: front.get("/api/sweeps", peer="127.0.0.2")[0] == 200,
             "127.0.0.2 served again")
    # Both refusals are counted, for Prometheus.
    text = urllib.request.urlopen(front.metrics_url, timeout=30).read().decode()
    for counter in ("requests_denied", "denied_connections"):
        assert sample(text, "haproxy_frontend_%s_total" % counter,
                      proxy="tailsweep") >= 1, counter


def test_floods_are_held_by_the_proxy_and_starve_no_one(front):
    pid = front.services.procs[0].pid
    threads_before = threads_of(pid)
    held = []
    try:
        # From many peers, each under its cap.
        peers = ["127.0.1.%d" % i for i in range(1, 3 * FLOOD // 50 + 2)]
        kinds = [b""] * FLOOD + [b"GET /metrics HT"] * FLOOD + [b"G"] * FLOOD
        for i, first in enumerate(kinds):
            held += front.connections(1, peers[i // 50], first)
        with dripping(held[2 * FLOOD:], b"E", 1.0):
            failed, missed, slowest = probe(front)
            threads = threads_of(pid)
        print("%d idle + %d half-sent + %d byte-a-second connections through "
              "the proxy: %d failed, %d over %.1f s, slowest %.3f s; "
              "coordinator threads %d -> %d, %d MB; haproxy %d MB" % (
                  FLOOD, FLOOD, FLOOD, failed, missed, DEADLINE_S, slowest,
                  threads_before, threads, status_field(pid, "VmRSS") // 1024,
                  status_field(front.proxy.pid, "VmRSS") // 1024))
        assert (failed, missed) == (0, 0), slowest
        # The connections wait in the proxy's event loop: the coordinator
        # has no thread for any of them.
        assert threads < threads_before + 50, (threads_before, threads)
    finally:
        close_all(held)


def test_a_dribbled_request_head_is_cut_at_its_deadline(front):
    s = front.connections(1, "127.0.0.4", b"G")[0]
    s.settimeout(30)
    request = b"ET /api/sweeps HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 1000
    answer = b""
    start = time.monotonic()
    try:
        for i in range(len(request)):
            try:
                s.send(request[i:i + 1])
            except OSError:
                break
            # Whatever the proxy said, once it says it.
            s.settimeout(0.5)
            try:
                answer = s.recv(4096)
            except socket.timeout:
                continue
            break
    finally:
        s.close()
    took = time.monotonic() - start
    print("a byte each 0.5 s: %r after %.1f s" % (answer[:12], took))
    # The whole head was due within 10 s: it is cut there, not when the
    # client stops (at 1,000 bytes, 500 s).
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


def test_the_coordinator_counts_the_forwarded_peer(front):
    def burst(peer, spoof=None):
        codes = []
        for _ in range(40):
            c = http.client.HTTPConnection("127.0.0.1", front.port,
                                           timeout=30,
                                           source_address=(peer, 0))
            headers = {"Authorization": "Bearer " + front.services.token}
            if spoof:
                headers["X-Forwarded-For"] = spoof
            c.request("GET", "/api/sweeps/nope/report", headers=headers)
            codes.append(c.getresponse().status)
            c.close()
        return codes
    # One peer spends its whole-sweep reads (a burst of 20, then 429) ...
    codes = burst("127.0.0.5")
    assert codes[0] == 404 and 429 in codes, codes
    # ... which another peer behind the same proxy still has.
    assert front.get("/api/sweeps/nope/report", peer="127.0.0.6")[0] == 404
    # A client cannot pose as a fresh peer: the proxy sets the header.
    assert 429 in burst("127.0.0.5", spoof="127.0.0.99"), "spoofed"
    with open(os.path.join(front.services.root,
                           "tailsweep-coordinator.log")) as f:
        log = f.read()
    assert "from 127.0.0.5: refused (rate_limited)" in log, log
    assert "127.0.0.99" not in log


def test_a_declared_oversized_body_is_refused_before_it_is_sent(front):
    s = front.connections(1, "127.0.0.7")[0]
    s.settimeout(30)
    try:
        s.sendall(b"POST /api/sweeps HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Authorization: Bearer " + front.services.token.encode() +
                  b"\r\nContent-Length: 100000000\r\n\r\n{")
        answer = s.recv(4096)
    finally:
        s.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"over 67108864 bytes" in answer


def test_the_login_token_never_reaches_the_proxy_log(front):
    assert front.get("/?token=sEcReT-wrong", token="")[0] == 401
    # haproxy logs a request once it ends: wait for that line.
    wait_for(lambda: "GET / 401" in open(front.log_path).read(),
             "the proxy's log line")
    assert "sEcReT" not in open(front.log_path).read()
