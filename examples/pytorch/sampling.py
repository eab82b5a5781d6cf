"""The benchmark's operator instances, sampled from their definitions.

An independent sampler for train.py, written from docs/science.md and not
ported from core/sampling.cc: another generator (numpy's PCG64, not torch's
mt19937), another draw order and another algorithm for the heavy tail, so
that it agrees with the C++ core in distribution only
(examples/pytorch/test_sampling.py checks that with a two-sample test).

What it implements (docs/science.md; core/instance.cc agrees):

- Mirrored Pareto (index a, scale lam): P(|z| > t) = (1 + t/lam)^-a with a
  fair sign, centred at 0. Drawn as lam times a Lomax(a) variate (numpy's
  `pareto`, survival (1 + t)^-a) times an independent random sign, not by
  the closed-form quantile the C++ core uses.
- Gaussian control: z = m + s g, g ~ N(0, 1).
- Priors, independent and uniform per instance: axis 1 a1 ~ U[1.1, 2],
  lam1 ~ U[0.5, 1]; axis 2 a2 ~ U[1.1, 2], lam2 ~ U[1, 2]. Gaussian: m1, m2
  ~ U[-1, 1] (one draw per axis), s1 ~ U[0.5, 1], s2 ~ U[1, 2].
- Sheared swap: S1 = [[1, h1], [0, 1]], S2 = [[1, 0], [h2, 1]], h1, h2 ~
  U[-1, 1], A_in = S1 S2, A_out = A_in E with E = [[0, 1], [1, 0]].
- Matrix inverse: B with b11, b22 ~ U[1, 2] and b12, b21 ~ U[-0.5, 0.5];
  A_in = B, A_out = B^-1.
- Input points x = A_in z, target points y = A_out z', with z and z'
  independent latent samples of the same instance.

Seeds: `make_rng(seed, stream)` seeds PCG64 from the pair (seed, stream)
through numpy's SeedSequence. The stream is this file's own seed offset:
TRAIN_STREAM for training data, EVAL_STREAM for held-out instances,
REFERENCE_STREAM for the sampling reference. The C++ core seeds torch's
mt19937 with `seed ^ 0x5eed0da7a5eed0da` (training), `eval_seed` and
`eval_seed + 1`; none of its streams is one of these.
"""

from dataclasses import dataclass
from typing import Tuple, Union

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]
Range = Tuple[float, float]

OPERATORS = ("sheared_swap", "matrix_inverse")
MARGINALS = ("mirrored_pareto", "gaussian")
SIDES = ("input", "target")

# Seed offsets (SeedSequence entropy [seed, stream]); "py" and a letter.
TRAIN_STREAM = 0x7079_74  # "pyt"
EVAL_STREAM = 0x7079_65  # "pye"
REFERENCE_STREAM = 0x7079_72  # "pyr"


@dataclass(frozen=True)
class Prior:
    """The uniform priors of an instance's marginals (docs/science.md)."""

    tail_index: Range = (1.1, 2.0)  # a1, a2
    scale1: Range = (0.5, 1.0)  # lam1
    scale2: Range = (1.0, 2.0)  # lam2
    mean: Range = (-1.0, 1.0)  # m1, m2
    sd1: Range = (0.5, 1.0)  # s1
    sd2: Range = (1.0, 2.0)  # s2


@dataclass(frozen=True)
class Instance:
    """One operator instance: marginal family, per-axis parameters, matrices.

    `params[axis]` is (a, lam) for mirrored Pareto, (m, s) for Gaussian.
    """

    marginal: str
    params: Array  # [2, 2]
    a_in: Array  # [2, 2]
    a_out: Array  # [2, 2]


def make_rng(seed: int, stream: int) -> np.random.Generator:
    """PCG64 seeded from (seed, stream); see the module's docstring."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [int(seed), int(stream)])))


def mirrored_pareto(rng: np.random.Generator, a: Union[float, Array],
                    lam: Union[float, Array], size: Tuple[int, ...]) -> Array:
    """Mirrored Pareto draws: lam * Lomax(a) with a fair random sign.

    `a` and `lam` broadcast against `size` (e.g. one value per axis).
    """
    magnitude: Array = lam * rng.pareto(a, size)
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return sign * magnitude


def draw_operator(rng: np.random.Generator, operator: str, marginal: str,
                  prior: Prior = Prior()) -> Instance:
    """An instance from the priors (operator's parameters first)."""
    if operator not in OPERATORS or marginal not in MARGINALS:
        raise ValueError("unknown operator %r or marginal %r"
                         % (operator, marginal))
    if operator == "sheared_swap":
        h1, h2 = rng.uniform(-1.0, 1.0, 2)
        a_in = (np.array([[1.0, h1], [0.0, 1.0]])
                @ np.array([[1.0, 0.0], [h2, 1.0]]))
        a_out = a_in @ np.array([[0.0, 1.0], [1.0, 0.0]])
    else:
        diagonal = rng.uniform(1.0, 2.0, 2)
        off = rng.uniform(-0.5, 0.5, 2)
        a_in = np.array([[diagonal[0], off[0]], [off[1], diagonal[1]]])
        a_out = np.linalg.inv(a_in)
    if marginal == "mirrored_pareto":  # (a, lam) per axis
        first = rng.uniform(*prior.tail_index, 2)
        second = np.array([rng.uniform(*prior.scale1),
                           rng.uniform(*prior.scale2)])
    else:  # (m, s) per axis
        first = rng.uniform(*prior.mean, 2)
        second = np.array([rng.uniform(*prior.sd1), rng.uniform(*prior.sd2)])
    params = np.stack([first, second], axis=1).astype(np.float64)
    return Instance(marginal, params, a_in.astype(np.float64),
                    a_out.astype(np.float64))


def sample(rng: np.random.Generator, instance: Instance, side: str,
           n_points: int) -> Array:
    """[n, 2] points A z of a fresh latent z; A = a_in or a_out."""
    if side not in SIDES:
        raise ValueError("unknown side %r" % side)
    first, second = instance.params[:, 0], instance.params[:, 1]
    if instance.marginal == "mirrored_pareto":
        z = mirrored_pareto(rng, first, second, (n_points, 2))
    else:
        z = first + second * rng.standard_normal((n_points, 2))
    matrix = instance.a_in if side == "input" else instance.a_out
    points: Array = z @ matrix.T  # rows are points: x^T = z^T A^T
    return points


def draw_instance(rng: np.random.Generator, operator: str, marginal: str,
                  n_points: int,
                  prior: Prior = Prior()) -> Tuple[Array, Array]:
    """A fresh instance's input [n, 2] and independent target [n, 2]."""
    instance = draw_operator(rng, operator, marginal, prior)
    target = sample(rng, instance, "target", n_points)  # order is free
    return sample(rng, instance, "input", n_points), target


def draw_instances(rng: np.random.Generator, operator: str, marginal: str,
                   count: int, n_points: int,
                   prior: Prior = Prior()) -> Tuple[Array, Array]:
    """`count` fresh instances: inputs and targets, each [count, n, 2]."""
    pairs = [draw_instance(rng, operator, marginal, n_points, prior)
             for _ in range(count)]
    return (np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs]))
