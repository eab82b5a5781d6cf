"""Sweeps from Python: status, jobs, results and unsampled curves, as
records (standard library only) or pandas DataFrames.

    import tailsweep
    c = tailsweep.Client.open("runs/smoke/tailsweep.db")   # offline
    s = c.sweep("smoke")
    s.status()                        # {"counts": {...}, "total": 48, ...}
    df = s.results()                  # one row per done job
    h = s.history(names=["loss"])     # long format: job_id, name, step, value

    c = tailsweep.Client("http://head:8080", token="...")   # online, same methods
    j = c.job("3f2a9c")               # what a run made (online only):
    j.logs()                          # its whole stdout, as text
    j.download_checkpoint("out/")     # out/step-40/ (a command job's dir)
    j.download_artifacts("out/")      # out/plots/a.png, ...

Offline, the client reads the coordinator's SQLite file read-only
(_database.py): safe beside a live coordinator, or a copy made by
`tailsweep snapshot`. Online it reads the coordinator's HTTP API
(_http.py). The frames' columns are `tailsweep export`'s (docs/python.md);
pandas is imported only when a DataFrame is asked for.
"""

import collections.abc
import dataclasses
import datetime
import json
import os
import pathlib
import re
from typing import (TYPE_CHECKING, Any, Dict, Iterable, Iterator, List,
                    Mapping, Optional, Sequence, Tuple, Type, TypeVar,
                    Union)

from tailsweep import _database
from tailsweep._database import InfoRow, JobRow, LogRow, SettingsRow, Where
from tailsweep._frames import (_ResultColumns, _typed_frame, _PARAM_PREFIX, _flatten, _frame, _number,
                               _pandas, _points, _text, _typed)
from tailsweep._numbers import WORDS, Json, number
from tailsweep.errors import FailedPrecondition, InvalidArgument

if TYPE_CHECKING:
    from tailsweep import _http

    # Where a client reads: the database file or the coordinator's API
    # (the same methods, the same row shapes).
    _Source = Union[_database.Database, _http.Http]

STATES = _database.STATES
# A cell's value as add_jobs takes it.
_CellValue = Union[str, int, float, bool]
_C = TypeVar("_C", bound="Client")


class _Record:
    """A dataclass also read as the dict it was before 0.2.0
    (record["name"])."""

    def __getitem__(self, key: str) -> Any:
        if key not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> List[str]:
        return [f.name for f in dataclasses.fields(self)]


# SweepInfo's and Status's last fields, after theirs: how the sweep runs
# (`tailsweep status SWEEP` shows them; set by Sweep.pause, set_priority,
# tag, note, or the spec) and the device time its attempts used:
#   priority      -1000..1000, higher leases first (0 unless set)
#   max_running   at most this many of its jobs at once; 0: no limit
#   paused        nothing new is leased; running jobs finish
#   held          why its queue is held (max_failures failed attempts
#                 since the last resume; Sweep.resume releases it); "": not
#   max_failures  0: never held; failures: failed attempts so far
#   timeout_s     per attempt; 0: none
#   tags          {key: value}; notes: free text
#   stop_rule     the ASHA rule as JSON text; "": none
#   gpu_hours     hours x the job's GPUs on GPU workers; cpu_hours: hours of
#                 CPU-only workers' slots; preempted_*: the part of each
#                 spent by attempts given back or expired (in the totals)


@dataclasses.dataclass(frozen=True)
class SweepInfo(_Record):
    """A sweep as Client.sweeps() lists it: name, kind, created, counts,
    total, then its settings and hours (see above)."""
    name: str
    kind: str
    created: datetime.datetime
    counts: Dict[str, int]  # by state, as the sweep sees its jobs
    total: int
    priority: int = 0
    max_running: int = 0
    paused: bool = False
    held: str = ""
    max_failures: int = 0
    failures: int = 0
    timeout_s: float = 0.0
    tags: Dict[str, str] = dataclasses.field(default_factory=dict)
    notes: str = ""
    stop_rule: str = ""
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    preempted_gpu_hours: float = 0.0
    preempted_cpu_hours: float = 0.0


@dataclasses.dataclass(frozen=True)
class Status(_Record):
    """Sweep.status(): counts by state, total, the done fraction, early
    stops and the training steps they saved, the coordinator's problem,
    then the sweep's settings and hours (as SweepInfo's)."""
    sweep: str
    counts: Dict[str, int]
    total: int
    done_fraction: float
    runs_stopped_early: int
    steps_saved: int
    problem: str  # "" when none; always "" offline
    priority: int = 0
    max_running: int = 0
    paused: bool = False
    held: str = ""
    max_failures: int = 0
    failures: int = 0
    timeout_s: float = 0.0
    tags: Dict[str, str] = dataclasses.field(default_factory=dict)
    notes: str = ""
    stop_rule: str = ""
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    preempted_gpu_hours: float = 0.0
    preempted_cpu_hours: float = 0.0


@dataclasses.dataclass(frozen=True)
class Checkpoint(_Record):
    """A checkpoint the coordinator keeps of a job (Job.checkpoints()):
    its step, file name (step-00000040.pt; a command job's is a tar of its
    step-N/ directory), size, SHA-256, when it was uploaded (Unix ms), and
    whether it is kept for its metric (`checkpoints: {keep: best}`) with
    that metric's value at its step (None unless best)."""
    step: int
    name: str
    bytes: int
    sha256: str
    uploaded_ms: int
    best: bool = False
    metric: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class JobFile(_Record):
    """A log or artifact the coordinator keeps of a job (Job.files()):
    kind (log | artifact), name (stdout | stderr | the artifact's path in
    the job directory), epoch (the attempt), bytes as stored (a log is
    kept gzipped), original_bytes (on the node), cut (a log longer than
    the spec's logs_max_mib: its head and tail kept), sha256 (of what is
    stored), uploaded_ms."""
    kind: str
    name: str
    epoch: int
    bytes: int
    original_bytes: int
    cut: bool
    sha256: str
    uploaded_ms: int


@dataclasses.dataclass(frozen=True)
class Artifact(_Record):
    """A file the spec's `artifacts:` globs matched in a job's directory
    (Job.artifacts()): its path there, size, SHA-256 and the attempt that
    sent it."""
    name: str
    bytes: int
    sha256: str
    epoch: int


class Client:
    """A tailsweep coordinator's sweeps. `Client(url, token=, ca=)` reads
    its HTTP API; `Client.open(path)` its database file. Both have the same
    methods; every failure is a tailsweep.Error subclass carrying the
    coordinator's (or the database's) message."""

    def __init__(self, url: str, token: Optional[str] = None,
                 ca: Optional[str] = None, timeout: float = 60.0,
                 page_size: int = 1000,
                 compress: Optional[bool] = None) -> None:
        """`url`: the coordinator's --http-listen address (http:// or
        https://); `token`: its token; `ca`: the CA file of its TLS
        certificate; `timeout`: seconds a request may take; `page_size`:
        jobs a request reads (1..10000); `compress`: ask for gzip answers
        (default: unless the coordinator is on this machine)."""
        from tailsweep import _http  # urllib and ssl: only when online
        self._source: _Source = _http.Http(
            url, token=token, ca=ca, timeout=timeout, page_size=page_size,
            compress=compress)
        self.where = self._source.where

    @classmethod
    def open(cls: Type[_C], path: str) -> _C:
        """The database at `path`, read-only (a live coordinator's, or a
        `tailsweep snapshot` copy). NotFound for a missing file,
        InvalidArgument for a file that is not a tailsweep database."""
        client = cls.__new__(cls)
        client._source = _database.Database(path)
        client.where = path
        return client

    @classmethod
    def from_run_dir(cls: Type[_C], path: str, **kwargs: Any) -> _C:
        """The coordinator of a `tailsweep slurm up` run directory: its
        http_address, token and ca.crt (proto/run_dir.h names them).
        Unavailable while the coordinator has not written its address."""
        from tailsweep.errors import Unavailable
        try:
            with open(os.path.join(path, "http_address")) as f:
                url = f.read().strip()
            with open(os.path.join(path, "token")) as f:
                token = f.read().strip()
        except OSError as e:
            raise Unavailable(
                "%s: no coordinator address yet (%s); is the coordinator job "
                "running? (squeue, or %s/coordinator.log)"
                % (path, e.strerror, path)) from None
        return cls(url, token=token, ca=os.path.join(path, "ca.crt"),
                   **kwargs)

    @classmethod
    def from_env(cls: Type[_C]) -> _C:
        """Client($TAILSWEEP_URL, token from $TAILSWEEP_TOKEN_FILE, ca
        $TAILSWEEP_TLS_CA), Client.from_run_dir($TAILSWEEP_RUN_DIR), or
        Client.open($TAILSWEEP_DB)."""
        if os.environ.get("TAILSWEEP_RUN_DIR"):
            return cls.from_run_dir(os.environ["TAILSWEEP_RUN_DIR"])
        if os.environ.get("TAILSWEEP_URL"):
            token = None
            if os.environ.get("TAILSWEEP_TOKEN_FILE"):
                with open(os.environ["TAILSWEEP_TOKEN_FILE"]) as f:
                    token = f.read().strip()
            return cls(os.environ["TAILSWEEP_URL"], token=token,
                       ca=os.environ.get("TAILSWEEP_TLS_CA") or None)
        if os.environ.get("TAILSWEEP_DB"):
            return cls.open(os.environ["TAILSWEEP_DB"])
        raise InvalidArgument("set TAILSWEEP_URL (with TAILSWEEP_TOKEN_FILE, "
                              "TAILSWEEP_TLS_CA), TAILSWEEP_RUN_DIR or "
                              "TAILSWEEP_DB")

    def __repr__(self) -> str:
        return "Client(%r)" % self.where

    def close(self) -> None:
        self._source.close()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def api(self) -> Json:
        """The coordinator's GET /api: api_version, build, schema_version,
        and each job kind's keys with their defaults and types. Online
        only (NotAvailableOffline for a database file)."""
        return self._source.api()

    def sweeps(self) -> List[SweepInfo]:
        """Every sweep, oldest first: name, kind, created (UTC datetime),
        counts by state (as the sweep sees its jobs), total, its settings
        (priority, max_running, paused, held, tags, notes, ...) and
        device hours (gpu_hours, cpu_hours, ...)."""
        return [SweepInfo(**s) for s in self._source.sweeps()]

    def sweep(self, name: str) -> "Sweep":
        """The sweep `name`; NotFound naming the sweeps there are."""
        return Sweep(self._source, self._source.info(name))

    def job(self, job_id: str) -> "Job":
        """The job whose id is or starts with `job_id` (6 or more hex
        digits)."""
        return Job(self._source, self._source.job_row(job_id))

    def submit(self, path: str,
               overrides: Union[str, Iterable[str], None] = None,
               dry_run: bool = False) -> Dict[str, Json]:
        """Submits the sweep spec file at `path` with `overrides` (KEY=VALUE
        texts, as `tailsweep submit SPEC KEY=VALUE` takes them): its new
        jobs are queued; submitting again adds nothing, an extended grid
        only its new cells. `dry_run`: check and expand only. Returns sweep,
        jobs, jobs_added (with dry_run: that would be added), jobs_existing,
        dry_run, and spec (the text as stored). A `kind: command` spec's
        relative workdir and `code` files are resolved in its folder on the
        coordinator's machine (a shared filesystem), or submit it with the
        CLI. InvalidArgument with file:line:column for a bad spec; ReadOnly
        offline."""
        if isinstance(overrides, str):
            overrides = [overrides]
        overrides = list(overrides or [])
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            from tailsweep.errors import NotFound
            raise NotFound("%s: no such spec file" % path) from None
        source = path + (" with overrides" if overrides else "")
        return self._source.submit(text, source, overrides, dry_run,
                                   os.path.dirname(os.path.abspath(path)))

    def remove(self, name: str, force: bool = False,
               dry_run: bool = False) -> Dict[str, int]:
        """Removes the sweep `name`, its jobs that no other sweep has and
        everything stored of them (metrics, results, checkpoint files,
        logs). Refused (FailedPrecondition) while any of its jobs runs,
        unless `force` (their workers stop them). `dry_run`: say what would
        go, remove nothing. Returns jobs (removed), shared_jobs (kept:
        other sweeps have them), running, metric_points, checkpoint_files,
        checkpoint_bytes. NotFound for an unknown sweep; ReadOnly
        offline."""
        return self._source.remove(name, bool(force), bool(dry_run))


class Sweep:
    """One sweep's status, jobs, results and curves."""

    def __init__(self, source: "_Source", info: InfoRow) -> None:
        self._s = source
        self.name = info["name"]
        self.kind = info["kind"]
        self._info = info

    def __repr__(self) -> str:
        return "Sweep(%r, kind=%r)" % (self.name, self.kind)

    def info(self) -> Dict[str, Any]:
        """name, kind, created, fixed (typed), spec (the text submitted),
        version (the build that expanded it)."""
        info: Dict[str, Any] = dict(self._info)
        info["fixed"] = {k: _typed(v) for k, v in info["fixed"].items()}
        return info

    def status(self) -> Status:
        """counts (by state, as this sweep sees its jobs), total, done
        fraction, runs_stopped_early and the training steps they saved,
        the coordinator's problem ("" when none; online only), then the
        sweep's settings (priority, max_running, paused, held, tags,
        notes, ...) and device hours (gpu_hours, cpu_hours, ...)."""
        counts, early, saved, problem, control = self._s.status(self.name)
        total = sum(counts.values())
        return Status(self.name, counts, total,
                      counts["done"] / total if total else 0.0, early, saved,
                      problem, **control)

    def wait(self, poll: float = 5.0,
             timeout: Optional[float] = None) -> Status:
        """Blocks until none of the sweep's jobs is queued or leased (a
        boundary search may still add more), reading status() every
        `poll` seconds; that status. TimeoutError after `timeout`."""
        import time
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status()
            if status.counts["queued"] + status.counts["leased"] == 0:
                return status
            if end is not None and time.monotonic() >= end:
                raise TimeoutError("sweep '%s' not finished after %s s: %s"
                                   % (self.name, timeout, status.counts))
            time.sleep(poll)

    def cancel(self) -> Dict[str, int]:
        """Cancels the sweep's queued and running jobs (running ones stop at
        their next heartbeat; a job another live sweep shares runs on for
        it). Returns jobs_cancelled, jobs_kept_running. ReadOnly offline."""
        return self._s.cancel(self.name)

    def cancel_job(self, job_id: str) -> Dict[str, int]:
        """Cancels one job of the sweep (its full id), as cancel() does:
        a pruned trial. Returns jobs_cancelled (0 when it had ended)."""
        return self._s.cancel(self.name, job_id)

    def resume(self) -> Dict[str, int]:
        """Queues again what the sweep shows as failed or cancelled; done
        jobs never rerun. Returns jobs_requeued."""
        return self._s.resume(self.name)

    # Settings: each write returns the settings now (priority,
    # max_running, paused, held, max_failures, failures, timeout_s, tags,
    # notes, stop_rule). ReadOnly offline.

    def pause(self) -> SettingsRow:
        """Leases none of the sweep's jobs until unpause(); running jobs
        finish."""
        return self._s.update(self.name, paused=True)

    def unpause(self) -> SettingsRow:
        """Leases the sweep's jobs again after pause()."""
        return self._s.update(self.name, paused=False)

    def set_priority(self, priority: int,
                     max_running: Optional[int] = None) -> SettingsRow:
        """Higher leases first: -1000..1000 (a sweep's default: 0);
        `max_running`: also at most this many of its jobs at once (0: no
        limit). InvalidArgument out of range."""
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise InvalidArgument("priority %r: an integer, -1000..1000"
                                  % (priority,))
        if max_running is not None and (
                isinstance(max_running, bool) or
                not isinstance(max_running, int)):
            raise InvalidArgument("max_running %r: an integer, 0 (no limit) "
                                  "or more" % (max_running,))
        return self._s.update(self.name, priority=priority,
                              max_running=max_running)

    def tag(self, tags: Optional[Mapping[str, Optional[str]]] = None, /,
            **more: Optional[str]) -> SettingsRow:
        """Sets tags: tag({"team": "a"}) or tag(team="a", stage="x"); a
        value of "" or None removes that tag. Keys: 1-64 letters, digits,
        '-', '_', '.', ':', '/'; values at most 256 characters."""
        merged: Dict[str, str] = {}
        for key, value in list((tags or {}).items()) + list(more.items()):
            if value is not None and not isinstance(value, str):
                raise InvalidArgument("tag '%s': a value is text (got %r)"
                                      % (key, value))
            merged[str(key)] = value or ""
        return self._s.update(self.name, tags=merged)

    def untag(self, *keys: str) -> SettingsRow:
        """Removes these tags (a key the sweep has not: nothing)."""
        return self._s.update(self.name, tags={str(k): "" for k in keys})

    def note(self, text: str) -> SettingsRow:
        """Sets the sweep's notes (at most 10000 bytes); "" clears them."""
        if not isinstance(text, str):
            raise InvalidArgument("a note is text (got %r)" % (text,))
        return self._s.update(self.name, notes=text)

    def remove(self, force: bool = False,
               dry_run: bool = False) -> Dict[str, int]:
        """Removes this sweep: Client.remove(name, force, dry_run)."""
        return self._s.remove(self.name, bool(force), bool(dry_run))

    def add_jobs(self, cells: Union[Mapping[str, _CellValue],
                                    Iterable[Mapping[str, _CellValue]]]
                 ) -> List[str]:
        """Adds one job per cell ({key: value}, keys of the sweep's kind,
        none of its fixed keys) with the sweep's fixed values, after its
        last job. Returns the job ids, one per cell, in order. Ids are
        content hashes: adding a cell again adds nothing, so a retry is
        harmless. InvalidArgument naming a refused cell (nothing added)."""
        if isinstance(cells, collections.abc.Mapping):
            cells = [cells]
        texts = [{str(k): _text(v) for k, v in cell.items()}
                 for cell in cells]
        ids: List[str] = []
        for at in range(0, len(texts), 10000):
            ids += self._s.add_jobs(self.name, texts[at:at + 10000])["job_ids"]
        return ids

    def jobs(self, state: Optional[str] = None, where: Where = None,
             updated_since: Optional[int] = None) -> Iterator["Job"]:
        """The sweep's jobs in grid order, lazily: Job objects with state
        (as this sweep sees it), attempt, cell, params, result and
        updated_ms. `where`: {param: value or [values]}, filtered by the
        coordinator (or in SQL offline); `updated_since`: only jobs changed
        after this updated_ms (poll with the largest one seen)."""
        if state is not None and state not in STATES:
            raise InvalidArgument("state '%s'; allowed: %s"
                                  % (state, ", ".join(STATES)))
        for row in self._s.job_rows(self.name, state, where,
                                    updated_since=updated_since):
            yield Job(self._s, row)

    def results(self, per: str = "job",
                columns: Optional[Sequence[str]] = None, where: Where = None,
                output: str = "pandas") -> Any:
        """One row per done job, in grid order, with `tailsweep export
        --what results`'s columns: job_id, params_KEY (the job's whole
        config when its result has one, else its grid values; typed), then
        the result's fields (not config or samples); a tails sweep gives
        one row per testbed row. Nested objects become dotted columns
        (summary.loss.last); "nan"/"inf" become floats. `columns`: keep
        these (job_id always first); `where`: {param: value or [values]}.

        per="cell": the table the sweep's kind makes on the coordinator
        (`tailsweep results --format json`'s rows): one row per cell over
        seeds, its grid values as params_KEY (typed), then the kind's
        columns (train: jobs, done, failed, ratio_median, ...; a command
        sweep: each metric's last value, the median over seeds, and each
        outcome as the fraction of done runs where it held; tails: the
        testbed's rows). per="seed": the same, each seed its own row.
        Online only (NotAvailableOffline for a database file);
        FailedPrecondition from a coordinator older than 0.2.0.
        """
        if per in ("cell", "seed"):
            return self._cell_results(per == "cell", columns, output)
        if per != "job":
            raise InvalidArgument(
                "per '%s'; allowed: job, cell (over seeds), seed" % per)
        table = _ResultColumns()
        batch: List[Tuple[str, str, str]] = []

        def flush() -> None:
            # A thousand results parsed as one JSON array (a result that is
            # not JSON: parsed alone, to raise where it is).
            texts = [text for _, _, text in batch]
            try:
                docs = json.loads("[" + ",".join(texts) + "]")
            except ValueError:
                docs = [json.loads(text) for text in texts]
            for (job_id, cell, _), doc in zip(batch, docs):
                for one in doc if isinstance(doc, list) else [doc]:
                    if isinstance(one, dict):
                        table.add_result(job_id, cell, one)
            batch.clear()

        for row in self._s.result_rows(self.name, where):
            batch.append(row)
            if len(batch) == 1000:
                flush()
        flush()
        cols, n = table.cols, table.n
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
        return _typed_frame(cols, names)

    def _cell_results(self, over_seeds: bool,
                      columns: Optional[Sequence[str]], output: str) -> Any:
        """The coordinator's table of the sweep's kind (`tailsweep results
        --format json`'s rows): key columns as params_KEY (typed), then the
        kind's values; a fraction (an outcome's runs) as its number."""
        table = self._s.results_table(self.name, over_seeds)
        shown = [(i, c) for i, c in enumerate(table["columns"])
                 if c.get("role") != "display"]
        names = [(_PARAM_PREFIX if c.get("role") == "key" else "") + c["name"]
                 for _, c in shown]
        records: List[Dict[str, Json]] = []
        for row in table["rows"]:
            records.append({name: _cell(row[i], c)
                            for name, (i, c) in zip(names, shown)})
        if columns is not None:
            unknown = [c for c in columns if c not in names]
            if unknown and records:
                raise InvalidArgument(
                    "columns %s: not in the results; allowed: %s"
                    % (", ".join(unknown), ", ".join(names)))
            names = list(columns)
            records = [{c: r.get(c) for c in names} for r in records]
        return _frame(records, names, output)

    def boundaries(self, output: str = "pandas") -> Any:
        """Where a boundary sweep's search stands, one row per cell: its
        grid values (params_KEY, typed), state (searching, found, out of
        probes, below range, above range, no results), estimate,
        bracket_lo, bracket_hi, runs, and probes (per probe point: value,
        x, yes, no, failed, pending, low, high, verdict). The coordinator's
        own plan, the one it adds runs from; online only.
        FailedPrecondition for a sweep without `search:`."""
        key, cells = self._s.boundaries(self.name)
        records: List[Dict[str, Json]] = []
        for c in cells:
            row = {_PARAM_PREFIX + k: _typed(v) for k, v in c["cell"].items()}
            row.update({k: c[k] for k in ("state", "estimate", "bracket_lo",
                                          "bracket_hi", "runs", "probes")})
            row["key"] = key
            records.append(row)
        names: List[str] = []
        for r in records:
            names += [k for k in r if k not in names]
        return _frame(records, names, output)

    def history(self, names: Union[str, Sequence[str], None] = None,
                jobs: Union[str, Sequence[str], None] = None,
                step_min: Optional[int] = None,
                step_max: Optional[int] = None, output: str = "pandas") -> Any:
        """Every stored point, unsampled, in long format: job_id, name,
        step, value (NaN kept); in grid order, then by name and step.
        `names`, `jobs` (ids) and the step range narrow it."""
        if isinstance(names, str):
            names = [names]
        if isinstance(jobs, str):
            jobs = [jobs]
        if output == "pandas" and hasattr(self._s, "point_frame"):
            return self._s.point_frame(
                _pandas(), self.name, None if names is None else list(names),
                None if jobs is None else list(jobs), step_min, step_max)
        rows = self._s.point_rows(self.name,
                                  None if names is None else list(names),
                                  None if jobs is None else list(jobs),
                                  step_min, step_max)
        return _points(rows, output)


def _cell(value: Json, column: Json) -> Json:
    """A results table's cell as Python: a key's text typed, a number's
    word as its float, a fraction as count/of (NaN of none)."""
    if value is None:
        return None
    if column.get("role") == "key":
        return _typed(value)
    kind = column.get("type")
    if kind == "number":
        return float(number(value))
    if kind == "fraction":
        return value["count"] / value["of"] if value["of"] else float("nan")
    return value


class Job:
    """One job: its state, parameters, result, curves, and what its runs
    made (checkpoints, whole logs, artifacts; online only)."""

    def __init__(self, source: "_Source", row: JobRow) -> None:
        self._s = source
        self.id = row.job_id
        self.state = row.state
        self.job_state = row.job_state
        self.attempt = row.attempt
        self.epoch = row.epoch
        self.holder = row.holder
        self.last_error = row.last_error
        self.updated_ms = row.updated_ms
        self.cell = ({k: _typed(v) for k, v in row.cell.items()}
                     if row.cell is not None else None)
        self.params = {k: _typed(v) for k, v in row.params.items()}
        self.result = json.loads(row.result) if row.result else None
        # Device time its attempts used (SweepInfo's gpu_hours says how).
        self.gpu_hours = row.gpu_hours
        self.cpu_hours = row.cpu_hours
        # The step of its best checkpoint kept for its metric, by the
        # spec's goal, as the coordinator said when this Job was read;
        # None: none, or not said (a database file, a coordinator before
        # 0.3.0).
        self.best_checkpoint_step: Optional[int] = \
            row.best_checkpoint_step or None
        # What its attempts made that was not stored, and why, oldest
        # first (`tailsweep jobs` prints them); [] when none or not said.
        self.not_kept: List[str] = list(row.not_kept)

    def __repr__(self) -> str:
        return "Job(%r, state=%r)" % (self.id[:12], self.state)

    def log_tails(self) -> List[LogRow]:
        """The stderr tail each finished attempt sent, oldest first: epoch,
        outcome (done | failed), stderr_tail, at (UTC datetime). (Job.logs()
        before 0.3.0; offline too.)"""
        return self._s.logs(self.id)

    # What its runs made: the coordinator's files, online only
    # (NotAvailableOffline for a database file); NotFound naming what is
    # stored when the one asked for is not.

    def checkpoints(self) -> List[Checkpoint]:
        """The checkpoints the coordinator keeps of this job, newest first
        (the newest, the one before it, and those kept for their metric):
        step, name, bytes, sha256, uploaded_ms, best, metric."""
        return [Checkpoint(**c) for c in self._s.checkpoint_rows(self.id)]

    def best_checkpoints(self) -> List[Checkpoint]:
        """checkpoints() kept for their metric (best=True), in the
        coordinator's order (newest first, not by metric: sort by
        .metric for the spec's goal, or take best_checkpoint_step)."""
        return [c for c in self.checkpoints() if c.best]

    def files(self) -> List[JobFile]:
        """The logs (each attempt's stdout and stderr) and artifacts the
        coordinator keeps of this job: kind, name, epoch, bytes,
        original_bytes, cut, sha256, uploaded_ms."""
        return [JobFile(**f) for f in self._s.job_files(self.id)]

    def download_checkpoint(self, dir: Union[str, "os.PathLike[str]"],
                            step: Optional[int] = None) -> pathlib.Path:
        """Writes the job's newest checkpoint (or that of `step`) into the
        folder `dir` (made if missing) and returns its path: a train job's
        step-00000040.pt, a command job's step-N/ directory (unpacked from
        the tar it travels as; an older one of that name is replaced, the
        tar removed). Streamed to disk, never whole in memory, under a
        temporary name, checked against the SHA-256 the coordinator sends
        before it takes its name: DataLoss (Unavailable for a body cut
        short) and nothing kept otherwise. A tar with any entry that could
        land outside its one top directory (absolute, '..', a link, a
        device) is refused whole: InvalidArgument, nothing unpacked (the
        tar kept, named). NotFound (naming the steps kept) when there is
        none."""
        from tailsweep import _outputs  # tarfile, hashlib: when used
        step = _positive("step", step)
        dest = pathlib.Path(dir)
        dest.mkdir(parents=True, exist_ok=True)
        headers, body = self._s.open_checkpoint(self.id, step)
        with body:
            got_step = _header_int(headers, "x-checkpoint-step")
            name = _file_name(headers.get("content-disposition", "")) or \
                "step-%08d.pt" % (got_step or step or 0)
            path = _outputs.save(
                body, dest / name, headers.get("x-checkpoint-sha256", ""),
                _length(headers),
                "checkpoint of step %s of job %s" % (got_step, self.id[:12]))
        if _outputs.is_plain_tar(path):
            top = _outputs.unpack(path, dest)
            os.unlink(path)
            return top
        if _outputs.is_legacy_bundle(path):
            raise FailedPrecondition(
                "%s: a checkpoint bundle of the format before tar (tailsweep "
                "0.2); unpack it with `tailsweep checkpoint %s --out DIR`"
                % (path, self.id[:12]))
        return path

    def log_bytes(self, stream: str = "stdout",
                  attempt: Optional[int] = None) -> bytes:
        """The whole stdout (or stderr) of the job's newest attempt (or of
        the attempt whose epoch is `attempt`), byte for byte as the child
        wrote it. A running attempt's is the tail the coordinator holds
        (its last MiB); one longer than the spec's logs_max_mib has its
        middle cut (said in the text, and in files()'s cut)."""
        if stream not in ("stdout", "stderr"):
            raise InvalidArgument("stream '%s'; allowed: stdout, stderr"
                                  % (stream,))
        _, body = self._s.open_log(self.id, stream,
                                   _positive("attempt", attempt))
        with body:
            return body.read()

    def logs(self, stream: str = "stdout",
             attempt: Optional[int] = None) -> str:
        """log_bytes() as text: UTF-8, each byte that is not UTF-8 read as
        U+FFFD. (Before 0.3.0 logs() gave the stderr tails: log_tails().)"""
        return self.log_bytes(stream, attempt).decode("utf-8",
                                                      errors="replace")

    def artifacts(self) -> List[Artifact]:
        """The files the spec's `artifacts:` globs matched, as the newest
        attempt that sent any left them: name (its path in the job
        directory), bytes, sha256, epoch."""
        return [Artifact(**a) for a in self._s.artifact_rows(self.id)]

    def download_artifacts(self, dir: Union[str, "os.PathLike[str]"]
                           ) -> List[pathlib.Path]:
        """Writes every artifact into the folder `dir` (made if missing) at
        its path there (plots/a.png -> DIR/plots/a.png, replacing a file of
        that name) and returns their paths, in artifacts()'s order. Each is
        streamed to disk and checked against its SHA-256 before it takes
        its name (DataLoss otherwise, that one not kept). A name that is
        absolute or has a '..' component, or a folder on the way that is a
        symbolic link or a file, is refused (InvalidArgument) before
        anything is written."""
        from tailsweep import _outputs
        listed = self.artifacts()
        dest = pathlib.Path(dir)
        parts = [_outputs.relative_parts(a.name, "artifact")
                 for a in listed]
        dest.mkdir(parents=True, exist_ok=True)
        out: List[pathlib.Path] = []
        for a, p in zip(listed, parts):
            folder = _outputs.make_dirs(dest, p[:-1])
            headers, body = self._s.open_artifact(self.id, a.name)
            with body:
                out.append(_outputs.save(
                    body, folder / p[-1],
                    headers.get("x-job-file-sha256") or a.sha256,
                    _length(headers),
                    "artifact %s of job %s" % (a.name, self.id[:12])))
        return out

    def history(self, names: Union[str, Sequence[str], None] = None,
                step_min: Optional[int] = None,
                step_max: Optional[int] = None,
                output: str = "records") -> Any:
        """This job's points (as Sweep.history), records by default."""
        if isinstance(names, str):
            names = [names]
        return _points(self._s.job_points(
            self.id, None if names is None else list(names), step_min,
            step_max), output)


def _positive(name: str, value: Optional[int]) -> Optional[int]:
    """`value`, an int of 1 or more, or None; InvalidArgument otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("%s %r: an integer, 1 or more (None: the "
                              "newest)" % (name, value))
    return value


def _header_int(headers: Dict[str, str], name: str) -> Optional[int]:
    try:
        return int(headers[name])
    except (KeyError, ValueError):
        return None


def _length(headers: Dict[str, str]) -> Optional[int]:
    """The body's length when the answer says it (not gzipped)."""
    if headers.get("content-encoding"):
        return None
    return _header_int(headers, "content-length")


def _file_name(disposition: str) -> Optional[str]:
    """The plain file name a Content-Disposition gives, or None (none, or
    one with a '/', or '.', '..')."""
    from tailsweep import _outputs
    m = re.search(r'filename="([^"]*)"', disposition)
    if not m or "/" in m.group(1) or _outputs.unsafe(m.group(1)):
        return None
    return m.group(1)
