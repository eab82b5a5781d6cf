"""tailsweep.optimize without services: a spec's `parameters:` as Optuna
distributions and the errors a bad one gets; the driver against a fake
sweep (one job set a trial, the mean over a trial's cells, pruned trials'
jobs cancelled, failed jobs failing their trial, a killed driver
re-attaching, a metric never logged); the command's exit codes."""

import hashlib
import math
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
from tailsweep import optimize  # noqa: E402
from tailsweep.optimize import SpecError, parse_spec  # noqa: E402

PYTHON_ENV = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
for _name in ("TAILSWEEP_URL", "TAILSWEEP_RUN_DIR", "TAILSWEEP_DB"):
    PYTHON_ENV.pop(_name, None)


def spec(**changes):
    doc = {"name": "opt", "kind": "command", "command": ["python3", "x.py"],
           "method": "tpe",
           "parameters": {"lr": {"min": 1.0e-4, "max": 1.0, "log": True},
                          "width": {"min": 8, "max": 64, "int": True},
                          "drop": {"min": 0.0, "max": 0.5, "q": 0.1},
                          "act": {"values": ["relu", "gelu"]}},
           "run_cap": 20, "metric": {"name": "loss", "goal": "minimize"},
           "grid": {}, "fixed": {"steps": 30}}
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def with_param(name, body):
    return spec(parameters={name: body})


# --- The spec as a plan --------------------------------------------------

def test_the_brief_spec_parses_to_its_distributions():
    plan = parse_spec(spec(), "s.yaml")
    assert plan.name == "opt" and plan.method == "tpe"
    assert plan.metric == "loss" and plan.goal == "minimize"
    assert plan.run_cap == 20 and plan.cells == ({},)
    p = {x.name: x for x in plan.parameters}
    assert list(p) == ["lr", "width", "drop", "act"]
    assert (p["lr"].kind, p["lr"].low, p["lr"].high, p["lr"].log) == \
        ("float", 1e-4, 1.0, True)
    assert (p["width"].kind, p["width"].low, p["width"].high) == \
        ("int", 8, 64)
    assert (p["drop"].kind, p["drop"].step) == ("float", 0.1)
    assert p["act"].choices == ("relu", "gelu")


def test_distributions_are_optunas():
    optuna = pytest.importorskip("optuna")
    d = parse_spec(spec()).distributions(optuna)
    D = optuna.distributions
    assert d["lr"] == D.FloatDistribution(1e-4, 1.0, log=True)
    assert d["width"] == D.IntDistribution(8, 64)
    assert d["drop"] == D.FloatDistribution(0.0, 0.5, step=0.1)
    assert d["act"] == D.CategoricalDistribution(["relu", "gelu"])
    d = parse_spec(with_param("w", {"min": 2, "max": 64, "int": True,
                                    "log": True})).distributions(optuna)
    assert d["w"] == D.IntDistribution(2, 64, log=True)
    d = parse_spec(with_param("w", {"min": 0.5, "max": 9.5, "int": True,
                                    "q": 2})).distributions(optuna)
    assert d["w"] == D.IntDistribution(1, 9, step=2)


def test_goal_defaults_to_minimize_and_maximize_is_kept():
    assert parse_spec(spec(metric={"name": "acc"})).goal == "minimize"
    assert parse_spec(spec(metric={"name": "acc", "goal": "maximize"})
                      ).goal == "maximize"


def test_a_text_number_reads_as_one():
    # YAML 1.1 (PyYAML) reads 1e-4 as a string.
    p = parse_spec(with_param("lr", {"min": "1e-4", "max": 1, "log": True}))
    assert p.parameters[0].low == 1e-4


def test_grid_cells_are_the_product_less_excluded():
    plan = parse_spec(spec(grid={"seed": [0, 1], "data": ["a", "b"]},
                           exclude=[{"seed": 1, "data": "b"}]))
    assert plan.cells == ({"seed": 0, "data": "a"}, {"seed": 0, "data": "b"},
                          {"seed": 1, "data": "a"})
    assert parse_spec(spec(grid=None)).cells == ({},)


def test_trial_cells_carry_params_cell_and_number():
    assert optimize.trial_cells(3, {"lr": 0.1}, [{"seed": 0}, {"seed": 1}]) \
        == [{"lr": 0.1, "seed": 0, "trial": 3},
            {"lr": 0.1, "seed": 1, "trial": 3}]


BAD = [
    # (the spec's changes, words the message must hold)
    (dict(parameters=None), ["missing 'parameters'", "min", "values"]),
    (dict(parameters={}), ["'parameters' must map"]),
    (dict(parameters=[1, 2]), ["'parameters' must map"]),
    (dict(parameters={"lr": 0.1}), ["parameters.lr", "not a distribution"]),
    (dict(parameters={"lr": {"min": 0.1}}), ["parameters.lr",
                                             "missing 'max'"]),
    (dict(parameters={"lr": {"min": 1, "max": 2, "lg": True}}),
     ["parameters.lr", "unknown key 'lg'", "allowed: min, max, log, int, q, "
      "values"]),
    (dict(parameters={"lr": {"min": 1, "max": 1}}),
     ["parameters.lr", "min 1 >= max 1", "min < max"]),
    (dict(parameters={"lr": {"min": 2, "max": 1}}), ["min 2 >= max 1"]),
    (dict(parameters={"lr": {"min": 0, "max": 1, "log": True}}),
     ["parameters.lr", "log: true with min 0", "0 < min"]),
    (dict(parameters={"lr": {"min": -1, "max": 1, "log": True}}),
     ["log: true with min -1"]),
    (dict(parameters={"w": {"min": 0.2, "max": 0.8, "int": True}}),
     ["parameters.w", "int: true", "no integer lies in [0.2, 0.8]"]),
    (dict(parameters={"w": {"min": 1, "max": 9, "int": True, "q": 1.5}}),
     ["q 1.5 with int: true", "whole step"]),
    (dict(parameters={"w": {"min": 1, "max": 8, "int": True, "q": 2}}),
     ["not a multiple of q"]),
    (dict(parameters={"d": {"min": 0, "max": 0.45, "q": 0.1}}),
     ["parameters.d", "not a multiple of q"]),
    (dict(parameters={"d": {"min": 0, "max": 1, "q": 0}}), ["q 0", "> 0"]),
    (dict(parameters={"d": {"min": 0.1, "max": 1, "q": 0.1, "log": True}}),
     ["q with log: true"]),
    (dict(parameters={"d": {"min": "a", "max": 1}}),
     ["parameters.d", "'min' is 'a'", "finite number"]),
    (dict(parameters={"d": {"min": 0, "max": float("inf")}}),
     ["'max' is inf"]),
    (dict(parameters={"d": {"min": 0, "max": 1, "log": "yes"}}),
     ["'log' is 'yes'", "true, false"]),
    (dict(parameters={"a": {"values": []}}), ["parameters.a",
                                              "non-empty list"]),
    (dict(parameters={"a": {"values": "relu"}}), ["non-empty list"]),
    (dict(parameters={"a": {"values": [1, 1]}}), ["lists 1 twice"]),
    (dict(parameters={"a": {"values": [[1], 2]}}), ["value [1]"]),
    (dict(parameters={"a": {"values": [1, 2], "min": 0}}),
     ["'values' (a categorical) takes no min"]),
    (dict(parameters={"trial": {"min": 0, "max": 1}}),
     ["parameters.trial", "each trial's number"]),
    (dict(parameters={"steps": {"min": 1, "max": 9}}),
     ["parameters.steps", "also a key of 'fixed'"]),
    (dict(grid={"lr": [1, 2]}), ["parameters.lr", "also a key of 'grid'"]),
    (dict(grid={"trial": [1, 2]}), ["'trial'", "'grid' or 'fixed'"]),
    (dict(grid={"seed": []}), ["grid key 'seed'", "non-empty list"]),
    (dict(grid=[1]), ["'grid' must map"]),
    (dict(grid={"seed": [0]}, exclude=[{"seed": 0}]), ["leaves no cell"]),
    (dict(metric=None), ["missing 'metric'", "minimize | maximize"]),
    (dict(metric="loss"), ["'metric' is 'loss'", "{name: NAME, goal:"]),
    (dict(metric={"goal": "minimize"}), ["metric: missing 'name'"]),
    (dict(metric={"name": "loss", "goal": "min"}),
     ["metric.goal 'min'", "allowed: minimize, maximize"]),
    (dict(metric={"name": "loss", "direction": "min"}),
     ["metric: unknown key 'direction'", "allowed: name, goal"]),
    (dict(method=None), ["method: grid", "coordinator", "no 'method' given",
                         "tpe, cmaes, qmc, nsgaii"]),
    (dict(method="sobol"), ["method: sobol is run by the coordinator"]),
    (dict(method="bayes"), ["method 'bayes'", "tpe, cmaes, qmc, nsgaii"]),
    (dict(run_cap=0), ["run_cap 0", ">= 1"]),
    (dict(run_cap="ten"), ["run_cap 'ten'"]),
    (dict(name=None), ["missing 'name'"]),
]


@pytest.mark.parametrize("changes,words", BAD,
                         ids=[str(i) for i in range(len(BAD))])
def test_a_bad_spec_names_the_key_and_what_is_allowed(changes, words):
    with pytest.raises(SpecError) as e:
        parse_spec(spec(**changes), "s.yaml")
    message = str(e.value)
    assert message.startswith("s.yaml: "), message
    for w in words:
        assert w in message, message


def test_not_a_mapping():
    with pytest.raises(SpecError, match="a sweep spec is a mapping"):
        parse_spec([1, 2], "s.yaml")


def test_the_example_spec_loads():
    pytest.importorskip("yaml")
    plan = optimize.load_spec(os.path.join(REPO, "examples", "optuna",
                                           "study.yaml"))
    assert plan.name == "optuna-example" and plan.method == "tpe"
    assert [p.name for p in plan.parameters] == ["lr", "width"]
    assert plan.metric == "loss" and plan.cells == ({},)


def test_yaml_text_of_the_brief(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "s.yaml"
    path.write_text("""\
name: tpe-example
kind: command
command: [python3, objective.py]
method: tpe
parameters:
  lr: {min: 1.0e-4, max: 1.0, log: true}
  width: {min: 8, max: 64, int: true}
  drop: {min: 0.0, max: 0.5, q: 0.1}
  act: {values: [relu, gelu]}
run_cap: 20
metric: {name: loss, goal: minimize}
grid: {seed: [0, 1, 2]}
fixed: {steps: 30}
""")
    plan = optimize.load_spec(str(path))
    assert [p.kind for p in plan.parameters] == ["float", "int", "float",
                                                 "categorical"]
    assert plan.cells == ({"seed": 0}, {"seed": 1}, {"seed": 2})
    path.write_text("name: x\n  bad: [")
    with pytest.raises(SpecError, match="not YAML"):
        optimize.load_spec(str(path))
    with pytest.raises(SpecError, match="No such file"):
        optimize.load_spec(str(tmp_path / "none.yaml"))


def test_default_storage_is_beside_the_spec(tmp_path):
    url = optimize.default_storage(str(tmp_path / "s.yaml"), "opt")
    assert url == "sqlite:///" + str(tmp_path / ".tailsweep" /
                                     "opt.optuna.db")
    assert (tmp_path / ".tailsweep").is_dir()


# --- The driver against a fake sweep -------------------------------------

class FakeJob:
    def __init__(self, job_id, params):
        self.id, self.params = job_id, params
        self.state, self.result, self.last_error = "queued", None, ""
        self.points = []  # (name, step, value)
        self.starts = 0

    def history(self, names=None, step_min=None, step_max=None):
        return [{"job_id": self.id, "name": n, "step": s, "value": v}
                for n, s, v in self.points
                if (names is None or n in names) and
                (step_min is None or s >= step_min)]


class FakeSweep:
    """add_jobs, jobs and cancel_job as a coordinator has them: ids are
    content hashes, adding a cell again adds nothing. tick() is a worker:
    every queued or leased job logs one more step, done at `steps`."""

    def __init__(self, curve, steps=10, metric="loss", fail=()):
        self.by_id, self.curve, self.steps = {}, curve, steps
        self.metric, self.fail = metric, fail
        self.added, self.cancelled = [], []

    def add_jobs(self, cells):
        ids = []
        for cell in cells:
            text = "".join("%s=%r\n" % kv for kv in sorted(cell.items()))
            job_id = hashlib.sha256(text.encode()).hexdigest()
            self.by_id.setdefault(job_id, FakeJob(job_id, dict(cell)))
            self.added.append(job_id)
            ids.append(job_id)
        return ids

    def jobs(self, where=None):
        for job in self.by_id.values():
            if where is None or all(job.params.get(k) in v
                                    for k, v in where.items()):
                yield job

    def cancel_job(self, job_id):
        job = self.by_id[job_id]
        self.cancelled.append(job_id)
        if job.state in ("queued", "leased"):
            job.state = "cancelled"
            return {"jobs_cancelled": 1}
        return {"jobs_cancelled": 0}

    def tick(self, _seconds=0):
        for job in self.by_id.values():
            if job.state == "queued":
                job.state, job.starts = "leased", job.starts + 1
            if job.state != "leased":
                continue
            step = len(job.points) + 1
            if self.fail and self.fail(job.params):
                job.state, job.last_error = "failed", "exit status 1"
                continue
            value = self.curve(job.params, step)
            job.points.append((self.metric, step, value))
            if step == self.steps:
                job.state = "done"
                job.result = {"summary": {self.metric: {
                    "points": step, "last_step": step, "last": value}}}


def level(params, step):
    return (math.log10(params["lr"]) + 2.0) ** 2 + 1.0 / step + \
        0.01 * params.get("seed", 0)


LR = {"lr": {"min": 1.0e-4, "max": 1.0, "log": True}}


def study_of(optuna, storage, plan, startup=100):
    return optuna.create_study(
        study_name=plan.name, storage=storage, load_if_exists=True,
        direction=plan.goal, sampler=optuna.samplers.RandomSampler(seed=1),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=startup,
                                           n_warmup_steps=2))


def test_each_trial_runs_one_job_set_and_a_killed_driver_reattaches(
        tmp_path):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plan = parse_spec(spec(parameters=LR, grid={"seed": [0, 1]}))
    storage = "sqlite:///" + str(tmp_path / "s.db")
    sweep = FakeSweep(level)
    lines = []
    first = optimize.Driver(optuna, sweep, study_of(optuna, storage, plan),
                            plan, parallel=2, poll=0, log=lines.append)
    first.step(6)  # two trials' jobs added
    for _ in range(4):
        sweep.tick()
        first.step(6)  # their curves reported up to step 4
    # Killed here. Started again:
    study = study_of(optuna, storage, plan)
    second = optimize.Driver(optuna, sweep, study, plan, parallel=2, poll=0,
                             log=lines.append, sleep=sweep.tick)
    second.run(6)
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 6
    # One job a cell a trial; none run twice.
    assert len(sweep.by_id) == 12
    assert all(j.starts == 1 for j in sweep.by_id.values())
    assert sorted({j.params["trial"] for j in sweep.by_id.values()}) == \
        list(range(6))
    for t in trials:
        ids = t.user_attrs["tailsweep_jobs"]
        jobs = [sweep.by_id[i] for i in ids]
        assert [j.params["seed"] for j in jobs] == [0, 1]
        assert all(j.params["trial"] == t.number for j in jobs)
        assert all(j.params["lr"] == t.params["lr"] for j in jobs)
        # The value: the mean over the trial's cells.
        assert t.value == pytest.approx(
            sum(j.result["summary"]["loss"]["last"] for j in jobs) / 2)
        # The curve Optuna saw: the first cell's, each step once.
        first_curve = {s: v for _, s, v in jobs[0].points}
        assert t.intermediate_values == pytest.approx(first_curve)
    text = "\n".join(lines)
    assert text.count("trial 0 -> job") == 2, text  # re-attached once
    assert "(mean of 2 jobs)" in text
    assert "best" not in text  # main() prints it


def test_pruned_trials_have_their_jobs_cancelled(tmp_path):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plan = parse_spec(spec(parameters=LR, grid={"seed": [0, 1]}))
    study = study_of(optuna, "sqlite:///" + str(tmp_path / "s.db"), plan,
                     startup=2)
    sweep = FakeSweep(level, steps=20)
    lines = []
    optimize.Driver(optuna, sweep, study, plan, parallel=1, poll=0,
                    log=lines.append, sleep=sweep.tick).run(12)
    trials = study.get_trials()
    pruned = [t for t in trials if t.state.name == "PRUNED"]
    assert pruned, lines
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    for t in pruned:
        ids = t.user_attrs["tailsweep_jobs"]
        assert all(sweep.by_id[i].state == "cancelled" for i in ids)
        assert "tailsweep_pruned" in t.user_attrs
        assert "trial %d pruned at step" % t.number in "\n".join(lines)
    for t in trials:
        if t.state.name == "COMPLETE":
            ids = t.user_attrs["tailsweep_jobs"]
            assert all(sweep.by_id[i].state == "done" for i in ids)
    assert len(sweep.by_id) == 24


def test_a_prune_decided_before_a_kill_is_carried_out(tmp_path):
    optuna = pytest.importorskip("optuna")
    plan = parse_spec(spec(parameters=LR))
    storage = "sqlite:///" + str(tmp_path / "s.db")
    sweep = FakeSweep(level)
    first = optimize.Driver(optuna, sweep, study_of(optuna, storage, plan),
                            plan, parallel=1, poll=0, log=lambda _: None)
    first.step(1)
    entry = first.running[0]
    entry.trial.set_user_attr("tailsweep_pruned", 0)  # then killed
    study = study_of(optuna, storage, plan)
    optimize.Driver(optuna, sweep, study, plan, parallel=1, poll=0,
                    log=lambda _: None, sleep=sweep.tick).run(1)
    [t] = study.get_trials()
    assert t.state.name == "PRUNED"
    assert sweep.by_id[entry.job_ids[0]].state == "cancelled"


def test_a_trial_stopped_before_its_values_is_not_counted(tmp_path):
    optuna = pytest.importorskip("optuna")
    plan = parse_spec(spec(parameters=LR))
    study = study_of(optuna, "sqlite:///" + str(tmp_path / "s.db"), plan)
    study.ask()  # a driver killed inside ask(): no values, no job
    sweep = FakeSweep(level)
    lines = []
    optimize.Driver(optuna, sweep, study, plan, parallel=2, poll=0,
                    log=lines.append, sleep=sweep.tick).run(3)
    states = [t.state.name for t in study.get_trials()]
    assert states == ["FAIL", "COMPLETE", "COMPLETE", "COMPLETE"]
    assert len(sweep.by_id) == 3
    assert "stopped before its values were chosen" in "\n".join(lines)


def test_a_failed_job_fails_its_trial_and_cancels_the_rest(tmp_path):
    optuna = pytest.importorskip("optuna")
    plan = parse_spec(spec(parameters=LR, grid={"seed": [0, 1]}))
    study = study_of(optuna, "sqlite:///" + str(tmp_path / "s.db"), plan)
    sweep = FakeSweep(level, fail=lambda p: p["seed"] == 1)
    lines = []
    optimize.Driver(optuna, sweep, study, plan, parallel=1, poll=0,
                    log=lines.append, sleep=sweep.tick).run(2)
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "FAIL"]
    states = sorted(j.state for j in sweep.by_id.values())
    assert states == ["cancelled", "cancelled", "failed", "failed"]
    assert "trial 0 failed: job" in "\n".join(lines)
    assert "exit status 1" in "\n".join(lines)


def test_a_metric_never_logged_stops_the_driver_naming_what_was(tmp_path):
    optuna = pytest.importorskip("optuna")
    plan = parse_spec(spec(parameters=LR, metric={"name": "los"}))
    study = study_of(optuna, "sqlite:///" + str(tmp_path / "s.db"), plan)
    sweep = FakeSweep(level, steps=3, metric="loss")
    driver = optimize.Driver(optuna, sweep, study, plan, parallel=2, poll=0,
                             log=lambda _: None, sleep=sweep.tick)
    with pytest.raises(optimize.MetricMissing) as e:
        driver.run(4)
    message = str(e.value)
    assert "metric 'los'" in message and "it logged: loss" in message
    # Nothing told: restarted with the right metric, the trials re-attach.
    assert all(t.state.name == "RUNNING" for t in study.get_trials())


def test_a_metric_only_in_the_curve_is_read_from_it(tmp_path):
    optuna = pytest.importorskip("optuna")
    plan = parse_spec(spec(parameters=LR))
    study = study_of(optuna, "sqlite:///" + str(tmp_path / "s.db"), plan)
    sweep = FakeSweep(level, steps=3)
    real_tick = sweep.tick

    def tick(_seconds=0):
        real_tick()
        for job in sweep.by_id.values():
            if job.state == "done":
                job.result = {"summary": {}}
    optimize.Driver(optuna, sweep, study, plan, parallel=1, poll=0,
                    log=lambda _: None, sleep=tick).run(1)
    [t] = study.get_trials()
    assert t.value == pytest.approx(level(t.params, 3))


# --- The command ---------------------------------------------------------

def run_module(*args, code=None, cwd=None):
    argv = [sys.executable, "-m", "tailsweep.optimize", *args]
    if code is not None:
        argv = [sys.executable, "-c", code, *args]
    return subprocess.run(argv, env=PYTHON_ENV, capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def test_importing_the_package_never_imports_optuna():
    r = subprocess.run(
        [sys.executable, "-c", "import sys, tailsweep, tailsweep.optimize; "
         "tailsweep.Client; print(sorted(m for m in sys.modules "
         "if m.split('.')[0] in ('optuna', 'yaml')))"],
        env=PYTHON_ENV, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_help_names_the_samplers():
    r = run_module("--help")
    assert r.returncode == 0, r.stderr
    for word in ("--parallel", "--trials", "--seed", "--storage", "--poll",
                 "tpe", "cmaes", "qmc", "nsgaii", "random"):
        assert word in r.stdout


def test_without_optuna_it_says_how_to_install_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: x\n")
    code = ("import sys, runpy; sys.modules['optuna'] = None; "
            "sys.argv[0] = 'optimize'; "
            "runpy.run_module('tailsweep.optimize', run_name='__main__')")
    r = run_module(str(path), code=code)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "apt install python3-optuna" in r.stderr


def test_a_bad_spec_exits_2_before_any_connection(tmp_path):
    pytest.importorskip("optuna")
    pytest.importorskip("yaml")
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nmethod: tpe\ngrid: {}\nmetric: {name: loss}\n"
                    "parameters:\n  lr: {min: 0, max: 1, log: true}\n")
    r = run_module(str(path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "parameters.lr: log: true with min 0" in r.stderr
    path.write_text("name: x\nmethod: tpe\ngrid: {}\nmetric: {name: loss}\n"
                    "parameters:\n  lr: {min: 0, max: 1}\n")
    r = run_module(str(path))
    assert r.returncode == 2 and "no 'run_cap'" in r.stderr, r.stderr
    r = run_module(str(path), "--trials", "3")  # then: where to connect
    assert r.returncode == 2 and "set TAILSWEEP_URL" in r.stderr, r.stderr
    r = run_module(str(path), "--parallel", "0")
    assert r.returncode == 2 and "--parallel 0" in r.stderr, r.stderr
