"""An Optuna study whose trials run as a sweep's jobs: Optuna chooses,
tailsweep runs.

    TAILSWEEP_URL=http://head:8080 TAILSWEEP_TOKEN_FILE=~/.tailsweep/token \\
      python3 -m tailsweep.optimize examples/optuna/study.yaml

The search space is the spec's `parameters:` (each a distribution), the
value to optimize its `metric:` ({name, goal}), the number of trials its
`run_cap:` (or --trials) and the sampler its `method:` (tpe, cmaes, qmc or
nsgaii; --sampler overrides it). Each trial Optuna asks for becomes one job
per cell of the spec's `grid:` ({} for one job a trial, or seed-like axes),
added with Sweep.add_jobs: its parameters, its trial number and the cell.
Workers run them with leases, retries, checkpoints and preemption. The
first cell's live curve of the metric feeds Optuna's pruner; a pruned
trial's jobs are cancelled. A trial's value is the mean over its jobs of
their result's summary[metric]["last"]; a failed or cancelled job fails
its trial.

Nothing is lost when the driver stops: the study lives in its own storage
(default: SQLite in `.tailsweep/` beside the spec) and the jobs in the
coordinator. Started again, it re-attaches to its running trials: a job's
id is the content hash of its parameters and trial number, so adding a
trial's cells again gives the same jobs (and adds nothing).

Optuna is optional for the rest of the package: this module imports it
(and PyYAML) only when it runs.
"""

import argparse
import dataclasses
import importlib
import itertools
import math
import os
import sys
import time
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from tailsweep._frames import _text
from tailsweep._numbers import number

# A parameter's or a grid cell's value, as a job's cell holds it.
Value = Union[str, int, float, bool]

# Methods the coordinator runs itself, and the Optuna samplers this driver
# runs (a spec's `method:`, or --sampler; `random` as a sampler only with
# --sampler: `method: random` is the coordinator's).
COORDINATOR_METHODS = ("grid", "random", "sobol")
DRIVER_METHODS = ("tpe", "cmaes", "qmc", "nsgaii")
SAMPLERS = ("tpe", "cmaes", "random", "qmc", "nsgaii")
GOALS = ("minimize", "maximize")
PARAMETER_KEYS = ("min", "max", "log", "int", "q", "values")
METRIC_KEYS = ("name", "goal")
# The job key each trial's number goes in.
TRIAL_KEY = "trial"

INSTALL_OPTUNA = ("tailsweep optimize needs Optuna: apt install "
                  "python3-optuna (Debian, Ubuntu), or pip install optuna")
INSTALL_YAML = ("tailsweep optimize needs PyYAML to read the spec: apt "
                "install python3-yaml (Debian, Ubuntu), or pip install "
                "pyyaml")


class SpecError(ValueError):
    """A spec this driver cannot run: the message names the key and what
    is allowed."""


class MetricMissing(RuntimeError):
    """The spec's metric is neither in a done job's result nor in its
    logged curves: the message names what was logged."""


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One axis of the search space: kind "float", "int" or
    "categorical"; low/high (int bounds for "int"), log, step (None: any
    value in the range), choices (categorical)."""
    name: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    step: Optional[float] = None
    choices: Tuple[Value, ...] = ()

    def distribution(self, optuna: Any) -> Any:
        """The Optuna distribution of this parameter."""
        d = optuna.distributions
        if self.kind == "categorical":
            return d.CategoricalDistribution(list(self.choices))
        if self.kind == "int":
            return d.IntDistribution(int(self.low), int(self.high),
                                     log=self.log,
                                     step=int(self.step or 1))
        return d.FloatDistribution(self.low, self.high, log=self.log,
                                   step=self.step)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a spec asks of the driver: its sweep's name, the sampler, the
    search space, the metric and its goal, the trials in all (None: the
    spec has no run_cap) and the grid's cells (one job a cell a trial;
    [{}] for `grid: {}`)."""
    name: str
    method: str
    parameters: Tuple[Parameter, ...]
    metric: str
    goal: str
    run_cap: Optional[int]
    cells: Tuple[Dict[str, Value], ...]

    def distributions(self, optuna: Any) -> Dict[str, Any]:
        return {p.name: p.distribution(optuna) for p in self.parameters}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_scalar(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


def _real(where: str, key: str, value: object) -> float:
    """A finite number; a text that reads as one too ("1e-4": YAML 1.1
    reads it as a string)."""
    got: Optional[float] = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        got = float(value)
    elif isinstance(value, str):
        try:
            got = float(value)
        except ValueError:
            got = None
    if got is None or not math.isfinite(got):
        raise SpecError("%s: '%s' is %r; allowed: a finite number"
                        % (where, key, value))
    return got


def _flag(where: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise SpecError("%s: '%s' is %r; allowed: true, false"
                        % (where, key, value))
    return value


def _multiple(span: float, step: float) -> bool:
    k = span / step
    return abs(k - round(k)) <= 1e-9 * max(1.0, abs(k))


def parse_parameter(name: str, body: object,
                    where: str = "parameters") -> Parameter:
    """One `parameters:` entry as a Parameter; SpecError naming the key
    and what is allowed."""
    at = "%s.%s" % (where, name)
    shapes = ("{min: A, max: B} (float; add log: true, int: true or q: STEP)"
              " or {values: [a, b, ...]}")
    if not isinstance(body, Mapping):
        raise SpecError("%s: %r is not a distribution; allowed: %s"
                        % (at, body, shapes))
    for key in body:
        if key not in PARAMETER_KEYS:
            raise SpecError("%s: unknown key '%s'; allowed: %s"
                            % (at, key, ", ".join(PARAMETER_KEYS)))
    if "values" in body:
        others = [k for k in body if k != "values"]
        if others:
            raise SpecError("%s: 'values' (a categorical) takes no %s"
                            % (at, ", ".join(others)))
        values = body["values"]
        if not isinstance(values, list) or not values:
            raise SpecError("%s: 'values' must be a non-empty list, e.g. "
                            "[relu, gelu]" % at)
        seen: List[str] = []
        for v in values:
            if not _is_scalar(v):
                raise SpecError("%s: value %r; allowed: strings, numbers, "
                                "booleans" % (at, v))
            if _text(v) in seen:
                raise SpecError("%s: 'values' lists %r twice" % (at, v))
            seen.append(_text(v))
        return Parameter(name, "categorical", choices=tuple(values))
    for key in ("min", "max"):
        if key not in body:
            raise SpecError("%s: missing '%s'; allowed: %s"
                            % (at, key, shapes))
    low = _real(at, "min", body["min"])
    high = _real(at, "max", body["max"])
    log = _flag(at, "log", body.get("log", False))
    is_int = _flag(at, "int", body.get("int", False))
    if low >= high:
        raise SpecError("%s: min %r >= max %r; allowed: min < max"
                        % (at, body["min"], body["max"]))
    if log and low <= 0:
        raise SpecError("%s: log: true with min %r: a log range needs "
                        "0 < min < max" % (at, body["min"]))
    step: Optional[float] = None
    if "q" in body:
        step = _real(at, "q", body["q"])
        if step <= 0:
            raise SpecError("%s: q %r; allowed: a step > 0" % (at, body["q"]))
        if log:
            raise SpecError("%s: q with log: true; allowed: one of them (a "
                            "step grid is linear)" % at)
    if is_int:
        ilow, ihigh = math.ceil(low), math.floor(high)
        if ilow > ihigh:
            raise SpecError("%s: int: true, but no integer lies in [%r, %r]"
                            % (at, body["min"], body["max"]))
        if step is not None:
            if step != int(step):
                raise SpecError("%s: q %r with int: true; allowed: a whole "
                                "step >= 1" % (at, body["q"]))
            if (ihigh - ilow) % int(step):
                raise SpecError("%s: max - min (%d) is not a multiple of q "
                                "(%d)" % (at, ihigh - ilow, int(step)))
        return Parameter(name, "int", ilow, ihigh, log, step)
    if step is not None and not _multiple(high - low, step):
        raise SpecError("%s: max - min (%r) is not a multiple of q (%r)"
                        % (at, high - low, step))
    return Parameter(name, "float", low, high, log, step)


def _grid_cells(grid: Mapping[str, Any], exclude: object,
                source: str) -> List[Dict[str, Value]]:
    """The grid's cells, last key fastest (as the coordinator expands a
    grid), less those an `exclude` entry matches."""
    axes: List[Tuple[str, List[Value]]] = []
    for key, values in grid.items():
        if not isinstance(values, list) or not values or \
                not all(_is_scalar(v) for v in values):
            raise SpecError("%s: grid key '%s' needs a non-empty list of "
                            "values, e.g. [0, 1, 2]" % (source, key))
        axes.append((str(key), list(values)))
    entries: List[Dict[str, str]] = []
    if exclude is not None:
        if not isinstance(exclude, list) or \
                not all(isinstance(e, Mapping) for e in exclude):
            raise SpecError("%s: 'exclude' must be a list of {key: value} "
                            "assignments" % source)
        entries = [{str(k): _text(v) for k, v in e.items()} for e in exclude]
    cells: List[Dict[str, Value]] = []
    for values in itertools.product(*(vs for _, vs in axes)):
        cell = {key: v for (key, _), v in zip(axes, values)}
        texts = {k: _text(v) for k, v in cell.items()}
        if not any(all(texts.get(k) == v for k, v in e.items())
                   for e in entries):
            cells.append(cell)
    if not cells:
        raise SpecError("%s: 'exclude' leaves no cell of the grid" % source)
    return cells


def parse_spec(doc: object, source: str = "the spec") -> Plan:
    """A loaded sweep spec (a mapping) as the driver's Plan; SpecError
    (with `source`, the spec's path) naming the key and what is allowed."""
    if not isinstance(doc, Mapping):
        raise SpecError("%s: a sweep spec is a mapping (name, kind, grid, "
                        "method, parameters, metric, run_cap, ...)" % source)
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("%s: missing 'name' (the sweep's name)" % source)
    method = doc.get("method", "grid")
    allowed = ("allowed here: %s (Optuna samplers this driver runs); "
               "grid, random and sobol the coordinator runs itself "
               "(tailsweep submit)" % ", ".join(DRIVER_METHODS))
    if method in COORDINATOR_METHODS:
        raise SpecError("%s: method: %s is run by the coordinator itself "
                        "(tailsweep submit SPEC)%s; %s"
                        % (source, method,
                           "" if "method" in doc else " (no 'method' given)",
                           allowed))
    if method not in DRIVER_METHODS:
        raise SpecError("%s: method %r; %s" % (source, method, allowed))

    space = doc.get("parameters")
    if space is None:
        raise SpecError("%s: missing 'parameters' (the search space: NAME: "
                        "{min: A, max: B[, log: true][, int: true][, q: "
                        "STEP]} or NAME: {values: [a, b]})" % source)
    if not isinstance(space, Mapping) or not space:
        raise SpecError("%s: 'parameters' must map each name to a "
                        "distribution ({min, max[, log, int, q]} or "
                        "{values: [...]}), at least one" % source)
    grid = doc.get("grid", {})
    if grid is None:
        grid = {}
    if not isinstance(grid, Mapping):
        raise SpecError("%s: 'grid' must map each key to a list of values "
                        "({} for one job a trial)" % source)
    fixed = doc.get("fixed") or {}
    if not isinstance(fixed, Mapping):
        raise SpecError("%s: 'fixed' must be a {key: value} map" % source)
    parameters: List[Parameter] = []
    for key, body in space.items():
        if not isinstance(key, str) or not key:
            raise SpecError("%s: parameter name %r; allowed: a job key (a "
                            "non-empty text)" % (source, key))
        if key == TRIAL_KEY:
            raise SpecError("%s: parameters.%s: '%s' is the job key of each "
                            "trial's number; name the parameter otherwise"
                            % (source, key, TRIAL_KEY))
        if key in grid:
            raise SpecError("%s: parameters.%s: also a key of 'grid'; a key "
                            "is searched or gridded, not both" % (source, key))
        if key in fixed:
            raise SpecError("%s: parameters.%s: also a key of 'fixed'; a key "
                            "is searched or fixed, not both" % (source, key))
        parameters.append(parse_parameter(key, body, "%s: parameters"
                                          % source))
    if TRIAL_KEY in grid or TRIAL_KEY in fixed:
        raise SpecError("%s: '%s' is the job key of each trial's number; it "
                        "cannot be in 'grid' or 'fixed'" % (source, TRIAL_KEY))

    metric = doc.get("metric")
    if metric is None:
        raise SpecError("%s: missing 'metric' (what to optimize: {name: "
                        "loss, goal: minimize}; goal: %s)"
                        % (source, " | ".join(GOALS)))
    if not isinstance(metric, Mapping):
        raise SpecError("%s: 'metric' is %r; allowed: {name: NAME, goal: %s}"
                        % (source, metric, " | ".join(GOALS)))
    for key in metric:
        if key not in METRIC_KEYS:
            raise SpecError("%s: metric: unknown key '%s'; allowed: %s"
                            % (source, key, ", ".join(METRIC_KEYS)))
    metric_name = metric.get("name")
    if not isinstance(metric_name, str) or not metric_name:
        raise SpecError("%s: metric: missing 'name' (a metric the program "
                        "logs, e.g. loss)" % source)
    goal = metric.get("goal", "minimize")
    if goal not in GOALS:
        raise SpecError("%s: metric.goal %r; allowed: %s"
                        % (source, goal, ", ".join(GOALS)))

    run_cap = doc.get("run_cap")
    if run_cap is not None and (not isinstance(run_cap, int) or
                                isinstance(run_cap, bool) or run_cap < 1):
        raise SpecError("%s: run_cap %r; allowed: a whole number >= 1 (the "
                        "trials in all)" % (source, run_cap))
    cells = _grid_cells(grid, doc.get("exclude"), source)
    return Plan(name, str(method), tuple(parameters), metric_name, str(goal),
                run_cap, tuple(cells))


def _yaml() -> Any:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise SpecError(INSTALL_YAML) from None


def load_spec(path: str) -> Plan:
    """The spec file at `path` as a Plan (PyYAML reads it)."""
    yaml = _yaml()
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise SpecError("%s: %s" % (path, e.strerror)) from None
    except yaml.YAMLError as e:
        raise SpecError("%s: not YAML: %s" % (path, e)) from None
    return parse_spec(doc, path)


def import_optuna() -> Any:
    """Optuna, or SpecError saying how to install it."""
    try:
        return importlib.import_module("optuna")
    except ImportError:
        raise SpecError(INSTALL_OPTUNA) from None


def make_sampler(optuna: Any, name: str, seed: Optional[int]) -> Any:
    """The Optuna sampler `name` (one of SAMPLERS) with `seed`."""
    s = optuna.samplers
    if name == "tpe":
        return s.TPESampler(seed=seed)
    if name == "cmaes":
        return s.CmaEsSampler(seed=seed)
    if name == "random":
        return s.RandomSampler(seed=seed)
    if name == "qmc":
        return s.QMCSampler(seed=seed, scramble=True)
    if name == "nsgaii":
        return s.NSGAIISampler(seed=seed)
    raise SpecError("sampler '%s'; allowed: %s" % (name, ", ".join(SAMPLERS)))


def default_storage(spec_path: str, sweep: str) -> str:
    """sqlite:///SPEC_FOLDER/.tailsweep/SWEEP.optuna.db (the folder made)."""
    folder = os.path.join(os.path.dirname(os.path.abspath(spec_path)),
                          ".tailsweep")
    os.makedirs(folder, exist_ok=True)
    return "sqlite:///" + os.path.join(folder, sweep + ".optuna.db")


def trial_cells(number: int, params: Mapping[str, Value],
                cells: Sequence[Mapping[str, Value]]
                ) -> List[Dict[str, Value]]:
    """The jobs of a trial: its parameters, its number (two trials that
    ask for the same values are still two runs) and each grid cell."""
    out: List[Dict[str, Value]] = []
    for cell in cells:
        job: Dict[str, Value] = dict(params)
        job.update(cell)
        job[TRIAL_KEY] = number
        out.append(job)
    return out


@dataclasses.dataclass
class Running:
    """A trial whose jobs run: the Optuna trial, its number, its job ids
    (grid order; the first one's curve feeds the pruner) and the last step
    reported."""
    trial: Any
    number: int
    job_ids: List[str]
    last: int = 0


ENDED = ("done", "failed", "cancelled")


class Driver:
    """Runs `plan`'s trials as `sweep`'s jobs (a tailsweep.client.Sweep, or
    anything with add_jobs, jobs and cancel_job), `parallel` at once."""

    def __init__(self, optuna: Any, sweep: Any, study: Any, plan: Plan,
                 parallel: int = 4, poll: float = 1.0,
                 log: Callable[[str], None] = print,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.optuna, self.sweep, self.study, self.plan = (optuna, sweep,
                                                          study, plan)
        self.parallel, self.poll, self.log, self.sleep = (parallel, poll,
                                                          log, sleep)
        self.states = optuna.trial.TrialState
        self.space = plan.distributions(optuna)
        self.metric = plan.metric
        self.metric_seen = False  # in some done job's result or curve
        self.running: Dict[int, Running] = {}

    # The study's own bookkeeping.
    def _counted(self) -> List[Any]:
        """The study's trials, less those abandoned (stopped before their
        values were chosen: they never had a job)."""
        return [t for t in self.study.get_trials(deepcopy=False)
                if not t.user_attrs.get("tailsweep_abandoned")]

    def attach(self, trial: Any, params: Mapping[str, Value],
               last: int = 0) -> Running:
        ids = self.sweep.add_jobs(trial_cells(trial.number, params,
                                              self.plan.cells))
        trial.set_user_attr("tailsweep_jobs", ids)
        trial.set_user_attr("tailsweep_job", ids[0])
        entry = Running(trial, trial.number, ids, last)
        self.running[trial.number] = entry
        shown = ids[0][:12] if len(ids) == 1 else \
            "%s.. (%d jobs)" % (ids[0][:12], len(ids))
        self.log("trial %d -> job %s %s" % (trial.number, shown,
                                             dict(params)))
        return entry

    def reattach(self) -> None:
        """The study's running trials (a driver that stopped): their jobs
        again, their curves from the last step reported; a trial the
        driver had decided to prune is pruned."""
        for frozen in self.study.get_trials(
                deepcopy=False, states=(self.states.RUNNING,)):
            params = dict(frozen.params)
            trial = self.optuna.trial.Trial(self.study, frozen._trial_id)
            had_jobs = "tailsweep_jobs" in frozen.user_attrs
            if not had_jobs and set(params) != set(self.space):
                # Stopped before its values were all chosen: no job ran.
                trial.set_user_attr("tailsweep_abandoned", True)
                self.study.tell(trial, state=self.states.FAIL)
                self.log("trial %d: stopped before its values were chosen; "
                         "failed, not counted" % frozen.number)
                continue
            last = max(frozen.intermediate_values, default=0)
            if "tailsweep_pruned" in frozen.user_attrs:
                ids = list(frozen.user_attrs.get("tailsweep_jobs", []))
                self._prune(Running(trial, frozen.number, ids, last))
                continue
            self.attach(trial, params, last)

    # One poll.
    def _value(self, job: Any) -> Optional[float]:
        """A done job's value of the metric: its result's summary[metric]
        ["last"], or its last logged point; None when it has neither
        (MetricMissing when no done job ever had it)."""
        result = job.result if isinstance(job.result, dict) else {}
        summary = result.get("summary")
        summary = summary if isinstance(summary, dict) else {}
        entry = summary.get(self.metric)
        if isinstance(entry, dict) and "last" in entry:
            self.metric_seen = True
            last = number(entry["last"])
            return float(last) if isinstance(last, (int, float)) else None
        points = job.history(names=[self.metric])
        if points:
            self.metric_seen = True
            return float(points[-1]["value"])
        if not self.metric_seen:
            names = set(summary)
            names.update(p["name"] for p in job.history())
            raise MetricMissing(
                "metric '%s' (the spec's metric.name) is neither in the "
                "result summary nor in the logged curves of done job %s; "
                "it logged: %s. Fix metric.name (or the program) and start "
                "again: the running trials re-attach"
                % (self.metric, job.id[:12],
                   ", ".join(sorted(names)) or "nothing"))
        return None

    def _prune(self, entry: Running) -> None:
        # Decided first, so a driver stopped midway prunes it again.
        entry.trial.set_user_attr("tailsweep_pruned", entry.last)
        for job_id in entry.job_ids:
            self.sweep.cancel_job(job_id)
        self.study.tell(entry.trial, state=self.states.PRUNED)
        self.log("trial %d pruned at step %d; job%s cancelled"
                 % (entry.number, entry.last,
                    "" if len(entry.job_ids) == 1 else "s"))

    def _fail(self, entry: Running, jobs: Sequence[Any], why: str) -> None:
        for job in jobs:
            if job.state not in ENDED:
                self.sweep.cancel_job(job.id)
        self.study.tell(entry.trial, state=self.states.FAIL)
        self.log("trial %d failed: %s" % (entry.number, why))

    def _check(self, entry: Running, jobs: Sequence[Any]) -> bool:
        """Reports the first job's new points; tells the trial's end when
        it has one. True when it ended."""
        first = jobs[0]
        for p in first.history(names=[self.metric],
                               step_min=entry.last + 1):
            entry.last = max(entry.last, int(p["step"]))
            self.metric_seen = True
            if math.isfinite(p["value"]):
                entry.trial.report(float(p["value"]), int(p["step"]))
        if not self.metric_seen:  # the first done job has the metric
            for job in jobs:
                if job.state == "done":
                    self._value(job)
        bad = [j for j in jobs if j.state in ("failed", "cancelled")]
        if bad:
            self._fail(entry, jobs, "job %s %s: %s"
                       % (bad[0].id[:12], bad[0].state, bad[0].last_error))
            return True
        if all(j.state == "done" for j in jobs):
            values = [self._value(j) for j in jobs]
            known = [v for v in values if v is not None]
            if len(known) < len(values):
                self._fail(entry, jobs, "a done job logged no '%s'"
                           % self.metric)
            elif not all(math.isfinite(v) for v in known):
                self._fail(entry, jobs, "%s %s" % (self.metric, known))
            else:
                value = sum(known) / len(known)
                self.study.tell(entry.trial, value)
                self.log("trial %d done: %s %s%s"
                         % (entry.number, self.metric, value,
                            "" if len(known) == 1 else
                            " (mean of %d jobs)" % len(known)))
            return True
        if entry.trial.should_prune():
            self._prune(entry)
            return True
        return False

    def step(self, trials: int) -> None:
        """Starts trials up to `parallel` (and `trials` in all), then reads
        the running ones' jobs once."""
        counted = len(self._counted())
        while len(self.running) < self.parallel and counted < trials:
            trial = self.study.ask(self.space)
            self.attach(trial, trial.params)
            counted += 1
        if not self.running:
            return
        numbers = sorted(self.running)
        jobs = {j.id: j for j in self.sweep.jobs(where={TRIAL_KEY: numbers})}
        for n in numbers:
            entry = self.running[n]
            got = [jobs.get(i) for i in entry.job_ids]
            if any(j is None for j in got):
                continue  # not visible yet
            if self._check(entry, got):
                del self.running[n]

    def run(self, trials: int) -> None:
        """Re-attaches, then polls until `trials` trials have ended (once
        re-attached, every running trial is this driver's)."""
        self.reattach()
        while True:
            self.step(trials)
            if not self.running and len(self._counted()) >= trials:
                return
            self.sleep(self.poll)


def _parser() -> argparse.ArgumentParser:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(
        prog="python3 -m tailsweep.optimize",
        description=doc.split("\n\n")[0].replace("\n", " "),
        epilog="The coordinator: $TAILSWEEP_URL (with $TAILSWEEP_TOKEN_FILE, "
        "$TAILSWEEP_TLS_CA) or $TAILSWEEP_RUN_DIR. Samplers: tpe, cmaes, "
        "qmc, nsgaii (a spec's method:), random (--sampler only: "
        "method: random is the coordinator's own). Exit status: 0 done, 1 no "
        "trial completed or the coordinator failed, 2 a bad spec or "
        "option, a metric never logged, or Optuna missing (apt install "
        "python3-optuna).")
    ap.add_argument("spec", help="the sweep spec: method, parameters, "
                    "metric, run_cap, grid, fixed, ...")
    ap.add_argument("--trials", type=int, default=None,
                    help="trials in all (default: the spec's run_cap)")
    ap.add_argument("--parallel", type=int, default=4,
                    help="trials running at once (default 4)")
    ap.add_argument("--poll", type=float, default=1.0,
                    help="seconds between reads of the jobs (default 1)")
    ap.add_argument("--seed", type=int, default=None,
                    help="the sampler's seed (a restarted driver with a seed "
                    "asks the same values again: trials stay distinct runs)")
    ap.add_argument("--storage", default=None,
                    help="Optuna storage URL (default: sqlite:///SPEC_FOLDER"
                    "/.tailsweep/SWEEP.optuna.db)")
    ap.add_argument("--sampler", choices=SAMPLERS, default=None,
                    help="the Optuna sampler (default: the spec's method)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    def fail(message: str, code: int) -> int:
        print("tailsweep optimize: %s" % message, file=sys.stderr,
              flush=True)
        return code

    from tailsweep import errors
    try:
        for flag, value, low in (("--parallel", args.parallel, 1),
                                 ("--trials", args.trials, 1)):
            if value is not None and value < low:
                raise SpecError("%s %d; allowed: >= %d" % (flag, value, low))
        if args.poll <= 0:
            raise SpecError("--poll %r; allowed: > 0 seconds" % args.poll)
        optuna = import_optuna()
        plan = load_spec(args.spec)
        trials = args.trials if args.trials is not None else plan.run_cap
        if trials is None:
            raise SpecError("%s: no 'run_cap' (the trials in all); add one "
                            "or pass --trials N" % args.spec)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = make_sampler(optuna, args.sampler or plan.method,
                               args.seed)

        from tailsweep.client import Client
        client = Client.from_env()
        submitted = client.submit(args.spec)  # again: adds nothing
        sweep = client.sweep(str(submitted["sweep"]))
        storage = args.storage or default_storage(args.spec, sweep.name)
        study = optuna.create_study(
            study_name=sweep.name, storage=storage, load_if_exists=True,
            direction=plan.goal, sampler=sampler,
            pruner=optuna.pruners.MedianPruner(n_startup_trials=3,
                                               n_warmup_steps=5))
        if study.direction.name.lower() != plan.goal:
            raise SpecError(
                "the study '%s' in %s is to %s; the spec's metric.goal says "
                "%s: keep the goal, or use another --storage"
                % (sweep.name, storage, study.direction.name.lower(),
                   plan.goal))
        log("study '%s' (%s, %s %s): %d trials, %d at once; storage %s"
            % (sweep.name, args.sampler or plan.method, plan.goal,
               plan.metric, trials, args.parallel, storage))
        Driver(optuna, sweep, study, plan, args.parallel, args.poll,
               log).run(trials)
    except (SpecError, MetricMissing) as e:
        return fail(str(e), 2)
    except errors.InvalidArgument as e:
        return fail(str(e), 2)
    except errors.Error as e:
        return fail(str(e), 1)
    except KeyboardInterrupt:
        return fail("stopped; started again, it re-attaches to the running "
                    "trials", 130)
    done = [t for t in study.get_trials(deepcopy=False)
            if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return fail("no trial completed", 1)
    best = study.best_trial
    log("best: trial %d, %s %s, %s" % (best.number, plan.metric, best.value,
                                       best.params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
