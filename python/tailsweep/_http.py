"""A coordinator's HTTP API (tailsweep-coordinator --http-listen;
docs/operations.md, "Dashboard, HTTP API and Prometheus") as a source for
tailsweep.Client, in the row shapes _database.py gives. Answers are
proto3 JSON (64-bit integers as strings) with non-finite numbers as the
protocol's words "nan", "inf", "-inf" (_numbers.py); errors {"error",
"code"} become the exceptions named after the code. One connection per
client, kept open between requests (not shared between threads); a 429 or
503 answer is retried after its Retry-After, a few times.
"""

import csv
import gzip
import http.client
import io
import json
import socket
import ssl
import time
import urllib.parse
from typing import (TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple,
                    Type)

from tailsweep import __version__, errors
from tailsweep._database import (STATES, ArtifactRow, CheckpointRow,
                                 ControlRow, InfoRow, JobFileRow, JobRow,
                                 LogRow, Opened, Point, SettingsRow,
                                 StatusRow, SweepRow, Where, check_job_id,
                                 control_row, settings_row, sweep_row, utc,
                                 where_texts)
from tailsweep._numbers import Json, number

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

_BY_CODE: Dict[str, Type[errors.Error]] = {"NOT_FOUND": errors.NotFound,
            "INVALID_ARGUMENT": errors.InvalidArgument,
            "OUT_OF_RANGE": errors.InvalidArgument,
            "FAILED_PRECONDITION": errors.FailedPrecondition,
            "UNAUTHENTICATED": errors.Unauthenticated,
            "PERMISSION_DENIED": errors.PermissionDenied,
            "UNAVAILABLE": errors.Unavailable,
            "RESOURCE_EXHAUSTED": errors.ResourceExhausted,
            "DATA_LOSS": errors.DataLoss}
# A 429 or 503 is asked again after its Retry-After (seconds, at most
# _MAX_WAIT_S each), at most _RETRIES times.
_RETRIES = 5
# Not urllib's: the coordinator answers "Python-urllib/" (tailsweep 0.1.0's
# client) in proto3's old number spelling.
_USER_AGENT = "tailsweep-python/" + __version__
_MAX_WAIT_S = 30.0


class _Cut(io.RawIOBase):
    """An answer's body as a binary file: a body cut off midway (the
    coordinator stopped, or a read failed there) raises Unavailable."""

    def __init__(self, body: io.BufferedIOBase,
                 answer: http.client.HTTPResponse, url: str,
                 owner: "Http") -> None:
        super().__init__()
        self._body, self._answer, self._url = body, answer, url
        self._owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "WriteableBuffer") -> int:
        view = memoryview(buffer).cast("B")  # any bytes-like, byte by byte
        try:
            data = self._body.read(len(view))
        except (http.client.IncompleteRead, OSError, EOFError):
            raise errors.Unavailable(
                "%s: the answer was cut off (the coordinator stopped or "
                "failed midway); read again" % self._url) from None
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        # An answer left unread leaves its bytes on the kept connection:
        # that connection is dropped (the next request opens another).
        if not self._answer.isclosed():
            self._owner.close()
        self._answer.close()
        super().close()


def _cells(items: Optional[List[Json]]) -> Dict[str, str]:
    return {kv["key"]: kv["value"] for kv in items or []}


def _job_row(j: Json) -> JobRow:
    """A JobInfo's JSON as the row _database.py gives."""
    return JobRow(j["job_id"], j.get("state", ""), j.get("job_state", ""),
                  int(j.get("attempt", 0)), int(j.get("epoch", 0)),
                  j.get("holder", ""), j.get("last_error", ""),
                  _cells(j.get("cell")), _cells(j.get("params")),
                  j.get("result_json") or None, int(j.get("updated_ms", 0)),
                  float(j.get("gpu_hours", 0.0)),
                  float(j.get("cpu_hours", 0.0)),
                  int(j.get("best_checkpoint_step", 0)),
                  tuple(str(n) for n in j.get("not_kept") or []))


def _retry_after(answer: http.client.HTTPResponse) -> float:
    """Seconds a 429 or 503 answer asks to wait (1 when it does not say)."""
    try:
        return min(max(float(answer.getheader("Retry-After", "1")), 0.0),
                   _MAX_WAIT_S)
    except ValueError:
        return 1.0


class Http:
    def __init__(self, url: str, token: Optional[str] = None,
                 ca: Optional[str] = None, timeout: float = 60.0,
                 page_size: int = 1000,
                 compress: Optional[bool] = None) -> None:
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        self.where = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._page_size = page_size
        parts = urllib.parse.urlsplit(self.where)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._base = parts.path
        self._ssl = (ssl.create_default_context(cafile=ca) if ca else
                     ssl.create_default_context()) if self._tls else None
        # Compressed answers pay off over a network, not on this machine.
        self._gzip = (compress if compress is not None else
                      self._host not in ("localhost", "::1") and
                      not self._host.startswith("127."))
        self._connection: Optional[http.client.HTTPConnection] = None
        self.last_headers: Optional[http.client.HTTPMessage] = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._tls:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout,
                    context=self._ssl)
            else:
                self._connection = http.client.HTTPConnection(
                    self._host, self._port, timeout=self._timeout)
        return self._connection

    def _send(self, method: str, target: str, data: Optional[bytes],
              headers: Dict[str, str]) -> http.client.HTTPResponse:
        """The answer to one request on the kept connection; a connection
        the coordinator closed since the last answer is opened again once."""
        for fresh in (False, True):
            connection = self._connect()
            try:
                connection.request(method, target, body=data, headers=headers)
                return connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError, http.client.ImproperConnectionState):
                self.close()
                if fresh:
                    raise
            except (OSError, http.client.HTTPException):
                self.close()
                raise
        raise AssertionError("not reached: the second try returns or raises")

    def _open(self, path: str, method: str = "GET", body: Json = None,
              **query: object) -> io.BufferedReader:
        """The open answer to a request (a file object to read the body
        from, gunzipped); errors as exceptions. Read it whole (or close
        it) before the next request: the connection is shared."""
        query = {k: v for k, v in query.items() if v is not None}
        target = self._base + path + (
            "?" + urllib.parse.urlencode(query, True) if query else "")
        url = self.where + path
        headers = {"User-Agent": _USER_AGENT}
        if self._gzip:
            headers["Accept-Encoding"] = "gzip"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        for attempt in range(_RETRIES + 1):
            try:
                answer = self._send(method, target, data, headers)
            except (OSError, http.client.HTTPException) as e:
                reason = e.strerror if isinstance(e, OSError) and \
                    e.strerror else (str(e) or type(e).__name__)
                if isinstance(e, socket.timeout):
                    reason = "no answer in %s s" % self._timeout
                raise errors.Unavailable(
                    "cannot reach the coordinator at %s: %s"
                    % (self.where, reason)) from None
            if answer.status in (429, 503) and attempt < _RETRIES:
                answer.read()
                time.sleep(_retry_after(answer))
                continue
            break
        self.last_headers = answer.headers
        if answer.status >= 400:
            raw = answer.read()
            if answer.getheader("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
            try:
                doc = json.loads(raw)
                message, code = doc["error"], doc["code"]
            except (ValueError, KeyError, TypeError):
                raise errors.Error("%s: HTTP %d" % (url, answer.status)) \
                    from None
            raise _BY_CODE.get(code, errors.Error)(message, code) from None
        if answer.getheader("Content-Encoding") == "gzip":
            body = _Cut(gzip.GzipFile(fileobj=answer), answer, url, self)
        else:
            body = _Cut(answer, answer, url, self)
        return io.BufferedReader(body, 1 << 20)

    def fetch(self, path: str, method: str = "GET", body: Json = None,
              **query: object) -> bytes:
        """The answer's body (bytes) to a request; errors as exceptions."""
        with self._open(path, method, body, **query) as answer:
            return answer.read()

    def get(self, path: str, **query: object) -> Json:
        return json.loads(self.fetch(path, "GET", None, **query))

    def post(self, path: str, body: Json = None) -> Json:
        return json.loads(self.fetch(path, method="POST", body=body or {}))

    def boundaries(self, name: str) -> Tuple[str, List[Dict[str, Json]]]:
        doc = self.get("/api/sweeps/%s/boundaries" % self._quoted(name))
        out: List[Dict[str, Json]] = []
        for c in doc.get("cells", []):
            out.append({
                "cell": _cells(c.get("cell")), "state": c.get("state", ""),
                "estimate": number(c.get("estimate", 0.0)),
                "bracket_lo": number(c.get("bracket_lo", 0.0)),
                "bracket_hi": number(c.get("bracket_hi", 0.0)),
                "runs": int(c.get("runs", 0)),
                "probes": [{"value": p.get("value", ""),
                            "x": number(p.get("x", 0.0)),
                            "yes": int(p.get("yes", 0)),
                            "no": int(p.get("no", 0)),
                            "failed": int(p.get("failed", 0)),
                            "pending": int(p.get("pending", 0)),
                            "low": number(p.get("low", 0.0)),
                            "high": number(p.get("high", 0.0)),
                            "verdict": p.get("verdict", "")}
                           for p in c.get("probes", [])]})
        return doc.get("key", ""), out

    def results_table(self, name: str, over_seeds: bool) -> Json:
        """The sweep's kind's results table (GetResults): its JSON
        (core/schema/results_table.h's ResultsTableJson). FailedPrecondition
        from a coordinator older than the tables (0.2.0)."""
        doc = self.get("/api/sweeps/%s/results" % self._quoted(name),
                       over_seeds="true" if over_seeds else "false",
                       shape="table")
        table = doc.get("table")
        if not isinstance(table, dict) or not table.get("columns"):
            raise errors.FailedPrecondition(
                "the coordinator at %s is older than this client: results "
                "per cell need a coordinator of tailsweep 0.2.0 or newer "
                "(upgrade it, or use the client of its version)" % self.where)
        return table

    # Writes: each returns the call's answer with its counts as ints.

    @staticmethod
    def _ints(doc: Json, *names: str) -> Dict[str, int]:
        return {n: int(doc.get(n, 0)) for n in names}

    def submit(self, text: str, source: str, overrides: List[str],
               dry_run: bool, spec_dir: str) -> Dict[str, Json]:
        doc = self.post("/api/sweeps", {
            "spec_yaml": text, "source_name": source,
            "overrides": list(overrides), "dry_run": bool(dry_run),
            "spec_dir": spec_dir})
        out: Dict[str, Json] = {"sweep": doc["sweep"],
                                "dry_run": bool(doc.get("dry_run"))}
        out.update(self._ints(doc, "jobs", "jobs_added", "jobs_existing"))
        out["spec"] = doc.get("spec_yaml", "")
        return out

    def cancel(self, name: str,
               job_id: Optional[str] = None) -> Dict[str, int]:
        path = "/api/sweeps/%s" % self._quoted(name)
        if job_id is not None:
            path += "/jobs/%s" % self._quoted(job_id)
        return self._ints(self.post(path + "/cancel"), "jobs_cancelled",
                          "jobs_kept_running")

    def resume(self, name: str) -> Dict[str, int]:
        return self._ints(
            self.post("/api/sweeps/%s/resume" % self._quoted(name)),
            "jobs_requeued")

    def add_jobs(self, name: str,
                 cells: List[Dict[str, str]]) -> Dict[str, Json]:
        doc = self.post("/api/sweeps/%s/jobs" % self._quoted(name),
                        {"cells": cells})
        out: Dict[str, Json] = self._ints(doc, "jobs_added", "jobs_existing")
        out["job_ids"] = list(doc.get("job_ids", []))
        return out

    def update(self, name: str, priority: Optional[int] = None,
               max_running: Optional[int] = None,
               paused: Optional[bool] = None,
               tags: Optional[Dict[str, str]] = None,
               notes: Optional[str] = None) -> SettingsRow:
        """UpdateSweep: what is not None changes (a tag of value ""
        is removed); the settings now."""
        body: Dict[str, Json] = {}
        for key, value in (("priority", priority),
                           ("max_running", max_running), ("paused", paused),
                           ("notes", notes)):
            if value is not None:
                body[key] = value
        if tags:
            body["tags"] = dict(tags)
        doc = self.post("/api/sweeps/%s/settings" % self._quoted(name), body)
        return settings_row(control_row(doc.get("settings")))

    def remove(self, name: str, force: bool,
               dry_run: bool) -> Dict[str, int]:
        return self._ints(
            self.post("/api/sweeps/%s/remove" % self._quoted(name),
                      {"force": bool(force), "dry_run": bool(dry_run)}),
            "jobs", "shared_jobs", "running", "metric_points",
            "checkpoint_files", "checkpoint_bytes")

    @staticmethod
    def _control(doc: Json) -> ControlRow:
        """A GetSweepStatusResponse's settings and hours (zeros from a
        coordinator before them)."""
        return control_row(doc.get("settings"), doc.get("hours"))

    @staticmethod
    def _counts(doc: Json) -> Dict[str, int]:
        by_state = {k: int(v) for k, v in (doc.get("jobs_by_state") or
                                            {}).items()}
        return {s: by_state.get(s, int(doc.get(s, 0))) for s in STATES}

    def _quoted(self, name: str) -> str:
        return urllib.parse.quote(name, safe="")

    def api(self) -> Json:
        return self.get("/api")

    def sweeps(self) -> List[SweepRow]:
        out: List[SweepRow] = []
        for s in self.get("/api/sweeps").get("sweeps", []):
            counts = self._counts(s.get("counts", {}))
            out.append(sweep_row(s["name"], s["kind"], utc(s["created_ms"]),
                                 counts, sum(counts.values()),
                                 self._control(s.get("counts", {}))))
        return out

    def info(self, name: str) -> InfoRow:
        doc = self.get("/api/sweeps/" + self._quoted(name))
        s = doc["sweep"]
        return {"name": s["name"], "kind": s["kind"],
                "created": utc(s["created_ms"]),
                "fixed": _cells(doc.get("fixed")),
                "spec": doc.get("spec_yaml", ""),
                "version": doc.get("version", "")}

    def status(self, name: str) -> StatusRow:
        doc = self.get("/api/sweeps/%s/status" % self._quoted(name))
        return (self._counts(doc), int(doc.get("runs_stopped_early", 0)),
                int(doc.get("steps_saved", 0)),
                doc.get("coordinator_problem", ""), self._control(doc))

    def _job_pages(self, name: str, state: Optional[str],
                   fields: Optional[str] = None, where: Where = None,
                   updated_since: Optional[int] = None
                   ) -> Iterator[List[Json]]:
        # The filters go to the coordinator: where.KEY=VALUE, repeated for
        # several values of one key.
        filters: Dict[str, List[str]] = {}
        for key, value in (where or {}).items():
            filters["where." + key] = where_texts(value)
        token = ""
        while True:
            doc = self.get("/api/sweeps/%s/jobs" % self._quoted(name),
                           state=state, page_size=self._page_size,
                           page_token=token, fields=fields,
                           updated_since_ms=updated_since, **filters)
            yield doc.get("jobs", [])
            token = doc.get("next_page_token", "")
            if not token:
                return

    def job_rows(self, name: str, state: Optional[str] = None,
                 where: Where = None, fields: Optional[str] = None,
                 updated_since: Optional[int] = None) -> Iterator[JobRow]:
        for page in self._job_pages(name, state, fields, where,
                                    updated_since):
            for j in page:
                yield _job_row(j)

    def result_rows(self, name: str,
                    where: Where = None) -> Iterator[Tuple[str, str, str]]:
        # Only what a results row is made of (and the params `where` reads).
        fields = "job_id,cell,result_json"
        for row in self.job_rows(name, "done", where, fields):
            if row.result:
                yield row.job_id, json.dumps(row.cell), row.result

    def _points(self, job_id: str, names: Optional[List[str]],
                step_min: Optional[int],
                step_max: Optional[int]) -> List[Point]:
        doc = self.get("/api/jobs/%s/metrics" % job_id,
                       names=",".join(names) if names else None,
                       step_min=step_min, step_max=step_max)
        return [(job_id, p["name"], int(p["step"]),
                 number(p.get("value", 0.0)))
                for p in doc.get("points", [])]

    def _history(self, name: str, names: Optional[List[str]],
                 step_min: Optional[int],
                 step_max: Optional[int]) -> io.BufferedReader:
        """The sweep's points as the history route's CSV, open: every page,
        streamed by the coordinator in one answer."""
        return self._open("/api/sweeps/%s/history" % self._quoted(name),
                          names=",".join(names) if names else None,
                          step_min=step_min, step_max=step_max,
                          format="csv")

    def point_rows(self, name: str, names: Optional[List[str]],
                   jobs: Optional[List[str]], step_min: Optional[int],
                   step_max: Optional[int]) -> List[Point]:
        wanted = set(jobs) if jobs is not None else None
        with self._history(name, names, step_min, step_max) as body:
            reader = csv.reader(io.TextIOWrapper(body, encoding="utf-8",
                                                 newline=""))
            next(reader, None)  # the header
            return [(j, n, int(s), float(number(v)))
                    for j, n, s, v in reader
                    if wanted is None or j in wanted]

    def point_frame(self, pandas: Any, name: str, names: Optional[List[str]],
                    jobs: Optional[List[str]], step_min: Optional[int],
                    step_max: Optional[int]) -> Any:
        """point_rows as a DataFrame, parsed by pandas as the body
        streams in (never the whole body in memory)."""
        with self._history(name, names, step_min, step_max) as body:
            frame = pandas.read_csv(
                body, dtype={"job_id": "category", "name": "category",
                             "step": "int64", "value": "float64"},
                keep_default_na=False, na_values={"value": ["nan"]})
        if jobs is not None:
            frame = frame[frame["job_id"].isin(list(jobs))]
            frame = frame.reset_index(drop=True)
            for c in ("job_id", "name"):
                frame[c] = frame[c].cat.remove_unused_categories()
        return frame

    def job_points(self, job_id: str, names: Optional[List[str]],
                   step_min: Optional[int],
                   step_max: Optional[int]) -> List[Point]:
        return self._points(job_id, names, step_min, step_max)

    def job_row(self, job_id: str) -> JobRow:
        check_job_id(job_id)
        doc = self.get("/api/jobs/%s" % job_id)
        if "job" not in doc:
            raise errors.FailedPrecondition(
                "the coordinator at %s is older than this client: a job by "
                "id needs a coordinator of tailsweep 0.2.0 or newer"
                % self.where)
        row = _job_row(doc["job"])
        return row._replace(cell=None)  # a job may be in several sweeps

    def logs(self, job_id: str) -> List[LogRow]:
        doc = self.get("/api/jobs/%s/logs" % job_id)
        return sorted(({"epoch": int(g.get("epoch", 0)),
                        "outcome": g.get("outcome", ""),
                        "stderr_tail": g.get("stderr_tail", ""),
                        "at": utc(g.get("at_ms", 0))}
                       for g in doc.get("logs", [])),
                      key=lambda g: g["epoch"])

    # A job's stored files (0.3.0): checkpoints, logs, artifacts.

    def _job_doc(self, job_id: str) -> Json:
        check_job_id(job_id)
        return self.get("/api/jobs/%s" % job_id)

    def checkpoint_rows(self, job_id: str) -> List[CheckpointRow]:
        """GetJob's checkpoints, newest first ([] from a coordinator before
        0.3.0)."""
        out: List[CheckpointRow] = []
        for c in self._job_doc(job_id).get("checkpoints", []):
            best = bool(c.get("best", False))
            out.append({"step": int(c.get("step", 0)),
                        "name": c.get("name", ""),
                        "bytes": int(c.get("bytes", 0)),
                        "sha256": c.get("sha256", ""),
                        "uploaded_ms": int(c.get("uploaded_ms", 0)),
                        "best": best,
                        "metric": float(number(c.get("metric", 0.0)))
                        if best else None})
        return out

    def job_files(self, job_id: str) -> List[JobFileRow]:
        """GetJob's files, as the coordinator lists them."""
        return [{"kind": f.get("kind", ""), "name": f.get("name", ""),
                 "epoch": int(f.get("epoch", 0)),
                 "bytes": int(f.get("bytes", 0)),
                 "original_bytes": int(f.get("original_bytes", 0)),
                 "cut": bool(f.get("cut", False)),
                 "sha256": f.get("sha256", ""),
                 "uploaded_ms": int(f.get("uploaded_ms", 0))}
                for f in self._job_doc(job_id).get("files", [])]

    def artifact_rows(self, job_id: str) -> List[ArtifactRow]:
        check_job_id(job_id)
        doc = self.get("/api/jobs/%s/artifacts" % job_id)
        return [{"name": a["name"], "bytes": int(a.get("bytes", 0)),
                 "sha256": a.get("sha256", ""),
                 "epoch": int(a.get("epoch", 0))}
                for a in doc.get("artifacts", [])]

    def _opened(self, path: str, **query: object) -> Opened:
        body = self._open(path, "GET", None, **query)
        headers = self.last_headers
        return ({k.lower(): v for k, v in (headers.items() if headers
                                            is not None else [])}, body)

    def open_checkpoint(self, job_id: str, step: Optional[int]) -> Opened:
        """The stored checkpoint file (the newest, or of `step`), open:
        headers x-checkpoint-step, x-checkpoint-sha256,
        content-disposition, content-length."""
        check_job_id(job_id)
        return self._opened("/api/jobs/%s/checkpoint" % job_id, step=step)

    def open_log(self, job_id: str, stream: str,
                 attempt: Optional[int]) -> Opened:
        """An attempt's whole stdout or stderr (the newest attempt, or the
        one of epoch `attempt`), open: headers x-job-file-epoch,
        x-job-file-live, x-job-file-cut, x-job-file-original-bytes."""
        check_job_id(job_id)
        return self._opened("/api/jobs/%s/logs/%s" % (job_id, stream),
                            attempt=attempt)

    def open_artifact(self, job_id: str, name: str) -> Opened:
        """An artifact's bytes, open: header x-job-file-sha256."""
        check_job_id(job_id)
        return self._opened("/api/jobs/%s/artifacts/%s"
                            % (job_id, urllib.parse.quote(name, safe="/")))
