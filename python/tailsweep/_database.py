"""The database file as a source for tailsweep.Client: the coordinator's
SQLite file read-only, with the store's own rules (docs/cli.md, "The
results database"). Rows come out in the shapes client.py builds from:

  job rows:    JobRow(job_id, state, job_state, attempt, epoch, holder,
                last_error, cell {key: text} or None, params {key: text},
                result text or None, updated_ms)
  point rows:  (job_id, name, step, value or None for NaN)
  sweeps, a sweep's info, a job's logs: SweepRow, InfoRow, LogRow
  a sweep's settings and device hours: ControlRow (SettingsRow + hours)
  a job's stored files (online only): CheckpointRow, JobFileRow,
               ArtifactRow, and an open download (Opened)
"""

import datetime
import io
import json
import os
import re
import sqlite3
import time
import urllib.parse
from typing import (Any, Dict, Iterator, List, Mapping, NamedTuple, NoReturn,
                    Optional, Sequence, Tuple, TypedDict, Union)

from tailsweep._numbers import WORDS
from tailsweep.errors import (FailedPrecondition, InvalidArgument,
                              NotAvailableOffline, NotFound, ReadOnly,
                              Unavailable)

STATES = ("queued", "leased", "done", "failed", "cancelled")
# The file's marks (coordinator/store.h kStoreApplicationId,
# kStoreSchemaVersion; Python.Client checks they agree): 0 is an older,
# unmarked store.
APPLICATION_ID = 0x54535750
SCHEMA_VERSION = 9


def _store_sql() -> Dict[str, str]:
    """The store's read rules, store.sql's fragments by name: the file the
    coordinator compiles in (coordinator/store_sql.h), read the same way
    ("-- name: NAME" starts one; other "--" lines are comments)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "store.sql")
    out: Dict[str, List[str]] = {}
    current: Optional[List[str]] = None
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith("-- name: "):
                current = out.setdefault(line[len("-- name: "):].strip(), [])
            elif current is not None and line.strip() and \
                    not line.strip().startswith("--"):
                current.append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


_SQL = _store_sql()
# A sweep's view of a job's state (store.sql's sweep_job_state).
_SWEEP_JOB_STATE = _SQL["sweep_job_state"]
# The sweeps table's settings columns (coordinator/store_control.cc
# kSettingsColumns), with the value of a file written before they existed.
_SETTINGS_COLUMNS: Tuple[Tuple[str, object], ...] = (
    ("priority", 0), ("max_running", 0), ("paused", 0), ("held", ""),
    ("max_failures", 0), ("failures", 0), ("timeout_s", 0.0), ("tags", "{}"),
    ("notes", ""), ("stop_rule", ""))
_MS_PER_HOUR = 3600.0 * 1000.0
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")


# A point: job_id, metric name, step, value (None: NaN, as SQLite stores it).
Point = Tuple[str, str, int, Optional[float]]
# A `where` filter: {param: value or a list (tuple, set) of values}.
Where = Optional[Mapping[str, object]]


class SettingsRow(TypedDict):
    """How a sweep runs (proto SweepSettings): what the settings writes
    answer."""
    priority: int  # -1000..1000; higher leases first
    max_running: int  # 0: no limit
    paused: bool
    held: str  # why its queue is held (max_failures reached); "": not
    max_failures: int  # 0: never held
    failures: int  # failed attempts since the last resume
    timeout_s: float  # per attempt; 0: none
    tags: Dict[str, str]
    notes: str
    stop_rule: str  # the ASHA rule as JSON text; "": none


class ControlRow(SettingsRow):
    """A sweep's settings and the device hours its attempts used (proto
    SweepHours): GPU hours (x the job's GPUs), CPU hours (a CPU-only
    worker's slot); the preempted part is already in the totals."""
    gpu_hours: float
    cpu_hours: float
    preempted_gpu_hours: float
    preempted_cpu_hours: float


def control_row(settings: Optional[Mapping[str, Any]] = None,
                hours: Optional[Mapping[str, Any]] = None) -> ControlRow:
    """A ControlRow from the settings' and hours' fields (proto3 JSON:
    64-bit integers as strings, non-finite numbers as words); a field
    absent (a coordinator or file from before them) is its zero."""
    s: Mapping[str, Any] = settings or {}
    h: Mapping[str, Any] = hours or {}

    def real(doc: Mapping[str, Any], key: str) -> float:
        value = doc.get(key, 0.0)
        if isinstance(value, str):
            return float(WORDS[value]) if value in WORDS else float(value)
        return float(value or 0.0)

    tags = s.get("tags") or {}
    return {"priority": int(s.get("priority", 0)),
            "max_running": int(s.get("max_running", 0)),
            "paused": bool(s.get("paused", False)),
            "held": str(s.get("held", "")),
            "max_failures": int(s.get("max_failures", 0)),
            "failures": int(s.get("failures", 0)),
            "timeout_s": real(s, "timeout_s"),
            "tags": {str(k): str(v) for k, v in sorted(tags.items())},
            "notes": str(s.get("notes", "")),
            "stop_rule": str(s.get("stop_rule", "")),
            "gpu_hours": real(h, "gpu_hours"),
            "cpu_hours": real(h, "cpu_hours"),
            "preempted_gpu_hours": real(h, "preempted_gpu_hours"),
            "preempted_cpu_hours": real(h, "preempted_cpu_hours")}


def settings_row(control: ControlRow) -> SettingsRow:
    """The settings' part of a ControlRow."""
    return {"priority": control["priority"],
            "max_running": control["max_running"],
            "paused": control["paused"], "held": control["held"],
            "max_failures": control["max_failures"],
            "failures": control["failures"],
            "timeout_s": control["timeout_s"], "tags": control["tags"],
            "notes": control["notes"], "stop_rule": control["stop_rule"]}


# A sweep's counts by state, its early stops, the steps they saved, the
# coordinator's problem ("" when none), its settings and hours.
StatusRow = Tuple[Dict[str, int], int, int, str, ControlRow]


class SweepRow(ControlRow):
    """A sweep as a source lists it (client.SweepInfo is made from one):
    its settings and hours, and these."""
    name: str
    kind: str
    created: datetime.datetime
    counts: Dict[str, int]  # by state, as the sweep sees its jobs
    total: int


def sweep_row(name: str, kind: str, created: datetime.datetime,
              counts: Dict[str, int], total: int,
              control: ControlRow) -> SweepRow:
    return {"name": name, "kind": kind, "created": created, "counts": counts,
            "total": total, "priority": control["priority"],
            "max_running": control["max_running"],
            "paused": control["paused"], "held": control["held"],
            "max_failures": control["max_failures"],
            "failures": control["failures"],
            "timeout_s": control["timeout_s"], "tags": control["tags"],
            "notes": control["notes"], "stop_rule": control["stop_rule"],
            "gpu_hours": control["gpu_hours"],
            "cpu_hours": control["cpu_hours"],
            "preempted_gpu_hours": control["preempted_gpu_hours"],
            "preempted_cpu_hours": control["preempted_cpu_hours"]}


class InfoRow(TypedDict):
    """A sweep's own fields (client.Sweep.info gives them)."""
    name: str
    kind: str
    created: datetime.datetime
    fixed: Dict[str, str]  # {key: text}
    spec: str
    version: str


class LogRow(TypedDict):
    """A finished attempt's stderr tail (client.Job.log_tails gives
    them)."""
    epoch: int
    outcome: str
    stderr_tail: str
    at: datetime.datetime


class JobRow(NamedTuple):
    """A job as a source gives it (client.Job is made from one)."""
    job_id: str
    state: str  # as the sweep sees it
    job_state: str  # its own
    attempt: int
    epoch: int
    holder: str
    last_error: str
    cell: Optional[Dict[str, str]]  # None: read by id, not through a sweep
    params: Dict[str, str]
    result: Optional[str]
    updated_ms: int
    # Device time its attempts used, a live lease's to now (store.sql's
    # job_hours); 0 from a file or coordinator from before them.
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    # The step of its best checkpoint kept for its metric (`checkpoints:
    # {keep: best}`); 0: none, or not known (a database file, a coordinator
    # before 0.3.0).
    best_checkpoint_step: int = 0
    # What its attempts made that was not stored, and why (an artifact or
    # checkpoint over its cap), oldest first; () when none or not known (a
    # database file, a coordinator before 0.3.0).
    not_kept: Tuple[str, ...] = ()


class CheckpointRow(TypedDict):
    """A stored checkpoint of a job (client.Checkpoint is made from one)."""
    step: int
    name: str  # its file: step-00000040.pt (a tar of step-N/ for commands)
    bytes: int
    sha256: str
    uploaded_ms: int
    best: bool  # kept for its metric (`checkpoints: {keep: best}`)
    metric: Optional[float]  # the metric at its step; None unless best


class JobFileRow(TypedDict):
    """A stored log or artifact of a job (client.JobFile)."""
    kind: str  # log | artifact
    name: str  # stdout | stderr | the artifact's path in the job directory
    epoch: int  # the attempt that made it
    bytes: int  # as stored (a log gzip)
    original_bytes: int  # on the node
    cut: bool  # a log's middle was cut (head and tail kept)
    sha256: str  # of what is stored
    uploaded_ms: int


class ArtifactRow(TypedDict):
    """An artifact as the job's list gives it (client.Artifact)."""
    name: str
    bytes: int
    sha256: str  # of its bytes
    epoch: int


# A download open: its headers (names lowercase) and its body, read in
# chunks and closed by the reader.
Opened = Tuple[Dict[str, str], io.BufferedReader]


def utc(ms: Union[int, str]) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(int(ms) / 1000,
                                           tz=datetime.timezone.utc)


def no_sweep(name: str, names: List[str]) -> NotFound:
    """NotFound as the coordinator words it (store_internal.h NoSuchSweep)."""
    listed = names[-20:]
    text = ", ".join(listed) if listed else "none yet"
    if len(names) > 20:
        text = "%d older, then %s" % (len(names) - 20, text)
    return NotFound("no sweep '%s'; sweeps: %s" % (name, text))


def where_texts(value: object) -> List[str]:
    """A `where` value (or list of them) as the texts a job's params hold:
    true/false for booleans, str() of the rest."""
    values = value if isinstance(value, (list, tuple, set)) else [value]
    return [json.dumps(v) if isinstance(v, bool) else str(v) for v in values]


def check_job_id(job_id: str) -> None:
    if not re.fullmatch(r"[0-9a-f]{6,64}", job_id or ""):
        raise InvalidArgument(
            "job id '%s': 6 to 64 hex digits (lowercase)" % job_id)


class Database:
    def __init__(self, path: str) -> None:
        if not os.path.isfile(path):
            raise NotFound("%s: no such database file" % path)
        self.where = path
        uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
        try:
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            tables = {r[0] for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as e:
            raise Unavailable(
                "%s: cannot read it (%s); a database in WAL mode needs its "
                "folder writable or its -wal and -shm files beside it: read a "
                "copy made by `tailsweep snapshot`" % (path, e))
        app, version = (self._db.execute("PRAGMA %s" % p).fetchone()[0]
                        for p in ("application_id", "user_version"))
        if app not in (0, APPLICATION_ID):
            raise InvalidArgument("%s: not a tailsweep database (SQLite "
                                  "application_id %d)" % (path, app))
        if version > SCHEMA_VERSION:
            raise FailedPrecondition(
                "%s: its schema version is %d, newer than this client's %d; "
                "use the tailsweep package of the coordinator that wrote it"
                % (path, version, SCHEMA_VERSION))
        missing = {"sweeps", "sweep_jobs", "jobs", "results",
                   "metrics"} - tables
        if missing:
            raise InvalidArgument("%s: not a tailsweep database (no table %s)"
                                  % (path, ", ".join(sorted(missing))))
        self._db.execute("PRAGMA query_only = 1")
        # A file from before the sweep settings and the lease history
        # (schema 8) reads them as zeros.
        columns = {r[1] for r in self._rows("PRAGMA table_info(sweeps)")}
        self._settings = ", ".join(
            c if c in columns else "%r AS %s" % (default, c)
            for c, default in _SETTINGS_COLUMNS)
        self._hours = "gpu_ms" in {
            r[1] for r in self._rows("PRAGMA table_info(jobs)")}

    def close(self) -> None:
        self._db.close()

    def _job_hours(self) -> str:
        """A job's GPU ms and CPU ms as two SQL columns (j: its jobs row):
        store.sql's job_hours with now in it; zeros in a file from before
        the lease history."""
        if not self._hours:
            return "0, 0"
        return _SQL["job_hours"].replace("?1", str(int(time.time() * 1000)))

    def _rows(self, sql: str,
              args: Sequence[object] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.DatabaseError as e:
            raise Unavailable("%s: %s" % (self.where, e))

    def _sweep_id(self, name: str) -> int:
        row: Optional[Tuple[int]] = self._rows(
            "SELECT sweep_id FROM sweeps WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise no_sweep(name, [r[0] for r in self._rows(
                "SELECT name FROM sweeps ORDER BY sweep_id")])
        return row[0]

    def api(self) -> NoReturn:
        raise NotAvailableOffline(
            "%s: the API's description (versions, the kinds' keys) comes from "
            "a coordinator: Client(url).api()" % self.where)

    def _controls(self, name: str = "") -> Dict[str, ControlRow]:
        """Each sweep's settings and hours by name (only `name`'s when not
        ""): the coordinator's FillSettingsAndHours, on this file."""
        keys = [c for c, _ in _SETTINGS_COLUMNS]
        settings: Dict[str, Dict[str, Any]] = {}
        for row in self._rows(
                "SELECT name, %s FROM sweeps WHERE ?1 = '' OR name = ?1"
                % self._settings, (name,)):
            one = dict(zip(keys, row[1:]))
            try:
                tags = json.loads(one["tags"] or "{}")
            except ValueError:
                tags = {}
            # The coordinator's reading: a value that is not text as JSON.
            one["tags"] = {k: v if isinstance(v, str) else json.dumps(v)
                           for k, v in tags.items()} \
                if isinstance(tags, dict) else {}
            settings[row[0]] = one
        hours: Dict[str, Dict[str, float]] = {}
        if self._hours:
            now = int(time.time() * 1000)
            for sweep, *ms in self._rows(_SQL["sweep_hours"], (now, name)):
                hours[sweep] = {key: (value or 0) / _MS_PER_HOUR
                                for key, value in zip(
                                    ("gpu_hours", "cpu_hours",
                                     "preempted_gpu_hours",
                                     "preempted_cpu_hours"), ms)}
        return {sweep: control_row(one, hours.get(sweep))
                for sweep, one in settings.items()}

    def sweeps(self) -> List[SweepRow]:
        out: Dict[str, SweepRow] = {}
        controls = self._controls()
        for name, kind, created, state, n in self._rows(
                "SELECT s.name, s.kind, s.created_ms, %s, COUNT(sj.job_id) "
                "FROM sweeps s LEFT JOIN sweep_jobs sj USING (sweep_id) "
                "LEFT JOIN jobs j USING (job_id) GROUP BY s.sweep_id, 4 "
                "ORDER BY s.sweep_id" % _SWEEP_JOB_STATE):
            if name not in out:
                out[name] = sweep_row(
                    name, kind, utc(created), dict.fromkeys(STATES, 0), 0,
                    controls.get(name, control_row()))
            info = out[name]
            if state is not None:
                info["counts"][state] = n
                info["total"] += n
        return list(out.values())

    def info(self, name: str) -> InfoRow:
        created, kind, fixed, spec, version = self._rows(
            "SELECT created_ms, kind, fixed, spec, version FROM sweeps "
            "WHERE sweep_id = ?", (self._sweep_id(name),)).fetchone()
        return {"name": name, "kind": kind, "created": utc(created),
                "fixed": json.loads(fixed), "spec": spec, "version": version}

    def status(self, name: str) -> StatusRow:
        sweep_id = self._sweep_id(name)
        counts = dict.fromkeys(STATES, 0)
        for state, n in self._rows(
                "SELECT %s, COUNT(*) FROM sweep_jobs sj JOIN jobs j "
                "USING (job_id) WHERE sj.sweep_id = ? GROUP BY 1"
                % _SWEEP_JOB_STATE, (sweep_id,)):
            counts[state] = n
        # Store::EarlyStopsOf's query.
        early, saved = self._rows(_SQL["early_stops"], (name,)).fetchone()
        control = self._controls(name).get(name) or control_row()
        return counts, early, saved, "", control

    @staticmethod
    def _where(where: Where) -> Tuple[str, List[object]]:
        sql = ""
        args: List[object] = []
        for key, value in (where or {}).items():
            if not _KEY.match(key):
                raise InvalidArgument("where: key '%s' is not a parameter "
                                      "name" % key)
            texts = where_texts(value)
            sql += " AND json_extract(j.params, ?) IN (%s)" % ", ".join(
                "?" * len(texts))
            args += ['$."%s"' % key] + texts
        return sql, args

    def job_rows(self, name: str, state: Optional[str] = None,
                 where: Where = None,
                 updated_since: Optional[int] = None) -> Iterator[JobRow]:
        sweep_id = self._sweep_id(name)
        filt, args = self._where(where)
        if updated_since is not None:
            filt += " AND j.updated_ms > ?"
            args.append(int(updated_since))
        sql = ("SELECT j.job_id, %s, j.state, j.attempt, j.epoch, "
               "COALESCE(j.holder, ''), "
               "COALESCE(j.last_error, ''), sj.cell, j.params, r.result, "
               "j.updated_ms, %s "
               "FROM sweep_jobs sj "
               "JOIN jobs j USING (job_id) LEFT JOIN results r USING (job_id) "
               "WHERE sj.sweep_id = ?%s"
               % (_SWEEP_JOB_STATE, self._job_hours(), filt))
        if state is not None:
            sql += " AND %s = ?" % _SWEEP_JOB_STATE
            args.append(state)
        cursor = self._rows(sql + " ORDER BY sj.position", [sweep_id] + args)
        while True:
            page = cursor.fetchmany(1000)
            if not page:
                return
            for r in page:
                yield JobRow._make(r[:7] + (json.loads(r[7]),
                                            json.loads(r[8]), r[9], r[10],
                                            (r[11] or 0) / _MS_PER_HOUR,
                                            (r[12] or 0) / _MS_PER_HOUR, 0,
                                            ()))

    def result_rows(self, name: str,
                    where: Where = None) -> Iterator[Tuple[str, str, str]]:
        """(job_id, cell {key: text}, result text) of the done jobs."""
        sweep_id = self._sweep_id(name)
        filt, args = self._where(where)
        for job_id, cell, text in self._rows(
                "SELECT sj.job_id, sj.cell, r.result FROM sweep_jobs sj "
                "JOIN results r USING (job_id) JOIN jobs j USING (job_id) "
                "WHERE sj.sweep_id = ?%s ORDER BY sj.position" % filt,
                [sweep_id] + args):
            yield job_id, cell, text

    @staticmethod
    def _point_filters(column: str, names: Optional[List[str]],
                       step_min: Optional[int],
                       step_max: Optional[int]) -> Tuple[str, List[object]]:
        """SQL and arguments narrowing points to `names` and the steps."""
        sql = ""
        args: List[object] = []
        if names is not None:
            sql += " AND %sname IN (%s)" % (column, ", ".join("?" * len(names)))
            args += names
        for op, bound in ((">=", step_min), ("<=", step_max)):
            if bound is not None:
                sql += " AND %sstep %s ?" % (column, op)
                args.append(int(bound))
        return sql, args

    def point_rows(self, name: str, names: Optional[List[str]],
                   jobs: Optional[List[str]], step_min: Optional[int],
                   step_max: Optional[int]) -> List[Point]:
        filt, args = self._point_filters("m.", names, step_min, step_max)
        sql = ("SELECT m.job_id, m.name, m.step, m.value "
               "FROM sweep_jobs sj JOIN metrics m ON m.job_id = sj.job_id "
               "WHERE sj.sweep_id = ?" + filt)
        args = [self._sweep_id(name)] + args
        if jobs is not None:
            sql += " AND sj.job_id IN (%s)" % ", ".join("?" * len(jobs))
            args += jobs
        return self._rows(sql + " ORDER BY sj.position, m.name, m.step",
                          args).fetchall()

    def point_frame(self, pandas: Any, name: str,
                    names: Optional[List[str]], jobs: Optional[List[str]],
                    step_min: Optional[int],
                    step_max: Optional[int]) -> Any:
        """point_rows as a DataFrame (job_id and name categorical, sorted
        categories; step int64; value float64, NaN for NULL), read job by
        job and name by name along the metrics' key: no sort of the whole,
        no text object per point."""
        import numpy
        filt, args = self._point_filters("", None, step_min, step_max)
        wanted = None if jobs is None else set(jobs)
        ids = [r[0] for r in self._rows(
            "SELECT job_id FROM sweep_jobs WHERE sweep_id = ? "
            "ORDER BY position", (self._sweep_id(name),))
            if wanted is None or r[0] in wanted]
        only = None if names is None else set(names)
        points: List[Tuple[int, Optional[float]]] = []
        runs: List[Tuple[str, str, int]] = []  # (job, name, points)
        for job_id in ids:
            for (metric,) in self._rows(
                    "SELECT DISTINCT name FROM metrics WHERE job_id = ? "
                    "ORDER BY name", (job_id,)).fetchall():
                if only is not None and metric not in only:
                    continue
                rows = self._rows(
                    "SELECT step, value FROM metrics WHERE job_id = ? AND "
                    "name = ?" + filt + " ORDER BY step",
                    [job_id, metric] + args).fetchall()
                if rows:
                    runs.append((job_id, metric, len(rows)))
                    points += rows
        counts = [n for _, _, n in runs]

        def categorical(values: List[str]) -> Any:
            categories = sorted(set(values))
            code = {c: i for i, c in enumerate(categories)}
            codes = numpy.repeat(numpy.array([code[v] for v in values],
                                             dtype=numpy.int32), counts)
            return pandas.Categorical.from_codes(codes, categories)

        return pandas.DataFrame({
            "job_id": categorical([j for j, _, _ in runs]),
            "name": categorical([m for _, m, _ in runs]),
            "step": numpy.array([p[0] for p in points], dtype=numpy.int64),
            "value": numpy.array([p[1] for p in points],
                                 dtype=numpy.float64)})

    def job_points(self, job_id: str, names: Optional[List[str]],
                   step_min: Optional[int],
                   step_max: Optional[int]) -> List[Point]:
        filt, args = self._point_filters("", names, step_min, step_max)
        return self._rows("SELECT job_id, name, step, value FROM metrics "
                          "WHERE job_id = ?" + filt + " ORDER BY name, step",
                          [job_id] + args).fetchall()

    def job_row(self, job_id: str) -> JobRow:
        check_job_id(job_id)
        rows = self._rows(
            "SELECT j.job_id, j.state, j.state, j.attempt, j.epoch, "
            "COALESCE(j.holder, ''), COALESCE(j.last_error, ''), NULL, "
            "j.params, r.result, j.updated_ms, %s FROM jobs j "
            "LEFT JOIN "
            "results r USING (job_id) WHERE j.job_id >= ? AND j.job_id < ? "
            "LIMIT 2" % self._job_hours(), (job_id, job_id + "g")).fetchall()
        if not rows:
            raise NotFound("no job '%s'" % job_id)
        if len(rows) > 1:
            raise FailedPrecondition(
                "job id prefix '%s' matches more than one job; give more "
                "digits" % job_id)
        r = rows[0]
        return JobRow._make(r[:7] + (None, json.loads(r[8]), r[9], r[10],
                                     (r[11] or 0) / _MS_PER_HOUR,
                                     (r[12] or 0) / _MS_PER_HOUR, 0, ()))

    def logs(self, job_id: str) -> List[LogRow]:
        return [{"epoch": e, "outcome": o, "stderr_tail": t, "at": utc(at)}
                for e, o, t, at in self._rows(
                    "SELECT epoch, outcome, stderr_tail, at_ms FROM job_logs "
                    "WHERE job_id = ? ORDER BY epoch", (job_id,))]

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise ReadOnly(
            "%s: a database file is read here, never written: submit, "
            "cancel, resume, add jobs, change settings (pause, priority, "
            "tags, notes) and remove sweeps through the coordinator "
            "(tailsweep.Client(URL, token=...))" % self.where)

    submit = cancel = resume = add_jobs = update = remove = _read_only

    def _planned_online(self, *args: object,
                        **kwargs: object) -> NoReturn:
        raise NotAvailableOffline(
            "%s: results per cell and boundaries are the coordinator's "
            "aggregation and plan: read them through tailsweep.Client(URL), "
            "or `tailsweep results SWEEP`" % self.where)

    boundaries = results_table = _planned_online

    def _stored_online(self, *args: object,
                       **kwargs: object) -> NoReturn:
        raise NotAvailableOffline(
            "%s: a job's checkpoints, logs and artifacts are files the "
            "coordinator keeps under its --data-dir, which a database file "
            "does not locate: read them through tailsweep.Client(URL), or "
            "`tailsweep checkpoint|logs|artifacts JOB` (Job.log_tails() "
            "reads here)" % self.where)

    checkpoint_rows = job_files = artifact_rows = open_checkpoint = \
        open_log = open_artifact = _stored_online
