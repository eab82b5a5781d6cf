#!/usr/bin/env python3
"""Where a build's time went, from ninja's log of it.

  bench/build_time.py BUILD_DIR [--top N]

Reads BUILD_DIR/.ninja_log (the newest run of each output) and prints the
seconds of each step summed by group (apps: the libraries and executables
the main command builds; tests, bench, fuzz), then the N slowest steps.
A step's seconds are wall seconds under ninja's parallelism: on 2 cores
with ninja's default -j4 they are about twice its CPU seconds, so compare
two builds only when both ran the same way (or time the whole build with
`/usr/bin/time` for CPU seconds; docs/development.md, "Compile time").
"""
import argparse
import collections
import os
import sys


def group_of(output):
    top = output.split("/", 1)[0]
    if top in ("tests", "bench", "fuzz"):
        return top
    if output.startswith("bin/"):
        name = output[4:]
        if name.endswith("_test"):
            return "tests"
        if name.endswith("_bench"):
            return "bench"
        if name.endswith("_replay") or name.endswith("_fuzzer"):
            return "fuzz"
    return "apps"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    path = os.path.join(args.build_dir, ".ninja_log")
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        sys.exit(f"build_time: cannot read {path}: {e.strerror}")
    steps = {}  # output -> seconds; a later run of the same output wins
    for line in lines:
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 5:
            continue
        start, end, _, output, _ = fields
        steps[output] = (int(end) - int(start)) / 1000.0
    if not steps:
        sys.exit(f"build_time: {path} has no steps")
    by_group = collections.defaultdict(lambda: [0, 0.0])
    for output, seconds in steps.items():
        g = by_group[group_of(output)]
        g[0] += 1
        g[1] += seconds
    print(f"{'group':8} {'steps':>6} {'seconds':>9}")
    for name in ("apps", "tests", "bench", "fuzz"):
        n, s = by_group.get(name, (0, 0.0))
        print(f"{name:8} {n:6d} {s:9.1f}")
    print(f"{'all':8} {len(steps):6d} {sum(steps.values()):9.1f}")
    print(f"\nslowest {args.top} steps:")
    for output, seconds in sorted(steps.items(), key=lambda kv: -kv[1])[
            :args.top]:
        print(f"{seconds:7.1f}  {output}")


if __name__ == "__main__":
    main()
