"""A coordinator's HTTP API (tailsweep-coordinator --http-listen;
docs/operations.md, "Dashboard, HTTP API and Prometheus") as a source for
tailsweep.Client, in the row shapes _database.py gives. Answers are
proto3 JSON (64-bit integers as strings, "NaN"/"Infinity" for doubles);
errors {"error", "code"} become the exceptions named after the code.
"""

import csv
import gzip
import http.client
import io
import json
import math
import ssl
import urllib.error
import urllib.parse
import urllib.request

from tailsweep import errors
from tailsweep._database import STATES, check_job_id, utc, where_texts

_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf,
                 "-Infinity": -math.inf}
# The history route's words for non-finite values (tailsweep export's).
_CSV_DOUBLE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_BY_CODE = {"NOT_FOUND": errors.NotFound,
            "INVALID_ARGUMENT": errors.InvalidArgument,
            "OUT_OF_RANGE": errors.InvalidArgument,
            "FAILED_PRECONDITION": errors.FailedPrecondition,
            "UNAUTHENTICATED": errors.Unauthenticated,
            "PERMISSION_DENIED": errors.PermissionDenied,
            "UNAVAILABLE": errors.Unavailable,
            "RESOURCE_EXHAUSTED": errors.ResourceExhausted}


class _Cut(io.RawIOBase):
    """An answer's body as a binary file: a body cut off midway (the
    coordinator stopped, or a read failed there) raises Unavailable."""

    def __init__(self, body, answer, url):
        super().__init__()
        self._body, self._answer, self._url = body, answer, url

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            data = self._body.read(len(buffer))
        except (http.client.IncompleteRead, OSError, EOFError):
            raise errors.Unavailable(
                "%s: the answer was cut off (the coordinator stopped or "
                "failed midway); read again" % self._url) from None
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        self._answer.close()
        super().close()


def _double(value):
    return _DOUBLE_WORDS.get(value, value) if isinstance(value, str) \
        else value


def _cells(items):
    return {kv["key"]: kv["value"] for kv in items or []}


class Http:
    def __init__(self, url, token=None, ca=None, timeout=60.0,
                 page_size=1000, compress=None):
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        self.where = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._page_size = page_size
        self._ssl = ssl.create_default_context(cafile=ca) if ca else None
        # Compressed answers pay off over a network, not on this machine.
        host = urllib.parse.urlsplit(self.where).hostname or ""
        self._gzip = (compress if compress is not None else
                      host not in ("localhost", "::1") and
                      not host.startswith("127."))
        self.last_headers = None

    def close(self):
        pass

    def _open(self, path, method="GET", body=None, **query):
        """The open answer to a request (a file object to read the body
        from, gunzipped); errors as exceptions."""
        query = {k: v for k, v in query.items() if v is not None}
        url = self.where + path + ("?" + urllib.parse.urlencode(query, True)
                                   if query else "")
        headers = {"Accept-Encoding": "gzip"} if self._gzip else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers,
                                         method=method)
        if self._token:
            request.add_header("Authorization", "Bearer " + self._token)
        try:
            answer = urllib.request.urlopen(request, timeout=self._timeout,
                                            context=self._ssl)
        except urllib.error.HTTPError as e:
            body = e.read()
            if e.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            try:
                doc = json.loads(body)
                message, code = doc["error"], doc["code"]
            except (ValueError, KeyError, TypeError):
                raise errors.Error("%s: HTTP %d" % (url, e.code)) from None
            raise _BY_CODE.get(code, errors.Error)(message, code) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise errors.Unavailable("cannot reach the coordinator at %s: %s"
                                     % (self.where, reason)) from None
        self.last_headers = answer.headers
        if answer.headers.get("Content-Encoding") == "gzip":
            body = _Cut(gzip.GzipFile(fileobj=answer), answer, url)
        else:
            body = _Cut(answer, answer, url)
        return io.BufferedReader(body, 1 << 20)

    def fetch(self, path, method="GET", body=None, **query):
        """The answer's body (bytes) to a request; errors as exceptions."""
        with self._open(path, method, body, **query) as answer:
            return answer.read()

    def get(self, path, **query):
        return json.loads(self.fetch(path, **query))

    def post(self, path, body=None):
        return json.loads(self.fetch(path, method="POST", body=body or {}))

    def boundaries(self, name):
        doc = self.get("/api/sweeps/%s/boundaries" % self._quoted(name))
        out = []
        for c in doc.get("cells", []):
            out.append({
                "cell": _cells(c.get("cell")), "state": c.get("state", ""),
                "estimate": _double(c.get("estimate", 0.0)),
                "bracket_lo": _double(c.get("bracket_lo", 0.0)),
                "bracket_hi": _double(c.get("bracket_hi", 0.0)),
                "runs": int(c.get("runs", 0)),
                "probes": [{"value": p.get("value", ""),
                            "x": _double(p.get("x", 0.0)),
                            "yes": int(p.get("yes", 0)),
                            "no": int(p.get("no", 0)),
                            "failed": int(p.get("failed", 0)),
                            "pending": int(p.get("pending", 0)),
                            "low": _double(p.get("low", 0.0)),
                            "high": _double(p.get("high", 0.0)),
                            "verdict": p.get("verdict", "")}
                           for p in c.get("probes", [])]})
        return doc.get("key", ""), out

    def cell_rows(self, name, over_seeds):
        """Results per cell (GetResults): (cell, {field: value}) rows, the
        train table's cells or the tails testbed's rows."""
        doc = self.get("/api/sweeps/%s/results" % self._quoted(name),
                       over_seeds="true" if over_seeds else "false")
        rows = sorted(doc.get("rows", []),
                      key=lambda r: int(r.get("position", 0)))
        out = []
        for r in rows + doc.get("tails", []):
            fields = {k: (_double(v) if isinstance(v, str) else v)
                      for k, v in r.items() if k not in ("cell", "position")}
            for k in ("jobs", "done", "collapsed", "diverged", "failed",
                      "stopped_early", "steps_saved", "n"):
                if k in fields:
                    fields[k] = int(fields[k])
            out.append((_cells(r.get("cell")), fields))
        return out

    # Writes: each returns the call's answer with its counts as ints.

    @staticmethod
    def _ints(doc, *names):
        return {n: int(doc.get(n, 0)) for n in names}

    def submit(self, text, source, overrides, dry_run, spec_dir):
        doc = self.post("/api/sweeps", {
            "spec_yaml": text, "source_name": source,
            "overrides": list(overrides), "dry_run": bool(dry_run),
            "spec_dir": spec_dir})
        out = {"sweep": doc["sweep"], "dry_run": bool(doc.get("dry_run"))}
        out.update(self._ints(doc, "jobs", "jobs_added", "jobs_existing"))
        out["spec"] = doc.get("spec_yaml", "")
        return out

    def cancel(self, name, job_id=None):
        path = "/api/sweeps/%s" % self._quoted(name)
        if job_id is not None:
            path += "/jobs/%s" % self._quoted(job_id)
        return self._ints(self.post(path + "/cancel"), "jobs_cancelled",
                          "jobs_kept_running")

    def resume(self, name):
        return self._ints(
            self.post("/api/sweeps/%s/resume" % self._quoted(name)),
            "jobs_requeued")

    def add_jobs(self, name, cells):
        doc = self.post("/api/sweeps/%s/jobs" % self._quoted(name),
                        {"cells": cells})
        out = self._ints(doc, "jobs_added", "jobs_existing")
        out["job_ids"] = list(doc.get("job_ids", []))
        return out

    @staticmethod
    def _counts(doc):
        by_state = {k: int(v) for k, v in (doc.get("jobs_by_state") or
                                            {}).items()}
        return {s: by_state.get(s, int(doc.get(s, 0))) for s in STATES}

    def _quoted(self, name):
        return urllib.parse.quote(name, safe="")

    def api(self):
        return self.get("/api")

    def sweeps(self):
        out = []
        for s in self.get("/api/sweeps").get("sweeps", []):
            counts = self._counts(s.get("counts", {}))
            out.append({"name": s["name"], "kind": s["kind"],
                        "created": utc(s["created_ms"]), "counts": counts,
                        "total": sum(counts.values())})
        return out

    def info(self, name):
        doc = self.get("/api/sweeps/" + self._quoted(name))
        s = doc["sweep"]
        return {"name": s["name"], "kind": s["kind"],
                "created": utc(s["created_ms"]),
                "fixed": _cells(doc.get("fixed")),
                "spec": doc.get("spec_yaml", ""),
                "version": doc.get("version", "")}

    def status(self, name):
        doc = self.get("/api/sweeps/%s/status" % self._quoted(name))
        return (self._counts(doc), int(doc.get("runs_stopped_early", 0)),
                int(doc.get("steps_saved", 0)),
                doc.get("coordinator_problem", ""))

    def _job_pages(self, name, state, fields=None, where=None,
                   updated_since=None):
        # The filters go to the coordinator: where.KEY=VALUE, repeated for
        # several values of one key.
        filters = {}
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

    def job_rows(self, name, state=None, where=None, fields=None,
                 updated_since=None):
        for page in self._job_pages(name, state, fields, where,
                                    updated_since):
            for j in page:
                yield (j["job_id"], j.get("state", ""), j.get("job_state", ""),
                       int(j.get("attempt", 0)), int(j.get("epoch", 0)),
                       j.get("holder", ""), j.get("last_error", ""),
                       _cells(j.get("cell")), _cells(j.get("params")),
                       j.get("result_json") or None,
                       int(j.get("updated_ms", 0)))

    def result_rows(self, name, where=None):
        # Only what a results row is made of (and the params `where` reads).
        fields = "job_id,cell,result_json"
        for row in self.job_rows(name, "done", where, fields):
            if row[9]:
                yield row[0], json.dumps(row[7]), row[9]

    def _points(self, job_id, names, step_min, step_max):
        doc = self.get("/api/jobs/%s/metrics" % job_id,
                       names=",".join(names) if names else None,
                       step_min=step_min, step_max=step_max)
        return [(job_id, p["name"], int(p["step"]),
                 _double(p.get("value", 0.0)))
                for p in doc.get("points", [])]

    def _history(self, name, names, step_min, step_max):
        """The sweep's points as the history route's CSV, open: every page,
        streamed by the coordinator in one answer."""
        return self._open("/api/sweeps/%s/history" % self._quoted(name),
                          names=",".join(names) if names else None,
                          step_min=step_min, step_max=step_max,
                          format="csv")

    def point_rows(self, name, names, jobs, step_min, step_max):
        wanted = set(jobs) if jobs is not None else None
        with self._history(name, names, step_min, step_max) as body:
            reader = csv.reader(io.TextIOWrapper(body, encoding="utf-8",
                                                 newline=""))
            next(reader, None)  # the header
            return [(j, n, int(s), _CSV_DOUBLE.get(v) or float(v))
                    for j, n, s, v in reader
                    if wanted is None or j in wanted]

    def point_frame(self, pandas, name, names, jobs, step_min, step_max):
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

    def job_points(self, job_id, names, step_min, step_max):
        return self._points(job_id, names, step_min, step_max)

    def job_row(self, job_id):
        check_job_id(job_id)
        doc = self.get("/api/jobs/%s/logs" % job_id)
        full = doc["job_id"]
        # The job's own fields come from a sweep that holds it.
        for s in self.sweeps():
            for row in self.job_rows(s["name"]):
                if row[0] == full:
                    return (full, doc.get("state", row[2]), row[2]) + row[3:7] \
                        + (None, row[8], row[9], row[10])
        raise errors.NotFound("no job '%s' in any sweep" % job_id)

    def logs(self, job_id):
        doc = self.get("/api/jobs/%s/logs" % job_id)
        return sorted(({"epoch": int(g.get("epoch", 0)),
                        "outcome": g.get("outcome", ""),
                        "stderr_tail": g.get("stderr_tail", ""),
                        "at": utc(g.get("at_ms", 0))}
                       for g in doc.get("logs", [])),
                      key=lambda g: g["epoch"])
