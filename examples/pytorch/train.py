#!/usr/bin/env python3
"""The paper's experiment as a tailsweep command job, in plain PyTorch.

An independent re-implementation of what `tailsweep-lab lab train` runs
(docs/science.md; the C++ core: core/model.cc, core/kernel_attention.h,
core/sampling.cc, core/trainer.cc, core/training_signals.h), at the CPU
reproduction's cell (EXPERIMENTS.md): a post-norm transformer maps an input
point cloud of N = 512 points to an output cloud, trained with the energy
distance on heavy-tailed (mirrored Pareto) operator instances; the
attention kernel is the axis. Post-norm softmax collapses (the prediction's
spread goes to ~0); the log kernel does not. Its data (training and
held-out) come from sampling.py, written from docs/science.md's definitions
with numpy's generator and its own seeds, not a copy of core/sampling.cc's
stream: the instances differ from `lab train`'s, their law does not
(test_sampling.py). judge.py judges a checkpoint on the C++ core's own
benchmark instances (`lab bench`).

The tailsweep side (docs/child-contract.md) goes through tailsweep.child:
parameters, metrics lines (loss, spread_ratio, ...), a checkpoint
(torch.save into step-N/) every `checkpoint_every` steps, SIGTERM ->
checkpoint -> exit 3, resume from $TAILSWEEP_RESUME_STEP, result file.
Run by hand: PYTHONPATH=python python3 examples/pytorch/train.py --steps=20
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import sampling  # noqa: E402  the instances, from their definitions
from tailsweep import child  # noqa: E402

DEFAULTS = dict(  # the CPU cell of EXPERIMENTS.md; keys as in docs/cli.md
    operator="sheared_swap", marginal="mirrored_pareto", kernel="softmax",
    norm="post", symlog=False, seed=0, n_points=512, layers=6, d_model=64,
    heads=4, ffn_multiple=4, steps=1000, batch=2, lr=5e-3, warmup=100,
    clip=1.0, weight_decay=0.01, log_every=20, checkpoint_every=500,
    collapse_threshold=0.05, eval_instances=16, reference_trials=16,
    eval_seed=20261001, tail_index_min=1.1, tail_index_max=2.0,
    collapse_rule="logged_3")
EVAL_COLLAPSE_SPREAD = 0.25  # training_signals.h: kEvalCollapseSpread
COLLAPSE_RUN = 3  # logged_3: this many logged steps below in a row
RULES = ("any_step", "logged_step", "logged_3", "final_eval")


def collapse_onsets(any_step, logged, threshold, final_step, eval_spread):
    """A run's collapse onset under each rule of docs/science.md ("The
    collapse criterion"), None for none: any_step (the first training step
    whose spread ratio fell below `threshold`, every step checked, given),
    logged_step (the first logged step below), logged_3 (the first of
    COLLAPSE_RUN logged steps below in a row), final_eval (the last step,
    when the final evaluation's spread is below EVAL_COLLAPSE_SPREAD). A NaN
    spread is below. `logged`: (step, spread) of the logged steps, in order.
    """
    below = [(s, not v >= threshold) for s, v in logged]
    first = next((s for s, b in below if b), None)
    run_start, run, in_row = None, 0, None
    for s, b in below:
        if not b:
            run = 0
            continue
        if run == 0:
            run_start = s
        run += 1
        if run == COLLAPSE_RUN:
            in_row = run_start
            break
    return {"any_step": any_step if any_step >= 0 else None,
            "logged_step": first, "logged_3": in_row,
            "final_eval": (final_step if eval_spread is not None
                           and not eval_spread >= EVAL_COLLAPSE_SPREAD
                           else None)}


# ---- Data: instances and ensembles (science.md 2-3; sampling.py) ----
#
# sampling.py draws them from the definitions with numpy's PCG64 and its own
# seed offsets (sampling.TRAIN_STREAM, EVAL_STREAM, REFERENCE_STREAM), not
# the C++ core's torch stream, so this is an independent check of the
# benchmark; test_sampling.py checks the two agree in distribution.

def prior(cfg):
    """The instance priors, with the tail index's range from the config."""
    return sampling.Prior(tail_index=(cfg.tail_index_min, cfg.tail_index_max))


def draw_instance(cfg, rng):
    """One operator instance: latent marginals and the matrices A_in, A_out."""
    return sampling.draw_operator(rng, cfg.operator, cfg.marginal, prior(cfg))


def sample_points(instances, side, n, rng):
    """[B, n, 2] float64 points A z, with fresh latent z per trial."""
    return torch.from_numpy(np.stack(
        [sampling.sample(rng, inst, side, n) for inst in instances]))


def next_batch(cfg, rng, trials, n):
    """`trials` fresh instances: inputs and targets [trials, n, 2] float64."""
    x, y = sampling.draw_instances(rng, cfg.operator, cfg.marginal, trials, n,
                                   prior(cfg))
    return torch.from_numpy(x), torch.from_numpy(y)


# ---- Model (science.md 5, core/model.cc, core/kernel_attention.h) ----

def kernel_weights(s, kernel):
    """w_ij = phi(s_ij) / sum_j phi(s_ij); phi = exp(s) below 0."""
    if kernel == "softmax":
        return torch.softmax(s, dim=-1)  # the only one allowed a row max
    e, p = s.clamp(max=0).exp(), s.clamp(min=0)
    phi = {"quadratic": lambda: e + p + 0.5 * p * p,
           "linear": lambda: e + p,
           "log": lambda: e + torch.log1p(p)}[kernel]()
    return phi / phi.sum(dim=-1, keepdim=True)


def xavier_linear(n_in, n_out, gain):
    layer = nn.Linear(n_in, n_out)
    nn.init.xavier_normal_(layer.weight, gain=gain)
    nn.init.zeros_(layer.bias)
    return layer


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, post = cfg.d_model, cfg.norm == "post"
        beta = (8 * cfg.layers) ** -0.25 if post else 1.0  # DeepNet gain
        self.alpha = (2 * cfg.layers) ** 0.25 if post else 1.0
        self.cfg = cfg
        self.query, self.key = xavier_linear(d, d, 1.0), xavier_linear(d, d, 1.0)
        self.value, self.output = xavier_linear(d, d, beta), xavier_linear(d, d, beta)
        self.ffn_in = xavier_linear(d, cfg.ffn_multiple * d, beta)
        self.ffn_out = xavier_linear(cfg.ffn_multiple * d, d, beta)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def attention(self, x):
        b, n, d = x.shape
        h = self.cfg.heads
        split = lambda t: t.view(b, n, h, d // h).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        w = kernel_weights(q @ k.transpose(-1, -2) / math.sqrt(d // h),
                           self.cfg.kernel)  # [B, H, N, N]: fine at N = 512
        return self.output((w @ v).transpose(1, 2).reshape(b, n, d))

    def forward(self, x):
        ffn = lambda t: self.ffn_out(F.gelu(self.ffn_in(t)))  # noqa: E731
        if self.cfg.norm == "pre":
            x = x + self.attention(self.norm1(x))
            return x + ffn(self.norm2(x))
        x = self.norm1(self.alpha * x + self.attention(x))
        return self.norm2(self.alpha * x + ffn(x))


def symlog(x):
    return torch.sign(x) * torch.log1p(x.abs())


class PointTransformer(nn.Module):
    """R^2 -> R^d, L blocks, R^d -> R^2; no positions (permutation-equivariant)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = xavier_linear(2, cfg.d_model, 1.0)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.final_norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else None
        self.unembed = xavier_linear(cfg.d_model, 2, 1.0)

    def forward(self, points):
        x = self.embed(symlog(points) if self.cfg.symlog else points)
        for block in self.blocks:
            x = block(x)
        if self.final_norm is not None:
            x = self.final_norm(x)
        out = self.unembed(x)
        return torch.sign(out) * torch.expm1(out.abs()) if self.cfg.symlog else out


# ---- Loss and signals (science.md 4 and 6) ----

def energy_distance(x, y):
    """Squared energy distance (V-statistic, p = 1) per trial: [B, n, 2] -> [B]."""
    x, y = x.double(), y.double()
    dist = lambda a, b: torch.cdist(  # noqa: E731  exact; grad 0 at 0
        a, b, compute_mode="donot_use_mm_for_euclid_dist").mean(dim=(-1, -2))
    return 2 * dist(x, y) - dist(x, x) - dist(y, y)


def spread_ratio(pred, target):
    """Median over axes of IQR(prediction) / IQR(target), per trial: [B].

    IQRs are numpy's linear quantiles; an even count of axes averages the
    middle two (core/ensemble_metrics.cc).
    """
    q = torch.tensor([0.25, 0.75], dtype=torch.float64)

    def iqr(t):
        quartiles = torch.quantile(t.double(), q, dim=-2)  # [2, B, axes]
        return quartiles[1] - quartiles[0]

    ratio = (iqr(pred) / iqr(target)).sort(dim=-1).values
    d = ratio.shape[-1]
    return ratio[..., d // 2] if d % 2 else (ratio[..., d // 2 - 1] + ratio[..., d // 2]) / 2


def learning_rate(cfg, step):
    """Linear warm-up to lr over `warmup` steps, then cosine decay to 0."""
    if step <= cfg.warmup:
        return cfg.lr * step / cfg.warmup
    decay = cfg.steps - cfg.warmup
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup) / decay)) \
        if decay > 0 else cfg.lr


@torch.no_grad()
def evaluate(cfg, model):
    """Distance ratios ED(prediction, target) / delta on held-out instances."""
    model.eval()
    rng = sampling.make_rng(cfg.eval_seed, sampling.REFERENCE_STREAM)
    refs = []
    for _ in range(cfg.reference_trials):
        one = [draw_instance(cfg, rng)]
        a, b = (sample_points(one, "target", cfg.n_points, rng)
                for _ in range(2))
        refs.append(energy_distance(a, b).item())
    delta = sum(refs) / len(refs)
    # The same instances for every cell sharing eval_seed (paired cells), but
    # not those of `lab train` (judge.py: the C++ core's benchmark instances).
    rng = sampling.make_rng(cfg.eval_seed, sampling.EVAL_STREAM)
    instances = [draw_instance(cfg, rng) for _ in range(cfg.eval_instances)]
    ratios, spreads = [], []
    for i in range(0, len(instances), cfg.batch):
        chunk = instances[i:i + cfg.batch]
        x, y = (sample_points(chunk, side, cfg.n_points, rng)
                for side in ("input", "target"))
        pred = model(x.float()).double()
        ratios += (energy_distance(pred, y) / delta).tolist()
        spreads += spread_ratio(pred, y).tolist()
    model.train()
    ratios.sort()
    mid = len(ratios) // 2
    median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    return {"ratio_mean": sum(ratios) / len(ratios), "ratio_median": median,
            "spread_ratio": sum(spreads) / len(spreads), "delta": delta,
            "eval_instances": len(ratios)}


# ---- The job ----

def parse_config():
    """argparse over DEFAULTS, each default the job's parameter if set.

    Under tailsweep the flags (${args}) and $TAILSWEEP_PARAMS_FILE agree;
    by hand, flags override the defaults. A boolean is a bare flag.
    """
    params = child.params(DEFAULTS)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key, default in DEFAULTS.items():
        if isinstance(default, bool):
            parser.add_argument("--" + key, action="store_true")
        else:
            parser.add_argument("--" + key, type=type(default))
    parser.set_defaults(**{k: params[k] for k in DEFAULTS})
    cfg = parser.parse_args()
    if cfg.collapse_rule not in RULES:
        parser.error("collapse_rule '%s'; allowed: %s"
                     % (cfg.collapse_rule, ", ".join(RULES)))
    return cfg


def main():
    cfg = parse_config()
    child.handle_sigterm()  # SIGTERM only sets a flag, read between steps
    torch.set_num_threads(child.num_threads())
    torch.manual_seed(cfg.seed)
    model = PointTransformer(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr,
                            weight_decay=cfg.weight_decay)
    rng = sampling.make_rng(cfg.seed, sampling.TRAIN_STREAM)  # data
    step, onset, diverged = 0, -1, -1
    logged = []  # (step, spread ratio) of the logged steps

    resume = child.resume_checkpoint()
    if resume is not None:
        state = torch.load(os.path.join(resume, "state.pt"))
        if state["config"] != vars(cfg):
            sys.exit("%s belongs to another config" % resume)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        rng.bit_generator.state = state["data_rng"]
        torch.set_rng_state(state["torch_rng"])
        step, onset = state["step"], state["collapse_onset"]
        logged = [tuple(x) for x in state.get("logged", [])]
        print("resumed from %s (attempt %d)" % (resume, child.attempt()),
              file=sys.stderr)

    def checkpoint():
        with child.save_checkpoint(step) as d:
            torch.save({"config": vars(cfg), "step": step, "collapse_onset": onset,
                        "logged": logged,
                        "model": model.state_dict(), "optimizer": opt.state_dict(),
                        "data_rng": rng.bit_generator.state,
                        "torch_rng": torch.get_rng_state()},
                       os.path.join(d, "state.pt"))

    loss_value = float("nan")
    while step < cfg.steps and diverged < 0:
        start, now = time.monotonic(), step + 1
        lr = learning_rate(cfg, now)
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = next_batch(cfg, rng, cfg.batch, cfg.n_points)
        x, y = x.float(), y.float()  # float32, as the C++ trainer
        pred = model(x)
        loss = energy_distance(pred, y).mean()
        loss_value, grad_norm = loss.item(), float("nan")
        if math.isfinite(loss_value):
            opt.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), cfg.clip).item()
        if math.isfinite(loss_value) and math.isfinite(grad_norm):
            opt.step()
        else:
            diverged = now  # a non-finite loss is a result: the step is not applied
        spread = spread_ratio(pred.detach(), y).mean().item()
        if onset < 0 and not spread >= cfg.collapse_threshold:  # NaN is below
            onset = now
        step = now
        if step % cfg.log_every == 0 or diverged == step:
            logged.append((step, spread))
            child.log(step, loss=loss_value, lr=lr, grad_norm=grad_norm,
                      spread_ratio=spread, step_seconds=time.monotonic() - start)
        stop = child.stop_requested() or child.lease_expired()
        if step % cfg.checkpoint_every == 0 or step == cfg.steps or stop:
            checkpoint()
        if stop and step < cfg.steps:
            print("stop requested: checkpointed step %d, exit 3" % step,
                  file=sys.stderr)
            child.exit_preempted()

    result = {"steps_done": step, "resumed_from_step": child.resume_step(),
              "final_loss": loss_value, "diverged": diverged >= 0,
              "diverged_step": diverged if diverged >= 0 else None,
              "config": vars(cfg)}
    if diverged < 0:
        result.update(evaluate(cfg, model))
        child.log(step, {"eval": {k: v for k, v in result.items()
                                  if k in ("ratio_mean", "ratio_median",
                                           "spread_ratio", "delta")}})
    # Every rule's onset is kept; `collapsed` is the config's rule's (the
    # C++ core's result does the same: core/schema/job_result.h).
    onsets = collapse_onsets(onset, logged, cfg.collapse_threshold, step,
                             result.get("spread_ratio"))
    chosen = onsets[cfg.collapse_rule]
    result.update(collapse_onsets=onsets, collapse_rule=cfg.collapse_rule,
                  collapsed=chosen is not None, collapse_step=chosen)
    child.write_result(result)
    print("done: %d steps, loss %.4g, collapsed %s (%s), median ratio %s" % (
        step, loss_value, chosen is not None, cfg.collapse_rule,
        result.get("ratio_median")), file=sys.stderr)


if __name__ == "__main__":
    main()
