"""Sweeps from Python: status, jobs, results and unsampled curves, as
records (standard library only) or pandas DataFrames.

    import tailsweep
    c = tailsweep.Client.open("runs/smoke/tailsweep.db")   # offline
    s = c.sweep("smoke")
    s.status()                        # {"counts": {...}, "total": 48, ...}
    df = s.results()                  # one row per done job
    h = s.history(names=["loss"])     # long format: job_id, name, step, value, epoch

Offline, the client reads the coordinator's SQLite file read-only: safe
beside a live coordinator (SQLite's WAL lets readers and the writer go on
together), or a copy made by `tailsweep snapshot`. What it reads and how
(the tables, the state a sweep sees a job in) is docs/cli.md's "The
database"; the frames' columns are `tailsweep export`'s (docs/python.md).
pandas is imported only when a DataFrame is asked for.
"""

import datetime
import json
import math
import os
import re
import sqlite3
import urllib.parse

from tailsweep.errors import (FailedPrecondition, InvalidArgument, NotFound,
                              Unavailable)

# A sweep's view of a job's state (coordinator/store_internal.h,
# kSweepJobState): done and failed as they are, else cancelled when this
# sweep cancelled it, else the job's own.
_SWEEP_JOB_STATE = ("(CASE WHEN j.state IN ('done', 'failed') THEN j.state "
                    "WHEN sj.cancelled <> 0 THEN 'cancelled' ELSE j.state END)")
STATES = ("queued", "leased", "done", "failed", "cancelled")
_PARAM_PREFIX = "params_"
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")
_NUMBER_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _typed(text):
    """A parameter's text as its type (a number or boolean when it is one;
    JSON lists too), as `tailsweep export` types grid values."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(value, (bool, int, float, list)):
        return value
    return text


def _number(value):
    """A result's number: JSON's, or the protocol's "nan", "inf", "-inf"."""
    if isinstance(value, str) and value in _NUMBER_WORDS:
        return _NUMBER_WORDS[value]
    return value


def _flatten(prefix, value, row):
    """Nested objects (a command job's summary, outcomes, child) become
    dotted columns: summary.loss.last."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(prefix + "." + key if prefix else key, inner, row)
    else:
        row[prefix] = _number(value)


def _utc(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def _pandas():
    try:
        import pandas  # lazily: it takes most of a second to import
    except ImportError:
        raise ImportError("tailsweep: DataFrames need pandas (apt install "
                          "python3-pandas), or pass output='records'") from None
    return pandas


def _frame(records, columns, output):
    if output == "records":
        return records
    if output != "pandas":
        raise InvalidArgument(
            "output '%s'; allowed: pandas, records" % output)
    return _pandas().DataFrame.from_records(records, columns=columns)


class Client:
    """A tailsweep coordinator's data. `Client.open(path)` reads its
    database file; every method raises tailsweep.Error subclasses with the
    message the database or coordinator gave."""

    def __init__(self, db):
        self._db = db

    @classmethod
    def open(cls, path):
        """The database at `path`, read-only (a live coordinator's, or a
        `tailsweep snapshot` copy). NotFound for a missing file,
        InvalidArgument for a file that is not a tailsweep database."""
        if not os.path.isfile(path):
            raise NotFound("%s: no such database file" % path)
        uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
        try:
            db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
            tables = {r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            raise Unavailable(
                "%s: cannot read it (%s); a database in WAL mode needs its "
                "folder writable or its -wal and -shm files beside it: read a "
                "copy made by `tailsweep snapshot`" % (path, e))
        missing = {"sweeps", "sweep_jobs", "jobs", "results",
                   "metrics"} - tables
        if missing:
            raise InvalidArgument("%s: not a tailsweep database (no table %s)"
                                  % (path, ", ".join(sorted(missing))))
        db.execute("PRAGMA query_only = 1")
        client = cls(db)
        client.path = path
        client.journal_mode = mode
        return client

    def close(self):
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _rows(self, sql, args=()):
        try:
            return self._db.execute(sql, args)
        except sqlite3.DatabaseError as e:
            raise Unavailable("%s: %s" % (getattr(self, "path", "database"), e))

    def sweeps(self):
        """Every sweep, oldest first: name, kind, created (UTC datetime),
        counts by state (as the sweep sees its jobs), total."""
        out = {}
        for name, kind, created, state, n in self._rows(
                "SELECT s.name, s.kind, s.created_ms, %s, COUNT(sj.job_id) "
                "FROM sweeps s LEFT JOIN sweep_jobs sj USING (sweep_id) "
                "LEFT JOIN jobs j USING (job_id) GROUP BY s.sweep_id, 4 "
                "ORDER BY s.sweep_id" % _SWEEP_JOB_STATE):
            info = out.setdefault(name, {
                "name": name, "kind": kind, "created": _utc(created),
                "counts": dict.fromkeys(STATES, 0), "total": 0})
            if state is not None:
                info["counts"][state] = n
                info["total"] += n
        return list(out.values())

    def sweep(self, name):
        """The sweep `name`; NotFound naming the sweeps there are."""
        row = self._rows("SELECT sweep_id, kind FROM sweeps WHERE name = ?",
                         (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self._rows(
                "SELECT name FROM sweeps ORDER BY sweep_id")]
            listed = names[-20:]
            text = ", ".join(listed) if listed else "none yet"
            if len(names) > 20:
                text = "%d older, then %s" % (len(names) - 20, text)
            raise NotFound("no sweep '%s'; sweeps: %s" % (name, text))
        return Sweep(self, name, row[0], row[1])

    def job(self, job_id):
        """The job whose id is or starts with `job_id` (6 or more hex
        digits)."""
        if not re.fullmatch(r"[0-9a-f]{6,64}", job_id or ""):
            raise InvalidArgument(
                "job id '%s': 6 to 64 hex digits (lowercase)" % job_id)
        rows = self._rows(
            "SELECT job_id FROM jobs WHERE job_id >= ? AND job_id < ? "
            "LIMIT 2", (job_id, job_id + "g")).fetchall()
        if not rows:
            raise NotFound("no job '%s'" % job_id)
        if len(rows) > 1:
            raise FailedPrecondition(
                "job id prefix '%s' matches more than one job; give more "
                "digits" % job_id)
        return Job(self, rows[0][0])


class Sweep:
    """One sweep's jobs, results and curves."""

    def __init__(self, client, name, sweep_id, kind):
        self._c = client
        self.name = name
        self.kind = kind
        self._id = sweep_id

    def __repr__(self):
        return "Sweep(%r, kind=%r)" % (self.name, self.kind)

    def info(self):
        """name, kind, created, fixed (typed), spec (the text submitted),
        version (the build that expanded it)."""
        created, fixed, spec, version = self._c._rows(
            "SELECT created_ms, fixed, spec, version FROM sweeps "
            "WHERE sweep_id = ?", (self._id,)).fetchone()
        return {"name": self.name, "kind": self.kind,
                "created": _utc(created),
                "fixed": {k: _typed(v) for k, v in json.loads(fixed).items()},
                "spec": spec, "version": version}

    def status(self):
        """counts (by state, as this sweep sees its jobs), total, done
        fraction, runs_stopped_early and the training steps they saved."""
        counts = dict.fromkeys(STATES, 0)
        for state, n in self._c._rows(
                "SELECT %s, COUNT(*) FROM sweep_jobs sj JOIN jobs j "
                "USING (job_id) WHERE sj.sweep_id = ? GROUP BY 1"
                % _SWEEP_JOB_STATE, (self._id,)):
            counts[state] = n
        early, saved = self._c._rows(
            "SELECT COUNT(*), COALESCE(SUM(MAX(COALESCE(json_extract("
            "r.result, '$.config.steps'), 0) - COALESCE(json_extract("
            "r.result, '$.steps_done'), 0), 0)), 0) FROM sweep_jobs sj "
            "JOIN results r USING (job_id) WHERE sj.sweep_id = ? AND "
            "json_type(r.result) = 'object' AND "
            "json_extract(r.result, '$.early_stop') IS NOT NULL",
            (self._id,)).fetchone()
        total = sum(counts.values())
        return {"sweep": self.name, "counts": counts, "total": total,
                "done_fraction": counts["done"] / total if total else 0.0,
                "runs_stopped_early": early, "steps_saved": saved}

    def _where(self, where, column="j.params"):
        """SQL and arguments for `where`: {key: value or [values]}, keys
        compared with the job's parameters as text."""
        sql, args = "", []
        for key, value in (where or {}).items():
            if not _KEY.match(key):
                raise InvalidArgument("where: key '%s' is not a parameter "
                                      "name" % key)
            values = value if isinstance(value, (list, tuple, set)) else [value]
            texts = [json.dumps(v) if isinstance(v, bool) else str(v)
                     for v in values]
            sql += " AND json_extract(%s, ?) IN (%s)" % (
                column, ", ".join("?" * len(texts)))
            args += ['$."%s"' % key] + texts
        return sql, args

    def jobs(self, state=None, where=None):
        """The sweep's jobs in grid order, lazily: Job objects with state
        (as this sweep sees it), attempt, cell, params and result."""
        if state is not None and state not in STATES:
            raise InvalidArgument("state '%s'; allowed: %s"
                                  % (state, ", ".join(STATES)))
        filt, args = self._where(where)
        sql = ("SELECT j.job_id, %s, j.state, j.attempt, j.epoch, j.holder, "
               "j.last_error, sj.cell, j.params, r.result FROM sweep_jobs sj "
               "JOIN jobs j USING (job_id) LEFT JOIN results r USING (job_id) "
               "WHERE sj.sweep_id = ?%s" % (_SWEEP_JOB_STATE, filt))
        if state is not None:
            sql += " AND %s = ?" % _SWEEP_JOB_STATE
            args.append(state)
        cursor = self._c._rows(sql + " ORDER BY sj.position",
                               [self._id] + args)
        while True:
            page = cursor.fetchmany(1000)
            if not page:
                return
            for row in page:
                yield Job(self._c, row[0], row)

    def results(self, per="job", columns=None, where=None, output="pandas"):
        """One row per done job, in grid order, with `tailsweep export
        --what results`'s columns: job_id, params_KEY (the job's whole
        config when its result has one, else its grid values; typed), then
        the result's fields (not config or samples); a tails sweep gives
        one row per testbed row. Nested objects become dotted columns
        (summary.loss.last); "nan"/"inf" become floats. `columns`: keep
        these (job_id always first); `where`: {param: value or [values]}.
        """
        if per != "job":
            raise InvalidArgument(
                "per '%s': offline results are per job (per='job'); the "
                "table per cell is `tailsweep results`" % per)
        filt, args = self._where(where)
        # Column by column (faster to build, and to make a frame of, than
        # a dict per row): column name -> values, None where a row has none.
        cols, n = {"job_id": []}, 0

        def put(name, value):
            column = cols.get(name)
            if column is None:
                column = cols[name] = [None] * n
            column.append(value)

        for job_id, cell, text in self._c._rows(
                "SELECT sj.job_id, sj.cell, r.result FROM sweep_jobs sj "
                "JOIN results r USING (job_id) JOIN jobs j USING (job_id) "
                "WHERE sj.sweep_id = ?%s ORDER BY sj.position" % filt,
                [self._id] + args):
            doc = json.loads(text)
            for one in doc if isinstance(doc, list) else [doc]:
                if not isinstance(one, dict):
                    continue
                row = {"job_id": job_id}
                config = one.get("config")
                if isinstance(config, dict):
                    for k, v in config.items():
                        row[_PARAM_PREFIX + k] = _number(v)
                else:
                    for k, v in json.loads(cell).items():
                        row[_PARAM_PREFIX + k] = _typed(v)
                for k, v in one.items():
                    if k not in ("config", "samples"):
                        _flatten(k, v, row)
                for k, v in row.items():
                    put(k, v)
                n += 1
                for column in cols.values():
                    if len(column) < n:
                        column.append(None)
        names = list(cols)
        if columns is not None:
            unknown = [c for c in columns if c not in cols]
            if unknown and n:
                raise InvalidArgument(
                    "columns %s: not in the results; allowed: %s"
                    % (", ".join(unknown), ", ".join(names)))
            names = ["job_id"] + [c for c in columns if c != "job_id"]
            cols = {c: cols.get(c, [None] * n) for c in names}
        if output == "records":
            return [dict(zip(names, values))
                    for values in zip(*(cols[c] for c in names))]
        if output != "pandas":
            raise InvalidArgument(
                "output '%s'; allowed: pandas, records" % output)
        return _pandas().DataFrame({c: cols[c] for c in names},
                                   columns=names)

    def history(self, names=None, jobs=None, step_min=None, step_max=None,
                output="pandas"):
        """Every stored point, unsampled, in long format: job_id, name,
        step, value (NaN kept), epoch (the lease that sent it); in grid
        order, then by name and step. `names`, `jobs` (ids) and the step
        range narrow it."""
        sql = ("SELECT m.job_id, m.name, m.step, m.value, m.epoch "
               "FROM sweep_jobs sj JOIN metrics m ON m.job_id = sj.job_id "
               "WHERE sj.sweep_id = ?")
        args = [self._id]
        if names is not None:
            names = [names] if isinstance(names, str) else list(names)
            sql += " AND m.name IN (%s)" % ", ".join("?" * len(names))
            args += names
        if jobs is not None:
            jobs = [jobs] if isinstance(jobs, str) else list(jobs)
            sql += " AND sj.job_id IN (%s)" % ", ".join("?" * len(jobs))
            args += jobs
        if step_min is not None:
            sql += " AND m.step >= ?"
            args.append(int(step_min))
        if step_max is not None:
            sql += " AND m.step <= ?"
            args.append(int(step_max))
        rows = self._c._rows(sql + " ORDER BY sj.position, m.name, m.step",
                             args).fetchall()
        columns = ["job_id", "name", "step", "value", "epoch"]
        if output == "records":
            return [{"job_id": j, "name": n, "step": s,
                     "value": math.nan if v is None else v, "epoch": e}
                    for j, n, s, v, e in rows]
        frame = _frame(rows, columns, output)
        frame["value"] = frame["value"].astype("float64")  # None: NaN
        for c in ("job_id", "name"):
            frame[c] = frame[c].astype("category")
        for c in ("step", "epoch"):
            frame[c] = frame[c].astype("int64")
        return frame


class Job:
    """One job: its state, parameters, result, curves and logs."""

    def __init__(self, client, job_id, row=None):
        self._c = client
        self.id = job_id
        if row is None:
            row = client._rows(
                "SELECT j.job_id, j.state, j.state, j.attempt, j.epoch, "
                "j.holder, j.last_error, NULL, j.params, r.result FROM jobs j "
                "LEFT JOIN results r USING (job_id) WHERE j.job_id = ?",
                (job_id,)).fetchone()
        (_, self.state, self.job_state, self.attempt, self.epoch, self.holder,
         self.last_error, cell, params, result) = row
        self.cell = ({k: _typed(v) for k, v in json.loads(cell).items()}
                     if cell else None)
        self.params = {k: _typed(v) for k, v in json.loads(params).items()}
        self.result = json.loads(result) if result else None

    def __repr__(self):
        return "Job(%r, state=%r)" % (self.id[:12], self.state)

    def logs(self):
        """The stderr tail each finished attempt sent, oldest first: epoch,
        outcome (done | failed), stderr_tail, at (UTC datetime)."""
        return [{"epoch": e, "outcome": o, "stderr_tail": t, "at": _utc(at)}
                for e, o, t, at in self._c._rows(
                    "SELECT epoch, outcome, stderr_tail, at_ms FROM job_logs "
                    "WHERE job_id = ? ORDER BY epoch", (self.id,))]

    def history(self, names=None, step_min=None, step_max=None,
                output="records"):
        """This job's points (as Sweep.history), records by default."""
        sql = "SELECT name, step, value, epoch FROM metrics WHERE job_id = ?"
        args = [self.id]
        if names is not None:
            names = [names] if isinstance(names, str) else list(names)
            sql += " AND name IN (%s)" % ", ".join("?" * len(names))
            args += names
        if step_min is not None:
            sql += " AND step >= ?"
            args.append(int(step_min))
        if step_max is not None:
            sql += " AND step <= ?"
            args.append(int(step_max))
        records = [{"job_id": self.id, "name": n, "step": s,
                    "value": math.nan if v is None else v, "epoch": e}
                   for n, s, v, e in self._c._rows(
                       sql + " ORDER BY name, step", args)]
        return _frame(records, ["job_id", "name", "step", "value", "epoch"],
                      output)
