#!/usr/bin/env python3
"""FlexAttention baseline for the device check (bench/gpu/device_check.sh).

The same attention as tailsweep's KernelAttention (science.md section 3):
weights phi(s_ij) / sum_j phi(s_ij) with s = q.k / sqrt(d_h), written as
FlexAttention with score_mod = log phi (phi = exp for s < 0; for s >= 0
softmax: exp(s), quadratic: 1 + s + s^2/2, linear: 1 + s, log: 1 + log(1 + s)),
compiled with torch.compile. For each kernel and precision (float32, tf32,
bfloat16): the median time of forward + backward at the given shapes and
the peak device memory, one JSON line each on stdout, as gpu_step_bench
prints its attention column. Only attention: the whole training step has
no Python twin here.

  python3 bench/gpu/flex_baseline.py [--device cuda] [--n 16384] [--d 256]
      [--heads 8] [--batch 4] [--kernels softmax,quadratic,linear,log]
      [--precisions float32,tf32,bfloat16] [--warmup 3] [--reps 10]
"""

import argparse
import json
import statistics
import sys
import time


def log_phi(kernel):
    import torch

    def softmax(score, b, h, q_idx, kv_idx):
        return score

    def make(grow):
        def mod(score, b, h, q_idx, kv_idx):
            p = torch.clamp(score, min=0)
            return torch.where(score < 0, score, grow(p))

        return mod

    table = {
        "softmax": softmax,
        "quadratic": make(lambda p: torch.log1p(p + 0.5 * p * p)),
        "linear": make(lambda p: torch.log1p(p)),
        "log": make(lambda p: torch.log1p(torch.log1p(p))),
    }
    return table[kernel]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--kernels", default="softmax,quadratic,linear,log")
    parser.add_argument("--precisions", default="float32,tf32,bfloat16")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    try:
        import torch
        from torch.nn.attention.flex_attention import flex_attention
    except ImportError as e:
        print(json.dumps({"skipped": f"no FlexAttention in this python3: {e}"}))
        return 0
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    flex = torch.compile(flex_attention, dynamic=False)
    dh = args.d // args.heads
    failures = 0
    for kernel in args.kernels.split(","):
        for precision in args.precisions.split(","):
            dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
            if cuda:
                torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            row = {"kernel": kernel, "precision": precision,
                   "device": str(device), "n": args.n, "d": args.d,
                   "heads": args.heads, "batch": args.batch,
                   "torch": torch.__version__, "baseline": "flex_attention"}
            try:
                shape = (args.batch, args.heads, args.n, dh)
                q, k, v = (torch.randn(shape, device=device, dtype=dtype,
                                       requires_grad=True) for _ in range(3))
                up = torch.randn(shape, device=device, dtype=dtype)
                mod = log_phi(kernel)

                def step():
                    out = flex(q, k, v, score_mod=mod)
                    (out * up).sum().backward()

                for _ in range(args.warmup):
                    step()
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    step()
                    if cuda:
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - t0)
                row["attention_ms"] = round(statistics.median(times) * 1e3, 3)
                row["peak_mib"] = (round(torch.cuda.max_memory_allocated() / 2**20, 1)
                                   if cuda else None)
            except Exception as e:  # out of memory, a compile failure: report it
                failures += 1
                row["error"] = str(e).splitlines()[0][:300] if str(e) else repr(e)
            print(json.dumps(row), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
