#!/usr/bin/env python3
"""A fast, real training run for search examples: logistic regression by
minibatch SGD on a fixed synthetic dataset (512 points, 16 features, 10%
label noise), standard library only. Its knobs are the ones a search
tunes: the learning rate `lr` (best near 0.3-1), the minibatch size
`batch`, the L2 penalty `l2`; `seed` draws the initial weights and the
batch order. It logs the full training loss (`loss`) and the held-out
loss (`val_loss`) every `log_every` steps through tailsweep.child,
checkpoints every `checkpoint_every` steps, resumes after preemption and
stops cleanly on SIGTERM. About 0.1 s for 300 steps; `sleep` (seconds per
step) makes it as slow as a bigger model for demonstrations.

Run by hand: PYTHONPATH=python python3 examples/search/fit.py --lr=0.5
"""

import argparse
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from tailsweep import child  # noqa: E402

DEFAULTS = dict(lr=0.3, batch=32, l2=1e-4, seed=0, steps=300, log_every=10,
                checkpoint_every=100, sleep=0.0)
N, D, NOISE = 512, 16, 0.1


def dataset():
    """The same data for every run: train and held-out halves."""
    rng = random.Random(20261207)
    truth = [rng.gauss(0, 1) for _ in range(D)]
    xs, ys = [], []
    for _ in range(2 * N):
        x = [rng.gauss(0, 1) for _ in range(D)]
        y = 1 if sum(a * b for a, b in zip(truth, x)) > 0 else 0
        if rng.random() < NOISE:
            y = 1 - y
        xs.append(x)
        ys.append(y)
    return (xs[:N], ys[:N]), (xs[N:], ys[N:])


def loss_of(w, data, l2):
    xs, ys = data
    total = 0.0
    for x, y in zip(xs, ys):
        z = sum(a * b for a, b in zip(w, x))
        # log(1 + e^z) - y z, stably
        total += (max(z, 0) + math.log1p(math.exp(-abs(z)))) - y * z
    return total / len(xs) + 0.5 * l2 * sum(a * a for a in w)


def main():
    ap = argparse.ArgumentParser()
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k, type=type(v))
    given = {k: v for k, v in vars(ap.parse_args()).items() if v is not None}
    p = child.params(DEFAULTS)
    p.update(given)
    child.handle_sigterm()
    train, held = dataset()
    rng = random.Random(p["seed"])
    w = [rng.gauss(0, 0.1) for _ in range(D)]
    start = 0
    saved = child.resume_checkpoint()
    if saved:
        with open(os.path.join(saved, "state.json")) as f:
            state = json.load(f)
        start, w = state["step"], state["w"]
        rng.setstate((state["rng"][0], tuple(state["rng"][1]),
                      state["rng"][2]))
    xs, ys = train
    loss = val = None
    for step in range(start + 1, p["steps"] + 1):
        grad = [p["l2"] * a for a in w]
        for _ in range(p["batch"]):
            i = rng.randrange(N)
            z = sum(a * b for a, b in zip(w, xs[i]))
            err = (1 / (1 + math.exp(-max(min(z, 60), -60))) - ys[i])
            err /= p["batch"]
            for k in range(D):
                grad[k] += err * xs[i][k]
        w = [a - p["lr"] * g for a, g in zip(w, grad)]
        if step % p["log_every"] == 0 or step == p["steps"]:
            loss = loss_of(w, train, p["l2"])
            val = loss_of(w, held, 0.0)
            child.log(step, loss=loss, val_loss=val)
        if p["sleep"] > 0:  # a slower model's step, for demonstrations
            time.sleep(p["sleep"])
        if step % p["checkpoint_every"] == 0 or child.stop_requested():
            with child.save_checkpoint(step) as d:
                with open(os.path.join(d, "state.json"), "w") as f:
                    json.dump({"step": step, "w": w,
                               "rng": rng.getstate()}, f)
            if child.stop_requested():
                child.exit_preempted()
    child.write_result({"loss": loss, "val_loss": val})


if __name__ == "__main__":
    main()
