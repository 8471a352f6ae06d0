#!/usr/bin/env python3
"""Two builds' bench_iteration in one run: before/after a change, alternated round by round (A B, then B A, ...),
best s/iter per row over every round and repetition, and the ratio after/before. The rows "WtA + AHt" time the
plain products alone; their ratio shows how far two identical computations differ on this machine today.

  bench/ab_iteration.py BEFORE/bin/bench_iteration AFTER/bin/bench_iteration [--rounds 3] [--reps 3]
Run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (docs/benchmarks.md says why)."""
import argparse
import collections
import os
import re
import subprocess

parser = argparse.ArgumentParser()
parser.add_argument("before")
parser.add_argument("after")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()

env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
row = re.compile(r"(\S+ f\d\d \S+)\s+(.+?)\s{2,}([0-9.]+)\s")
best = collections.defaultdict(dict)
for r in range(args.rounds):
    order = [("before", args.before), ("after", args.after)]
    for who, binary in order if r % 2 == 0 else reversed(order):
        out = subprocess.run([binary, "--threads", str(args.threads), "--reps", str(args.reps)], env=env, check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = row.match(line)
            if m:
                key = (m.group(1), m.group(2).strip())
                best[key][who] = min(best[key].get(who, float("inf")), float(m.group(3)))

print(f"| workload | what | before s/iter | after s/iter | after/before |  "
      f"(best of {args.rounds} rounds x {args.reps})")
print("|---|---|---|---|---|")
for (workload, what), v in best.items():
    if "before" in v and "after" in v:
        print(f"| {workload} | {what} | {v['before']:.5f} | {v['after']:.5f} | {v['after'] / v['before']:.3f} |")
