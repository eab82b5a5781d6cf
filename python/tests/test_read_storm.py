"""A read storm over the HTTP gateway while workers lease, over real sockets
and processes: readers pull a sweep's whole history (the Python client's
bulk route, hundreds of thousands of points) in a loop and one rebuilds
its report in a loop, while a worker holding 3-second leases runs another
sweep. No lease expires, every job runs once, and no lease or heartbeat
call misses its deadline; outcomes are counted from the coordinator's own
/metrics, never slept for.

READ_STORM_READERS (default 4) sets how many pull the history.
"""

import os
import shutil
import sys
import tempfile
import threading
import urllib.error
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
from services import BIN, Services, sample, wait_for  # noqa: E402
import tailsweep  # noqa: E402

pytestmark = pytest.mark.skipif(
    not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
    reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator")

READERS = int(os.environ.get("READ_STORM_READERS", "4"))
DEADLINE_S = "1"  # a lease call or heartbeat slower than this misses it
STEPS = 25000      # per job and name: 8 jobs x 2 names = 400,000 points

BIG = """\
name: big
kind: command
command: [awk, 'BEGIN { for (i = 1; i <= %d; i++) printf("{\\"step\\": %%d, \\"loss\\": %%g, \\"acc\\": 0.5}\\n", i, 1 / i) > ENVIRON["TAILSWEEP_METRICS_FILE"] }', "${seed}"]
grid: {seed: [1, 2, 3, 4, 5, 6, 7, 8]}
""" % STEPS

LEASED = """\
name: leased
kind: command
command: [sh, -c, 'sleep 3', "${seed}"]
grid: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}
"""


def worker(s, *args):
    return s.start("tailsweep-worker", "--devices", "cpu",
                   "--slots-per-device", "2", "--threads-per-slot", "1",
                   "--work-dir", os.path.join(s.root, "work"),
                   "--exit-when-idle", *args)


def metrics(s):
    request = urllib.request.Request(
        s.http + "/metrics", headers={"Authorization": "Bearer " + s.token})
    return urllib.request.urlopen(request, timeout=60).read().decode()


@pytest.fixture(scope="module")
def services():
    root = tempfile.mkdtemp(prefix="tailsweep_storm_")
    s = Services(root)
    yield s
    s.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_a_read_storm_leaves_leases_alone(services):
    s = services
    s.submit("big", BIG)
    assert worker(s).wait(timeout=600) == 0
    client = tailsweep.Client.open(s.db)
    assert client.sweep("big").status()["counts"]["done"] == 8

    stop = threading.Event()
    pulls, reports, failures, limited = [], [], [], []

    def read(path, done):
        request = urllib.request.Request(
            s.http + path, headers={"Authorization": "Bearer " + s.token})
        while not stop.is_set():
            try:
                with urllib.request.urlopen(request, timeout=300) as answer:
                    size = 0
                    while not stop.is_set():
                        chunk = answer.read(1 << 20)
                        if not chunk:
                            done.append(size)
                            break
                        size += len(chunk)
            except urllib.error.HTTPError as e:
                if e.code != 429:
                    failures.append("%s: %s" % (path, e))
                    continue
                # Whole-sweep reads are rate-limited per peer (these
                # readers are one): as the answer says, retry after it.
                limited.append(path)
                stop.wait(float(e.headers.get("Retry-After", "1")))
            except (urllib.error.URLError, OSError) as e:
                failures.append("%s: %s" % (path, e))
    readers = [threading.Thread(target=read,
                                args=("/api/sweeps/big/history", pulls))
               for _ in range(READERS)]
    readers.append(threading.Thread(target=read,
                                    args=("/api/sweeps/big/report", reports)))
    for r in readers:
        r.start()
    try:
        # The storm is on once every reader has a whole answer behind it.
        wait_for(lambda: len(pulls) >= READERS and reports, "the storm", 600)
        s.submit("leased", LEASED)
        code = worker(s, "--lease-ms", "3000").wait(timeout=600)
    finally:
        stop.set()
        for r in readers:
            r.join()
    text = metrics(s)
    calls = {m: sample(text, "tailsweep_rpc_duration_seconds_count", method=m)
             for m in ("LeaseJobs", "Heartbeat")}
    late = {m: calls[m] - sample(text, "tailsweep_rpc_duration_seconds_bucket",
                                 method=m, le=DEADLINE_S)
            for m in calls}
    over_25ms = {m: calls[m] - sample(
        text, "tailsweep_rpc_duration_seconds_bucket", method=m, le="0.025")
        for m in calls}
    print("%d whole history pulls (%d bytes each), %d reports, %d reads told "
          "to retry (429); calls %s, over 25 ms %s, over %s s %s" % (
              len(pulls), pulls[0], len(reports), len(limited), calls,
              over_25ms, DEADLINE_S, late))
    assert not failures, failures[:3]
    assert code == 0
    assert sample(text, "tailsweep_leases_expired_total") == 0
    assert calls["Heartbeat"] > 0 and calls["LeaseJobs"] > 0, calls
    assert late == {"LeaseJobs": 0, "Heartbeat": 0}, late
    # Each job ran once: none lost its lease and ran again.
    jobs = list(client.sweep("leased").jobs())
    assert [(j.state, j.attempt) for j in jobs] == [("done", 1)] * 12, \
        [(j.state, j.attempt) for j in jobs]
