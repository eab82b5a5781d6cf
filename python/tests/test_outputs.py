"""What runs made, through the Python client: a command job's whole stdout
and stderr (Job.logs, Job.log_bytes), its artifacts (Job.artifacts,
Job.download_artifacts) and its checkpoint directory (Job.download_checkpoint)
from a real coordinator and worker (the executables in $TAILSWEEP_BIN_DIR);
and, without them, the checks that keep a download honest: a checkpoint tar
with a hostile entry is refused whole, bytes that do not match their SHA-256
are not kept, an artifact name that climbs out is refused."""

import hashlib
import http.server
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import threading

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402
from tailsweep import _outputs  # noqa: E402
from services import BIN, Services, wait_for  # noqa: E402

needs_services = pytest.mark.skipif(
    not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
    reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator")

# 200 lines of stdout; a byte that is not UTF-8 on stderr; a plot; a
# checkpoint directory (its COMPLETE written last). (YAML folds the quoted
# lines into one: the ';' end each command.)
OUTPUTS = r"""name: outputs
kind: command
command: [sh, -c, 'cd "$TAILSWEEP_JOB_DIR" || exit 9;
  i=1; while [ $i -le 200 ]; do echo "line $i of run $0"; i=$((i+1)); done;
  printf "warn \377 done\n" >&2;
  mkdir -p plots && printf "PNG\0one" > plots/a.png && echo no > plots/b.txt;
  d="$TAILSWEEP_CHECKPOINT_DIR/step-5"; mkdir -p "$d/sub";
  printf "w\0eights" > "$d/model.bin"; echo five > "$d/sub/state";
  touch "$d/COMPLETE"', "${x}"]
grid: {x: [7]}
artifacts: [plots/*.png]
"""
STDOUT = "".join("line %d of run 7\n" % i for i in range(1, 201))


@pytest.fixture(scope="module")
def services():
    root = tempfile.mkdtemp(prefix="tailsweep_outputs_")
    s = Services(root)
    try:
        s.submit("outputs", OUTPUTS)
        s.client = tailsweep.Client(s.http, token=s.token)
        sweep = s.client.sweep("outputs")
        worker = s.worker()
        # Done is reported after the logs, artifacts and final checkpoint
        # are stored.
        wait_for(lambda: sweep.status().counts["done"] +
                 sweep.status().counts["failed"] == 1, "the job to end")
        job = next(sweep.jobs())
        assert job.state == "done", job.last_error
        s.job = s.client.job(job.id)
        worker.wait(timeout=60)
        yield s
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)


@needs_services
def test_logs_are_the_whole_text_byte_for_byte(services):
    job = services.job
    assert job.logs() == STDOUT
    assert job.log_bytes() == STDOUT.encode()
    assert job.logs("stdout", attempt=job.epoch) == STDOUT
    assert job.log_bytes("stderr") == b"warn \xff done\n"
    assert job.logs("stderr") == "warn \ufffd done\n"
    # As over a network: gzip answers, read the same.
    zipped = tailsweep.Client(services.http, token=services.token,
                              compress=True).job(job.id)
    assert zipped.log_bytes() == STDOUT.encode()
    files = {(f.kind, f.name): f for f in job.files()}
    assert set(files) == {("log", "stdout"), ("log", "stderr"),
                          ("artifact", "plots/a.png")}
    out = files[("log", "stdout")]
    assert (out.epoch, out.original_bytes, out.cut) == \
        (job.epoch, len(STDOUT), False)
    with pytest.raises(tailsweep.NotFound):
        job.logs(attempt=job.epoch + 5)
    for bad in (lambda: job.logs("both"), lambda: job.logs(attempt=0),
                lambda: job.log_bytes(attempt=True)):
        with pytest.raises(tailsweep.InvalidArgument):
            bad()
    # The stderr tails, as before 0.3.0, read online and offline alike.
    tails = job.log_tails()
    assert tails and "warn" in tails[-1]["stderr_tail"]
    offline = tailsweep.Client.open(services.db).job(job.id)
    assert offline.log_tails() == tails
    for what in (offline.logs, offline.artifacts, offline.checkpoints):
        with pytest.raises(tailsweep.NotAvailableOffline,
                           match="--data-dir"):
            what()


@needs_services
def test_artifacts_are_listed_and_downloaded_as_they_were(services,
                                                           tmp_path):
    job = services.job
    png = b"PNG\0one"
    assert job.artifacts() == [tailsweep.client.Artifact(
        "plots/a.png", len(png), hashlib.sha256(png).hexdigest(),
        job.epoch)]
    paths = job.download_artifacts(tmp_path / "got")
    assert paths == [tmp_path / "got" / "plots" / "a.png"]
    assert paths[0].read_bytes() == png
    # Again: the file replaced, nothing else left beside it.
    assert job.download_artifacts(str(tmp_path / "got")) == paths
    assert sorted(os.listdir(tmp_path / "got" / "plots")) == ["a.png"]


@needs_services
def test_the_checkpoint_comes_back_as_its_directory(services, tmp_path):
    job = services.job
    kept = job.checkpoints()
    assert [c.step for c in kept] == [5]
    assert kept[0].name == "step-00000005.pt" and kept[0].bytes > 0
    assert (kept[0].best, kept[0].metric) == (False, None)
    assert job.best_checkpoints() == [] and job.best_checkpoint_step is None
    assert job.not_kept == []  # nothing over a cap
    dest = tmp_path / "ck"
    for _ in range(2):  # the second replaces the first
        top = job.download_checkpoint(dest)
        assert top == dest / "step-5"
        assert (top / "model.bin").read_bytes() == b"w\0eights"
        assert (top / "sub" / "state").read_text() == "five\n"
        assert (top / "COMPLETE").is_file()
        # The tar and every temporary name are gone.
        assert os.listdir(dest) == ["step-5"]
    zipped = tailsweep.Client(services.http, token=services.token,
                              compress=True).job(job.id[:10])
    assert zipped.download_checkpoint(tmp_path / "by-step", step=5) == \
        tmp_path / "by-step" / "step-5"
    assert zipped.download_artifacts(tmp_path / "by-step")[0].read_bytes() \
        == b"PNG\0one"
    with pytest.raises(tailsweep.NotFound):
        job.download_checkpoint(tmp_path / "none", step=3)
    with pytest.raises(tailsweep.InvalidArgument):
        job.download_checkpoint(tmp_path / "none", step=0)


# Without services: hostile tars, damaged downloads, climbing names.

def make_tar(path, entries):
    """A tar at `path` of `entries`: (name, kind, data or link target),
    kind one of file, dir, symlink, hardlink, device."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            info.mode = 0o755 if kind == "dir" else 0o644
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
                         "hardlink": tarfile.LNKTYPE,
                         "device": tarfile.CHRTYPE}[kind]
            if kind in ("symlink", "hardlink"):
                info.linkname = data
            tar.addfile(info)


GOOD = [("step-5", "dir", None), ("step-5/COMPLETE", "file", b""),
        ("step-5/sub", "dir", None), ("step-5/sub/w", "file", b"x" * 3000)]


@pytest.mark.parametrize("entry,why", [
    (("../x", "file", b"out"), "'..'"),
    (("step-5/../../x", "file", b"out"), "'..'"),
    (("/abs", "file", b"out"), "absolute"),
    (("/tmp/step-5/x", "file", b"out"), "absolute"),
    (("step-5/link", "symlink", "/etc/passwd"), "symbolic link"),
    (("step-5/hard", "hardlink", "/etc/passwd"), "hard link"),
    (("step-5/null", "device", None), "device"),
    (("step-6/x", "file", b"out"), "2 top directories"),
    (("x", "file", b"out"), "outside the checkpoint's directory"),
    (("step-5/COMPLETE/x", "file", b"out"), "below the file"),
])
def test_a_tar_with_any_hostile_entry_is_refused_whole(tmp_path, entry,
                                                       why):
    tar = tmp_path / "step-00000005.pt"
    dest = tmp_path / "out"
    dest.mkdir()
    make_tar(tar, GOOD[:2] + [entry] + GOOD[2:])
    with pytest.raises(tailsweep.InvalidArgument, match=why):
        _outputs.unpack(tar, dest)
    assert os.listdir(dest) == []  # nothing written, no stage left
    assert not (tmp_path / "x").exists() and not os.path.lexists(
        tmp_path / "step-5")
    assert tar.is_file()  # kept, for a look


def test_a_good_tar_unpacks_whole_and_replaces_an_older_copy(tmp_path):
    tar = tmp_path / "t.pt"
    make_tar(tar, GOOD)
    assert _outputs.is_plain_tar(tar)
    old = tmp_path / "step-5"
    old.mkdir()
    (old / "stale").write_text("old")
    top = _outputs.unpack(tar, tmp_path)
    assert top == old
    assert sorted(p.relative_to(top).as_posix() for p in top.rglob("*")) \
        == ["COMPLETE", "sub", "sub/w"]
    assert (top / "sub" / "w").read_bytes() == b"x" * 3000
    assert sorted(os.listdir(tmp_path)) == ["step-5", "t.pt"]
    # A train job's file is not a tar.
    pt = tmp_path / "model.pt"
    pt.write_bytes(b"PK\x03\x04" + b"\0" * 600)
    assert not _outputs.is_plain_tar(pt)


class Fake:
    """A loopback coordinator answering GETs from `routes`: path ->
    (status, headers, body bytes)."""

    def __init__(self, routes):
        fake = self
        self.routes = routes

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                status, headers, body = fake.routes[self.path.split("?")[0]]
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

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


JOB = "ab" * 32


@pytest.fixture
def fake():
    servers = []

    def make(routes):
        routes["/api/jobs/" + JOB] = (200, {}, json.dumps(
            {"job": {"job_id": JOB, "state": "done"}}).encode())
        servers.append(Fake(routes))
        return tailsweep.Client(servers[-1].url).job(JOB)
    yield make
    for s in servers:
        s.close()


def checkpoint_answer(body, sha=None):
    return (200, {"X-Checkpoint-Step": "5",
                  "X-Checkpoint-Sha256": sha or
                  hashlib.sha256(body).hexdigest(),
                  "Content-Disposition":
                  'attachment; filename="step-00000005.pt"'}, body)


def test_bytes_that_do_not_match_their_sha256_are_not_kept(fake, tmp_path):
    body = b"torch weights" * 1000
    job = fake({"/api/jobs/%s/checkpoint" % JOB:
                checkpoint_answer(body, "0" * 64)})
    with pytest.raises(tailsweep.DataLoss, match="damaged on the way"):
        job.download_checkpoint(tmp_path)
    assert os.listdir(tmp_path) == []
    job = fake({"/api/jobs/%s/checkpoint" % JOB: checkpoint_answer(body)})
    path = job.download_checkpoint(tmp_path / "new")
    assert path == tmp_path / "new" / "step-00000005.pt"
    assert path.read_bytes() == body


def test_a_hostile_checkpoint_from_the_coordinator_is_not_unpacked(
        fake, tmp_path):
    tar = tmp_path / "evil.tar"
    make_tar(tar, [("step-5", "dir", None),
                   ("step-5/../../escaped", "file", b"x")])
    job = fake({"/api/jobs/%s/checkpoint" % JOB:
                checkpoint_answer(tar.read_bytes())})
    dest = tmp_path / "a" / "b"
    with pytest.raises(tailsweep.InvalidArgument, match="'..'"):
        job.download_checkpoint(dest)
    assert os.listdir(dest) == ["step-00000005.pt"]
    assert not (tmp_path / "escaped").exists() and \
        not (tmp_path / "a" / "escaped").exists()


def test_an_artifact_name_that_climbs_out_is_refused_first(fake, tmp_path):
    good = b"fine"
    listing = {"job_id": JOB, "artifacts": [
        {"name": "plots/a.png", "bytes": 4,
         "sha256": hashlib.sha256(good).hexdigest(), "epoch": "1"},
        {"name": "../../evil", "bytes": 4, "sha256": "0" * 64,
         "epoch": "1"}]}
    job = fake({"/api/jobs/%s/artifacts" % JOB:
                (200, {}, json.dumps(listing).encode()),
                "/api/jobs/%s/artifacts/plots/a.png" % JOB:
                (200, {}, good)})
    with pytest.raises(tailsweep.InvalidArgument, match="'..' component"):
        job.download_artifacts(tmp_path / "got")
    assert not (tmp_path / "got").exists()
    listing["artifacts"].pop()
    job = fake({"/api/jobs/%s/artifacts" % JOB:
                (200, {}, json.dumps(listing).encode()),
                "/api/jobs/%s/artifacts/plots/a.png" % JOB:
                (200, {}, good)})
    (tmp_path / "got").mkdir()
    os.symlink(tmp_path, tmp_path / "got" / "plots")
    with pytest.raises(tailsweep.InvalidArgument, match="symbolic link"):
        job.download_artifacts(tmp_path / "got")
    os.unlink(tmp_path / "got" / "plots")
    assert job.download_artifacts(tmp_path / "got") == [
        tmp_path / "got" / "plots" / "a.png"]
