"""sampling.py and the C++ core's sampler agree in distribution.

Not draw for draw: sampling.py uses another generator, order and algorithm
(its docstring). For each task (marginal x operator; Gaussian x matrix
inverse is unidentifiable and left out) and each side (input or target
cloud), COUNT instances of N_POINTS points from `tailsweep-lab lab bench
export --debug-targets` (the C++ core's TaskSampler from the public
eval_seed CPP_SEED, one process per task; `--targets` in builds before the
sealed benchmarks) are compared with COUNT instances from sampling.py by a
two-sample permutation test:

- statistic: the exact 1-D energy distance 2 * integral (F - G)^2 (by one
  sort) of the points projected on ANGLES fixed directions (both axes
  among them), each standardised by its permutation distribution, and the
  max over directions, so one p-value covers all of them;
- null: whole instances are permuted between the two samples, not single
  points: the points of one instance share its parameters and are not
  exchangeable, instances are. With PERMUTATIONS = 1999, p = (1 + #{max
  statistic of a permutation >= the observed}) / 2000, at least 0.0005.

Agreement cases must give p > 0.001 (a 0.1% test each, 7 cases: about 0.7%
to reject a true null somewhere; every draw is seeded, so the outcome is
fixed, not flaky). Negative controls, a deliberately wrong sampler (tail
index prior U[2, 3]; a sheared swap without the swap) must give p < 0.01:
the test has power. A 1-D check of the marginal alone (`lab sample`)
compares i.i.d. points. The tails are heavy (a in [1.1, 2]: finite mean,
infinite variance): the energy distance is defined and the permutation test
is valid.

  python3 -m pytest examples/pytorch/test_sampling.py -s   # prints p-values

Needs the built tailsweep-lab ($TAILSWEEP_BIN_DIR, else build/bin/); skips
without it. Report: reports/experiments/crosscheck-sampler.md.
"""

import dataclasses
import os
import subprocess
import sys
from typing import Dict, Tuple

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sampling  # noqa: E402
from sampling import Array  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
LAB = os.path.join(os.environ.get("TAILSWEEP_BIN_DIR",
                                  os.path.join(REPO, "build", "bin")),
                   "tailsweep-lab")
COUNT, N_POINTS = 500, 20  # 10,000 points per sampler and side
ANGLES = 8  # directions k pi / 8: the axes, the diagonals and four more
PERMUTATIONS = 1999
CPP_SEED = 314159  # the C++ draws' eval_seed
PY_SEED, PY_STREAM = 271828, 0x7465_7374  # "test": none of train.py's
TASKS = [("mirrored_pareto", "sheared_swap"),
         ("mirrored_pareto", "matrix_inverse"),
         ("gaussian", "sheared_swap")]

Clouds = Tuple[Array, Array]  # inputs, targets: [COUNT, n, 2]
Draws = Dict[Tuple[str, str], Clouds]  # by (marginal, operator)


def energy_test(a: Array, b: Array, seed: int = 0) -> float:
    """Permutation p-value of "a and b have one law" (module docstring).

    a [I, n, d], b [J, n, d]: I and J clusters (instances) of n points.
    """
    clusters, n, d = a.shape[0] + b.shape[0], a.shape[1], a.shape[2]
    points = np.concatenate([a, b]).reshape(-1, d)
    if d == 1:
        directions = np.ones((1, 1))
    else:
        angle = np.pi * np.arange(ANGLES) / ANGLES
        directions = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    size_a, size_b = a.shape[0] * n, b.shape[0] * n
    assert size_a * size_b < 2 ** 31  # the running sums below fit int32
    # A point of sample a weighs size_b, of b -size_a: the running sum over
    # the sorted points is size_a size_b (F - G), exact in integers.
    labels = np.full((PERMUTATIONS + 1, clusters), -size_a, dtype=np.int32)
    labels[:, :a.shape[0]] = size_b  # row 0: the observed split
    rng = np.random.Generator(np.random.PCG64(seed))
    labels[1:] = rng.permuted(labels[1:], axis=1)
    stats = np.empty((PERMUTATIONS + 1, len(directions)))
    for k, u in enumerate(directions):
        projected = points @ u
        order = np.argsort(projected)
        gaps = np.diff(projected[order]) / float(size_a * size_b) ** 2
        owner = order // n  # the cluster of each sorted point
        for r in range(0, PERMUTATIONS + 1, 200):
            gap = np.cumsum(labels[r:r + 200][:, owner], axis=1,
                            dtype=np.int32)[:, :-1].astype(np.float64)
            stats[r:r + 200, k] = 2.0 * (gap * gap) @ gaps  # 2 sum (F-G)^2 dt
    z = (stats - stats.mean(axis=0)) / stats.std(axis=0)
    largest = z.max(axis=1)
    return float(np.mean(largest >= largest[0]))


def read_points(path: str) -> Array:
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


@pytest.fixture(scope="module")
def cpp_draws(tmp_path_factory: pytest.TempPathFactory) -> Draws:
    """The C++ core's clouds per task, drawn once: COUNT instances each."""
    if not os.access(LAB, os.X_OK):
        pytest.skip("no built tailsweep-lab at %s" % LAB)
    # The flag that writes targets: --debug-targets (drawn from the public
    # eval_seed) since the export seals its instances, --targets before.
    usage = subprocess.run([LAB, "lab", "bench", "export", "--help"],
                           capture_output=True, text=True, timeout=60).stdout
    flag = "--debug-targets" if "--debug-targets" in usage else "--targets"
    draws = {}
    for marginal, operator in TASKS:
        out = str(tmp_path_factory.mktemp("%s-%s" % (marginal, operator)))
        sets = {"marginal": marginal, "operator": operator,
                "eval_instances": COUNT, "n_points": N_POINTS,
                "eval_seed": CPP_SEED, "precision": "float64",
                "reference_trials": 1}
        argv = [LAB, "--threads", "1", "lab", "bench", "export", flag,
                "--out-dir", out]
        for key, value in sets.items():
            argv += ["--set", "%s=%s" % (key, value)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL,
                       timeout=120)
        inputs, targets = (
            np.stack([read_points(os.path.join(out, "%s-%d.csv" % (side, k)))
                      for k in range(COUNT)]) for side in ("input", "target"))
        draws[(marginal, operator)] = inputs, targets
        assert draws[(marginal, operator)][0].shape == (COUNT, N_POINTS, 2)
    return draws


def python_draws(marginal: str, operator: str,
                 prior: sampling.Prior = sampling.Prior()) -> Clouds:
    rng = sampling.make_rng(PY_SEED, PY_STREAM)
    return sampling.draw_instances(rng, operator, marginal, COUNT, N_POINTS,
                                   prior)


@pytest.mark.parametrize("side", [0, 1], ids=["input", "target"])
@pytest.mark.parametrize("marginal,operator", TASKS)
def test_python_sampler_agrees_in_distribution(
        cpp_draws: Draws, marginal: str, operator: str, side: int) -> None:
    p = energy_test(cpp_draws[(marginal, operator)][side],
                    python_draws(marginal, operator)[side])
    print("\nagree %s %s %s: p = %.4f" % (
        marginal, operator, ("input", "target")[side], p))
    assert p > 0.001


def test_wrong_tail_prior_is_rejected(cpp_draws: Draws) -> None:
    """Negative control: tail index a ~ U[2, 3] instead of U[1.1, 2]."""
    wrong = python_draws("mirrored_pareto", "sheared_swap",
                         sampling.Prior(tail_index=(2.0, 3.0)))
    p = energy_test(cpp_draws[("mirrored_pareto", "sheared_swap")][0],
                    wrong[0])
    print("\nnegative control, tail prior U[2, 3], input: p = %.4f" % p)
    assert p < 0.01


def test_missing_swap_is_rejected(cpp_draws: Draws) -> None:
    """Negative control: a sheared 'swap' whose target is A_in z'."""
    rng = sampling.make_rng(PY_SEED, PY_STREAM)
    targets = []
    for _ in range(COUNT):
        instance = sampling.draw_operator(rng, "sheared_swap",
                                          "mirrored_pareto")
        instance = dataclasses.replace(instance, a_out=instance.a_in)
        targets.append(sampling.sample(rng, instance, "target", N_POINTS))
    p = energy_test(cpp_draws[("mirrored_pareto", "sheared_swap")][1],
                    np.stack(targets))
    print("\nnegative control, no swap, target: p = %.4f" % p)
    assert p < 0.01


def test_marginal_alone_agrees() -> None:
    """`lab sample` (quantile transform) against the Lomax-and-sign draw."""
    if not os.access(LAB, os.X_OK):
        pytest.skip("no built tailsweep-lab at %s" % LAB)
    a, lam, n = 1.3, 0.7, 10000
    text = subprocess.run(
        [LAB, "--threads", "1", "lab", "sample", "--marginal",
         "mirrored_pareto", "--index", str(a), "--scale", str(lam), "--n",
         str(n), "--seed", str(CPP_SEED)],
        check=True, capture_output=True, text=True, timeout=60).stdout
    cpp = np.array(text.split(), dtype=np.float64)
    assert cpp.shape == (n,)
    ours = sampling.mirrored_pareto(sampling.make_rng(PY_SEED, PY_STREAM),
                                    a, lam, (n,))
    p = energy_test(cpp.reshape(n, 1, 1), ours.reshape(n, 1, 1))
    print("\nagree mirrored_pareto marginal (a %.1f, lam %.1f): p = %.4f"
          % (a, lam, p))
    assert p > 0.001
