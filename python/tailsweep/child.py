"""Helpers for a program that runs as a tailsweep ``kind: command`` child.

Nothing here is required: the contract between the worker and its child is
a set of environment variables and files (docs/child-contract.md), and any
program, in any language, can follow it directly. This module is the
contract written down once for Python, with the standard library only:

- ``params(defaults)``: the job's parameters, from the JSON object at
  $TAILSWEEP_PARAMS_FILE (typed: numbers, booleans, lists, strings).
- ``log(step, {...})``: one metrics line appended to
  $TAILSWEEP_METRICS_FILE: ``{"step": N, "name": value, ...}`` with an
  integer step >= 1 and numeric values; NaN and infinities are written as
  the strings "nan", "inf", "-inf"; a list value NAME: [a, b] is stored as
  NAME/0, NAME/1 and a dict NAME: {k: v} as NAME/k.
- ``save_checkpoint(step)``: a directory $TAILSWEEP_CHECKPOINT_DIR/step-N/
  that becomes complete (holds the file COMPLETE) only when the ``with``
  block succeeds. The worker uploads the newest complete one and restores it
  before a resumed attempt, whose $TAILSWEEP_RESUME_STEP is its step
  (``resume_step()``, ``resume_checkpoint()``).
- ``handle_sigterm()`` / ``stop_requested()`` / ``exit_preempted()``: the
  worker sends SIGTERM on cancel, drain or preemption and SIGKILLs the whole
  process group $TAILSWEEP_STOP_GRACE_S seconds later; a well-behaved child
  saves a checkpoint and exits with EXIT_PREEMPTED (3): the job is requeued
  without spending an attempt. Exit 0 is done; any other status failed (the
  last lines of stderr become the reason). ``lease_expired()`` is the same
  question asked of $TAILSWEEP_LEASE_FILE (optional).
- ``write_result({...})``: the optional JSON object at
  $TAILSWEEP_RESULT_FILE, stored with the job's result.

Outside tailsweep (the variables unset) every function still works, so the
same script runs by hand: ``params`` returns the defaults, ``log`` prints
its line to stderr, checkpoints go to ./checkpoints under the working
directory, ``write_result`` does nothing.

Under torchrun only the main process (RANK, else LOCAL_RANK, unset or 0)
writes: ``log`` and ``write_result`` do nothing on other ranks, and
``save_checkpoint`` gives them a scratch directory that is thrown away.
"""

import contextlib
import json
import numbers
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import types
from typing import (Dict, Iterable, Iterator, List, Mapping, NoReturn,
                    Optional, Sequence, SupportsFloat, SupportsIndex,
                    TypedDict, Union, cast)

from tailsweep._numbers import WORDS, Json, word

__all__ = [
    "EXIT_PREEMPTED", "MAX_LINE_BYTES", "MAX_POINTS_PER_LINE",
    "MAX_NAME_BYTES", "in_tailsweep", "is_main_process",
    "params", "log", "job_id", "job_dir", "attempt", "checkpoint_dir",
    "resume_step", "latest_checkpoint", "resume_checkpoint",
    "checkpoint_step", "save_checkpoint", "handle_sigterm", "stop_requested",
    "exit_preempted", "write_result", "stop_grace_s", "num_threads",
    "lease_expired",
]

# Exit status that means "stopped: requeue me without spending an attempt".
EXIT_PREEMPTED = 3
# The worker skips metrics lines longer than this (the newline excluded),
# with more values than MAX_POINTS_PER_LINE, or with a (flattened) metric
# name longer than MAX_NAME_BYTES.
MAX_LINE_BYTES = 1 << 20
MAX_POINTS_PER_LINE = 10000
MAX_NAME_BYTES = 128

_CHECKPOINT_NAME = re.compile(r"^step-([0-9]+)$")
_COMPLETE = "COMPLETE"

# A metric's value as log() takes it: a number (anything float() takes:
# ints, floats, numpy scalars, 0-d tensors) or "nan"/"inf"/"-inf"; or a
# list (tuple) or dict of them.
_Number = Union[SupportsFloat, SupportsIndex, str]
_Metric = Union[_Number, Sequence[_Number], Mapping[str, _Number]]
# A value as a metrics line holds it.
_Written = Union[int, float, str]


def _env(name: str) -> Optional[str]:
    """The variable's value, or None when it is unset or empty."""
    value = os.environ.get(name)
    return value if value else None


def in_tailsweep() -> bool:
    """True when this process runs as a tailsweep job (TAILSWEEP_JOB_ID set)."""
    return _env("TAILSWEEP_JOB_ID") is not None


def is_main_process() -> bool:
    """False on a torchrun rank other than 0 (RANK, else LOCAL_RANK).

    Only the main process should write metrics, checkpoints and the result.
    """
    for name in ("RANK", "LOCAL_RANK"):
        value = _env(name)
        if value is not None:
            return int(value) == 0
    return True


def job_id() -> Optional[str]:
    """$TAILSWEEP_JOB_ID (64 hex digits), or None outside tailsweep."""
    return _env("TAILSWEEP_JOB_ID")


def attempt() -> int:
    """$TAILSWEEP_ATTEMPT: 1 for the first attempt, 2 for the first retry...

    A preempted attempt (exit 3) is not counted. 1 outside tailsweep.
    """
    return int(_env("TAILSWEEP_ATTEMPT") or 1)


def job_dir() -> str:
    """$TAILSWEEP_JOB_DIR, the job's own directory; outside, the working one.

    It is also the child's default working directory unless the spec sets
    ``workdir:``.
    """
    return _env("TAILSWEEP_JOB_DIR") or os.getcwd()


def checkpoint_dir() -> str:
    """$TAILSWEEP_CHECKPOINT_DIR; outside tailsweep, ./checkpoints."""
    return _env("TAILSWEEP_CHECKPOINT_DIR") or os.path.join(
        os.getcwd(), "checkpoints")


def resume_step() -> int:
    """$TAILSWEEP_RESUME_STEP: the restored checkpoint's step; 0 is a fresh start.

    Metrics for steps up to it are already stored: continue from it + 1.
    """
    return int(_env("TAILSWEEP_RESUME_STEP") or 0)


def stop_grace_s() -> float:
    """Seconds between SIGTERM and SIGKILL ($TAILSWEEP_STOP_GRACE_S, default 30)."""
    return float(_env("TAILSWEEP_STOP_GRACE_S") or 30)


def num_threads(default: int = 1) -> int:
    """The slot's thread count, from OMP_NUM_THREADS (else `default`)."""
    value = _env("OMP_NUM_THREADS")
    return int(value) if value else default


def params(defaults: Optional[Mapping[str, Json]] = None) -> Dict[str, Json]:
    """The job's parameters: the JSON object at $TAILSWEEP_PARAMS_FILE.

    Values are typed as in the spec (numbers, true/false, lists, strings).
    `defaults`, when given, is merged underneath (the file wins), so a
    script run by hand, without the variable, gets the defaults alone.
    Raises OSError / ValueError when the variable names a file that cannot
    be read or is not a JSON object.
    """
    merged = dict(defaults or {})
    path = _env("TAILSWEEP_PARAMS_FILE")
    if path is None:
        return merged
    with open(path, encoding="utf-8") as f:
        loaded = json.load(f)
    if not isinstance(loaded, dict):
        raise ValueError("%s: the parameters are not a JSON object" % path)
    merged.update(loaded)
    return merged


def _number(value: object, name: str) -> _Written:
    """A JSON-ready metric value: int, finite float, or "nan"/"inf"/"-inf"."""
    if isinstance(value, str):
        if value in WORDS:
            return value
        raise TypeError("metric %r: the string %r is not a number "
                        "(only \"nan\", \"inf\", \"-inf\")" % (name, value))
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    try:
        # float, numpy scalars, 0-d tensors; float() raises for the rest.
        number = float(cast(SupportsFloat, value))
    except (TypeError, ValueError):
        raise TypeError("metric %r: %r is not a number" % (name, value))
    return word(number)


def _check_name(name: str) -> None:
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ValueError("metric name %r is over %d bytes"
                         % (name, MAX_NAME_BYTES))


def _metric(value: object, name: str, names: List[str]
            ) -> Union[_Written, List[_Written], Dict[str, _Written]]:
    """The value as JSON-ready; appends the stored names to `names`."""
    if isinstance(value, dict):
        out: Dict[str, _Written] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise TypeError("metric %r: keys must be non-empty strings"
                                % name)
            out[key] = _number(item, "%s/%s" % (name, key))
            names.append("%s/%s" % (name, key))
        return out
    if isinstance(value, (list, tuple)):
        names.extend("%s/%d" % (name, i) for i in range(len(value)))
        return [_number(v, "%s/%d" % (name, i)) for i, v in enumerate(value)]
    names.append(name)
    return _number(value, name)


def _line(step: int, metrics: Mapping[str, object]) -> bytes:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError("step must be an integer (got %r)" % (step,))
    if step < 1:
        raise ValueError("step must be >= 1 (got %d)" % step)
    record: Dict[str, object] = {"step": int(step)}
    names: List[str] = []
    for name, value in metrics.items():
        if not isinstance(name, str) or not name:
            raise TypeError("metric names must be non-empty strings "
                            "(got %r)" % (name,))
        if name == "step":
            raise ValueError("'step' is the step, not a metric")
        record[name] = _metric(value, name, names)
    if len(names) > MAX_POINTS_PER_LINE:
        raise ValueError("%d values in one line; the worker takes at most %d"
                         % (len(names), MAX_POINTS_PER_LINE))
    for name in names:
        _check_name(name)
    line = json.dumps(record, separators=(",", ":"), allow_nan=False)
    data = line.encode("utf-8")
    if len(data) > MAX_LINE_BYTES:
        raise ValueError("metrics line of %d bytes is over the worker's "
                         "limit of %d" % (len(data), MAX_LINE_BYTES))
    return data + b"\n"


def log(step: int, metrics: Optional[Mapping[str, _Metric]] = None,
        **kw: _Metric) -> Optional[str]:
    """Appends one metrics line for `step` (an int >= 1) and flushes it.

    ``log(10, {"loss": 0.5})`` or ``log(10, loss=0.5, acc=[0.1, 0.2])``.
    Values: ints, floats (NaN and +-inf become "nan", "inf", "-inf"), or
    anything float() accepts (numpy scalars, 0-d tensors); a list or tuple
    of them is stored as NAME/0, NAME/1, ...; a dict as NAME/KEY. Raises
    TypeError / ValueError for what the worker would skip (a bad step, a
    non-numeric value, a line over 1 MiB, more than 10000 values, a name
    over 128 bytes) instead of writing it.

    The line is written with one append, so the worker never sees half of
    it. With $TAILSWEEP_METRICS_FILE unset (run by hand) the line goes to
    stderr. Does nothing on a torchrun rank other than 0. Returns the line
    (without the newline) as text, or None when nothing was written.
    """
    values = dict(metrics or {})
    values.update(kw)
    data = _line(step, values)
    if not is_main_process():
        return None
    path = _env("TAILSWEEP_METRICS_FILE")
    if path is None:
        sys.stderr.write(data.decode("utf-8"))
        sys.stderr.flush()
    else:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
            while written < len(data):  # a short write: finish the line
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
    return data[:-1].decode("utf-8")


def checkpoint_step(path: Union[str, "os.PathLike[str]"]) -> Optional[int]:
    """The step of a checkpoint directory named step-N, or None."""
    match = _CHECKPOINT_NAME.match(os.path.basename(os.path.normpath(path)))
    return int(match.group(1)) if match else None


def _complete_checkpoints() -> Dict[int, str]:
    """{step: path} of the complete step-N directories."""
    root = checkpoint_dir()
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return {}
    found: Dict[int, str] = {}
    for name in names:
        match = _CHECKPOINT_NAME.match(name)
        path = os.path.join(root, name)
        if match and os.path.isfile(os.path.join(path, _COMPLETE)):
            found[int(match.group(1))] = path
    return found


def latest_checkpoint() -> Optional[str]:
    """The newest complete checkpoint directory (step-N with COMPLETE), or None."""
    found = _complete_checkpoints()
    return found[max(found)] if found else None


def resume_checkpoint() -> Optional[str]:
    """The checkpoint a run should continue from, or None for a fresh start.

    Under tailsweep: step-$TAILSWEEP_RESUME_STEP (the one the worker
    restored), None when the step is 0; FileNotFoundError if it is missing.
    Run by hand ($TAILSWEEP_RESUME_STEP unset): latest_checkpoint().
    """
    if _env("TAILSWEEP_RESUME_STEP") is None:
        return latest_checkpoint()
    step = resume_step()
    if step == 0:
        return None
    path = _complete_checkpoints().get(step)
    if path is None:
        raise FileNotFoundError(
            "TAILSWEEP_RESUME_STEP=%d but %s has no complete step-%d"
            % (step, checkpoint_dir(), step))
    return path


def _fsync_tree(root: str) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


@contextlib.contextmanager
def save_checkpoint(step: int, fsync: bool = True) -> Iterator[str]:
    """Yields a directory to write the checkpoint of `step` into.

        with child.save_checkpoint(step) as d:
            torch.save(state, os.path.join(d, "state.pt"))

    The files go into $TAILSWEEP_CHECKPOINT_DIR/step-N.tmp-PID/; when the
    block ends without an exception the COMPLETE marker is written last and
    the directory renamed to step-N/ in one step, so the worker never sees
    a complete checkpoint with missing files. On an exception the scratch
    directory is removed and nothing becomes complete. A step that already
    has a complete checkpoint (e.g. the restored one, saved again when a
    stop comes before the next step) keeps it and discards the new files.
    A leftover step-N.tmp-PID/ (a killed process) is ignored by the worker.
    On a torchrun rank other than 0 the directory is a scratch one, removed
    afterwards. With `fsync`, the files are flushed to disk before the
    rename.
    """
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError("step must be an integer (got %r)" % (step,))
    if step < 1:
        raise ValueError("step must be >= 1 (got %d)" % step)
    if not is_main_process():
        scratch = tempfile.mkdtemp(prefix="tailsweep-rank-checkpoint-")
        try:
            yield scratch
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    root = checkpoint_dir()
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, "step-%d" % step)
    scratch = "%s.tmp-%d" % (final, os.getpid())
    shutil.rmtree(scratch, ignore_errors=True)
    os.mkdir(scratch)
    try:
        yield scratch
        with open(os.path.join(scratch, _COMPLETE), "w") as f:
            f.write("%d\n" % step)
        if fsync:
            _fsync_tree(scratch)
        if os.path.isfile(os.path.join(final, _COMPLETE)):
            return  # already complete: keep it (the worker may be reading it)
        if os.path.lexists(final):  # an incomplete one: nobody reads it
            shutil.rmtree(final)
        os.rename(scratch, final)
        if fsync:
            fd = os.open(root, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class _Stop(TypedDict):
    """What handle_sigterm()'s handler saw."""
    requested: bool
    signal: Optional[int]


_stop: _Stop = {"requested": False, "signal": None}


def _on_stop_signal(signum: int, frame: Optional[types.FrameType]) -> None:
    _stop["requested"] = True
    _stop["signal"] = signum


def handle_sigterm(
        signals: Iterable[int] = (signal.SIGTERM, signal.SIGUSR1)) -> None:
    """Makes SIGTERM (and SIGUSR1) only set the flag stop_requested() reads.

    Call it once, from the main thread, before the training loop; then poll
    stop_requested() between steps, save a checkpoint and exit_preempted().
    The worker SIGKILLs the whole process group stop_grace_s() seconds after
    SIGTERM, so the save must fit in that time.
    """
    for signum in signals:
        signal.signal(signum, _on_stop_signal)


def stop_requested() -> bool:
    """True once a signal installed by handle_sigterm() has arrived."""
    return _stop["requested"]


class _Lease(TypedDict):
    """lease_expired()'s last read of $TAILSWEEP_LEASE_FILE."""
    next_read: float  # time.monotonic()
    until_ms: Optional[int]


_lease: _Lease = {"next_read": 0.0, "until_ms": None}


def lease_expired() -> bool:
    """True once the worker's lease on this job has run out (optional check).

    $TAILSWEEP_LEASE_FILE holds one number: the CLOCK_MONOTONIC millisecond
    (time.monotonic() * 1000 here) until which the child may run; the worker
    moves it forward at each lease renewal. Past it, the worker could not
    renew (frozen, cut off) and the job may be leased elsewhere: stop as on
    SIGTERM (checkpoint, exit_preempted()). Reads the file at most every
    100 ms. False when there is no such file (run by hand) or it holds no
    number.
    """
    path = _env("TAILSWEEP_LEASE_FILE")
    if path is None:
        return False
    now = time.monotonic()
    if now >= _lease["next_read"]:
        _lease["next_read"] = now + 0.1
        try:
            with open(path) as f:
                _lease["until_ms"] = int(f.read().strip())
        except (OSError, ValueError):
            _lease["until_ms"] = None
    return _lease["until_ms"] is not None and now * 1000 > _lease["until_ms"]


def exit_preempted() -> NoReturn:
    """Exits with EXIT_PREEMPTED (3): requeue the job, spend no attempt.

    Save a checkpoint first, or the next attempt starts over.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(EXIT_PREEMPTED)


def _finite_json(value: object) -> object:
    """Replaces NaN and infinities (not valid JSON) by strings, recursively."""
    if isinstance(value, float):
        return word(value)
    if isinstance(value, dict):
        return {str(k): _finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v) for v in value]
    return value


def write_result(obj: Dict[str, Json]) -> Optional[str]:
    """Writes the JSON object `obj` to $TAILSWEEP_RESULT_FILE atomically.

    It is stored with the job's result when the child exits 0. NaN and
    infinities are written as "nan", "inf", "-inf". Written to a scratch
    file and renamed, so a reader never sees half of it. Returns the path,
    or None when nothing was written (the variable unset, or a torchrun
    rank other than 0). Raises TypeError when `obj` is not a dict or holds
    something JSON cannot represent.
    """
    if not isinstance(obj, dict):
        raise TypeError("the result must be a dict (a JSON object)")
    text = json.dumps(_finite_json(obj), allow_nan=False, indent=1,
                      sort_keys=True) + "\n"
    path = _env("TAILSWEEP_RESULT_FILE")
    if path is None or not is_main_process():
        return None
    scratch = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(scratch, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.remove(scratch)
    return path
