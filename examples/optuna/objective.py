#!/usr/bin/env python3
"""A small objective for the Optuna example (drive.py, beside this file):
a training curve whose level depends on the learning rate and the width,
logged step by step through tailsweep.child, checkpointed every 10 steps,
resumed after preemption. Its best lr is near 1e-2. Stand-in for a real
training script: any program that logs `loss` per step works the same.

Run by hand: PYTHONPATH=python python3 examples/optuna/objective.py
"""

import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from tailsweep import child  # noqa: E402

DEFAULTS = dict(lr=1e-2, width=32, steps=30, pause=0.0, trial=0)


def main():
    p = child.params(DEFAULTS)
    child.handle_sigterm()
    rng = random.Random("%r/%r/%r" % (p["lr"], p["width"], p["trial"]))
    level = (math.log10(p["lr"]) + 2.0) ** 2 + 8.0 / p["width"]
    start, loss = 0, None
    saved = child.resume_checkpoint()
    if saved:
        with open(os.path.join(saved, "state.json")) as f:
            state = json.load(f)
        start, loss = state["step"], state["loss"]
        rng.setstate(tuple(state["rng"][:1]) + (tuple(state["rng"][1]),) +
                     tuple(state["rng"][2:]))
    for step in range(start + 1, p["steps"] + 1):
        loss = level + 2.0 * math.exp(-step / 6.0) + rng.gauss(0, 0.01)
        child.log(step, loss=loss)
        if step % 10 == 0 or child.stop_requested():
            with child.save_checkpoint(step) as d:
                with open(os.path.join(d, "state.json"), "w") as f:
                    json.dump({"step": step, "loss": loss,
                               "rng": rng.getstate()}, f)
            if child.stop_requested():
                child.exit_preempted()
        time.sleep(p["pause"])
    child.write_result({"loss": loss})


if __name__ == "__main__":
    main()
