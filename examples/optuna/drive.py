#!/usr/bin/env python3
"""An Optuna study that tailsweep runs: Optuna chooses, tailsweep executes.

Optuna (ask/tell) picks each trial's parameters; the trial becomes one job
of a tailsweep sweep (Sweep.add_jobs), which workers run with leases,
retries, checkpoints and preemption. The job's live curve feeds Optuna's
pruner (trial.report / should_prune); a pruned trial's job is cancelled.
Its result's last `--metric` value is the trial's value.

Nothing is lost when this driver stops: the study lives in its own storage
(--storage, SQLite by default) and the jobs in the coordinator. Started
again, the driver re-attaches to its running trials: a trial's job id is
the content hash of its parameters and trial number, so adding the trial's
cell again gives the same job (and adds nothing).

    TAILSWEEP_URL=http://head:8080 TAILSWEEP_TOKEN_FILE=~/.tailsweep/token \\
      python3 examples/optuna/drive.py examples/optuna/study.yaml --trials 20

The search space is space() below: edit it for your program.
"""

import argparse
import math
import os
import sys
import time

import optuna

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import tailsweep  # noqa: E402

TrialState = optuna.trial.TrialState


def space(trial):
    """The parameters of one trial: keys of the sweep's jobs."""
    return {"lr": trial.suggest_float("lr", 1e-4, 1.0, log=True),
            "width": trial.suggest_int("width", 8, 64, log=True)}


def cell_of(trial_number, params):
    """The job of a trial: its parameters and its number (two trials that
    ask for the same values are still two runs)."""
    return dict(params, trial=trial_number)


class Driver:
    def __init__(self, sweep, study, metric, parallel, poll, log):
        self.sweep, self.study, self.metric = sweep, study, metric
        self.parallel, self.poll, self.log = parallel, poll, log
        self.running = {}  # trial number -> [Trial, job id, last step]

    def attach(self, trial, params, last=0):
        [job_id] = self.sweep.add_jobs([cell_of(trial.number, params)])
        trial.set_user_attr("tailsweep_job", job_id)
        self.running[trial.number] = [trial, job_id, last]
        self.log("trial %d -> job %s %s" % (trial.number, job_id[:12],
                                             params))

    def reattach(self):
        """The study's running trials (a driver that stopped): their jobs
        again, and their curves from the last step reported."""
        for frozen in self.study.get_trials(deepcopy=False,
                                            states=(TrialState.RUNNING,)):
            if not frozen.params:  # stopped before its values were chosen
                self.study.tell(frozen.number, state=TrialState.FAIL)
                continue
            trial = optuna.trial.Trial(self.study, frozen._trial_id)
            self.attach(trial, frozen.params,
                        max(frozen.intermediate_values, default=0))

    def finished(self):
        return sum(t.state.is_finished() for t in
                   self.study.get_trials(deepcopy=False))

    def step(self, trials):
        while (len(self.running) < self.parallel and
               len(self.study.get_trials(deepcopy=False)) < trials):
            trial = self.study.ask()
            self.attach(trial, space(trial))
        jobs = {j.id: j for j in self.sweep.jobs()}
        for number, entry in list(self.running.items()):
            trial, job_id, last = entry
            job = jobs.get(job_id)
            if job is None:
                continue
            for p in job.history(names=[self.metric], step_min=last + 1):
                entry[2] = p["step"]
                if math.isfinite(p["value"]):
                    trial.report(p["value"], p["step"])
            if job.state == "done":
                value = job.result["summary"][self.metric]["last"]
                self.study.tell(trial, float(value))
                self.log("trial %d done: %s %s" % (number, self.metric,
                                                    value))
            elif job.state in ("failed", "cancelled"):
                self.study.tell(trial, state=TrialState.FAIL)
                self.log("trial %d %s: %s" % (number, job.state,
                                               job.last_error))
            elif trial.should_prune():
                self.sweep.cancel_job(job_id)
                self.study.tell(trial, state=TrialState.PRUNED)
                self.log("trial %d pruned at step %d; job cancelled"
                         % (number, entry[2]))
            else:
                continue
            del self.running[number]

    def run(self, trials):
        self.reattach()
        while self.finished() < trials:
            self.step(trials)
            time.sleep(self.poll)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="the sweep spec the trials' jobs belong to")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--parallel", type=int, default=4,
                    help="trials running at once")
    ap.add_argument("--metric", default="loss",
                    help="the logged metric to report and to minimize")
    ap.add_argument("--direction", default="minimize",
                    choices=["minimize", "maximize"])
    ap.add_argument("--storage", default=None,
                    help="Optuna storage URL (default: sqlite:///NAME.db "
                    "in the current folder)")
    ap.add_argument("--poll", type=float, default=1.0,
                    help="seconds between reads of the jobs")
    ap.add_argument("--seed", type=int, default=None,
                    help="the sampler's seed (a restarted driver with a seed "
                    "asks the same values again: trials stay distinct runs)")
    args = ap.parse_args(argv)

    def log(line):
        print(line, flush=True)

    client = tailsweep.Client.from_env()
    submitted = client.submit(args.spec)  # again: adds nothing
    sweep = client.sweep(submitted["sweep"])
    study = optuna.create_study(
        study_name=sweep.name,
        storage=args.storage or "sqlite:///%s.db" % sweep.name,
        load_if_exists=True, direction=args.direction,
        sampler=optuna.samplers.TPESampler(seed=args.seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3,
                                           n_warmup_steps=5))
    Driver(sweep, study, args.metric, args.parallel, args.poll, log).run(
        args.trials)
    best = study.best_trial
    log("best: trial %d, %s %s, %s" % (best.number, args.metric,
                                       best.value, best.params))
    return 0


if __name__ == "__main__":
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sys.exit(main())
