"""A real coordinator (gRPC and HTTP, a token) and workers, started from
the executables in $TAILSWEEP_BIN_DIR, for the client's tests."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import threading
import time

BIN = os.environ.get("TAILSWEEP_BIN_DIR", "")


def wait_for(done, what, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        if done():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def status_field(pid, field):
    """A number from /proc/PID/status (Threads; VmRSS in kB); -1 if absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def sample(text, name, **labels):
    """One sample's value in Prometheus text (exactly these labels), 0 when
    absent."""
    want = sorted('%s="%s"' % kv for kv in labels.items())
    for line in text.splitlines():
        m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
        if m and m.group(1) == name and \
                sorted(filter(None, (m.group(2) or "").split(","))) == want:
            return float(m.group(3))
    return 0.0


@contextlib.contextmanager
def dripping(sockets, byte, period):
    """While open: `byte` sent to each of `sockets` every `period` seconds
    (a send that fails is skipped)."""
    stop = threading.Event()

    def drip():
        while not stop.is_set():
            for s in sockets:
                try:
                    s.send(byte)
                except OSError:
                    pass
            stop.wait(period)
    dripper = threading.Thread(target=drip)
    dripper.start()
    try:
        yield
    finally:
        stop.set()
        dripper.join()


class Services:
    def __init__(self, root, *coordinator_args):
        self.root = root
        self.db = os.path.join(root, "ts.db")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.address = "127.0.0.1:%d" % s.getsockname()[1]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.http = "http://127.0.0.1:%d" % s.getsockname()[1]
        self.token = "client-test-token"
        token_file = os.path.join(root, "token")
        with open(token_file, "w") as f:
            f.write(self.token + "\n")
        self.env = dict(os.environ, TAILSWEEP_COORDINATOR=self.address,
                        TAILSWEEP_TOKEN_FILE=token_file,
                        OPENBLAS_NUM_THREADS="1")
        self.procs = []
        self.start("tailsweep-coordinator", "--db", self.db, "--data-dir",
                   os.path.join(root, "data"), "--listen", self.address,
                   "--http-listen", self.http[len("http://"):],
                   *coordinator_args)
        wait_for(lambda: self.cli("status").returncode == 0, "the coordinator")

    def start(self, name, *args):
        log = open(os.path.join(self.root, name + ".log"), "a")
        p = subprocess.Popen([os.path.join(BIN, name)] + list(args),
                             env=self.env, stdout=log, stderr=log)
        self.procs.append(p)
        return p

    def cli(self, *args):
        return subprocess.run([os.path.join(BIN, "tailsweep")] + list(args),
                              env=self.env, capture_output=True, text=True)

    def worker(self):
        return self.start("tailsweep-worker", "--devices", "cpu",
                          "--slots-per-device", "2", "--threads-per-slot", "1",
                          "--work-dir", os.path.join(self.root, "work"),
                          "--exit-when-idle")

    def submit(self, name, text):
        path = os.path.join(self.root, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        r = self.cli("submit", path)
        assert r.returncode == 0, r.stderr

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.wait(timeout=60)
