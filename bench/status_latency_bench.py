#!/usr/bin/env python3
"""Sweep.status() over HTTP while 8 jobs report metrics: its latency (p50,
p99, max) against the same calls on an idle coordinator, in one run.

Starts a coordinator (gRPC and HTTP on loopback) and 2 workers of 4 slots;
submits 8 `kind: command` jobs that each log a metrics line (3 metrics)
every 5 ms for --seconds; once all 8 run, times --calls status() calls
(one every 20 ms), then the same on the idle coordinator after the jobs.

  bench/status_latency_bench.py BIN_DIR [--seconds 30] [--calls 500]
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402

SPEC = """name: busy
kind: command
command: [sh, -c, 'end=$(($(date +%%s) + %d)); i=1; while [ $(date +%%s) -lt $end ]; do echo "{\\"step\\": $i, \\"loss\\": 0.5, \\"lr\\": 0.001, \\"acc\\": 0.9}" >> "$TAILSWEEP_METRICS_FILE"; i=$((i+1)); sleep 0.005; done', "${slot}"]
grid: {slot: [0, 1, 2, 3, 4, 5, 6, 7]}
"""


def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def timed(sweep, calls):
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        sweep.status()
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(0.02)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=500)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="tailsweep_status_bench_")
    grpc, http = "127.0.0.1:%d" % port(), "127.0.0.1:%d" % port()
    env = dict(os.environ, TAILSWEEP_COORDINATOR=grpc)
    procs = []

    def start(*argv):
        log = open(os.path.join(root, "%s-%d.log" % (argv[0], len(procs))),
                   "w")
        procs.append(subprocess.Popen([os.path.join(args.bin, argv[0])] +
                                      list(argv[1:]), env=env, stdout=log,
                                      stderr=log))
    try:
        start("tailsweep-coordinator", "--db", os.path.join(root, "ts.db"),
              "--data-dir", os.path.join(root, "data"), "--listen", grpc,
              "--http-listen", http)
        client = tailsweep.Client("http://" + http)
        for _ in range(200):
            try:
                client.sweeps()
                break
            except tailsweep.Unavailable:
                time.sleep(0.05)
        spec = os.path.join(root, "busy.yaml")
        with open(spec, "w") as f:
            f.write(SPEC % args.seconds)
        client.submit(spec)
        for w in range(2):
            start("tailsweep-worker", "--devices", "cpu",
                  "--slots-per-device", "4", "--threads-per-slot", "1",
                  "--work-dir", os.path.join(root, "work%d" % w),
                  "--exit-when-idle")
        sweep = client.sweep("busy")
        while sweep.status()["counts"]["leased"] < 8:
            time.sleep(0.05)
        busy = timed(sweep, args.calls)
        points = len(sweep.history(names=["loss"]))
        sweep.wait(poll=0.5)
        idle = timed(sweep, args.calls)
        print("status() over HTTP, %d calls each (ms):" % args.calls)
        for label, ms in (("8 jobs reporting", busy), ("idle", idle)):
            print("  %-17s p50 %6.2f  p99 %6.2f  max %6.2f"
                  % (label, percentile(ms, 0.5), percentile(ms, 0.99),
                     max(ms)))
        print("  loss points stored while busy: %d" % points)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
