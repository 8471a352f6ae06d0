#!/usr/bin/env python3
"""Iterations (and seconds) each solver needs to reach given errors on planted data, from one run each.

    python3 bench/convergence.py [--dnmf build/release/bin/dnmf] [--json out.json]

Prints a Markdown table (the one in docs/benchmarks.md). Standard library only.
"""
import argparse
import json
import os
import subprocess
import tempfile

CASES = [
    # (name, gen arguments, k, targets)
    ("dense 1000x800 rank 10, noise 0", ["--rows", "1000", "--cols", "800", "--rank", "10", "--noise", "0"], 10,
     [1e-2, 1e-3, 1e-4]),
    ("dense 1000x800 rank 10, noise 1%", ["--rows", "1000", "--cols", "800", "--rank", "10", "--noise", "0.01"], 10,
     [2e-2, 1.2e-2, 1.05e-2]),
    ("sparse 4000x3000 rank 10, density 5%", ["--rows", "4000", "--cols", "3000", "--rank", "10", "--density", "0.05",
                                              "--noise", "0"], 10, [1e-2, 1e-3, 1e-4]),
]
ALGOS = ["mu", "hals", "bpp"]


def first_reaching(history, target):
    for i, e in enumerate(history):
        if e <= target:
            return i + 1
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dnmf", default="build/release/bin/dnmf")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--json")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as work:
        for name, gen, k, targets in CASES:
            ext = ".mtx" if "--density" in gen else ".npy"
            matrix = os.path.join(work, "A" + ext)
            subprocess.run([args.dnmf, "gen", *gen, "--seed", "1", "-o", matrix], check=True, capture_output=True)
            for algo in ALGOS:
                out = os.path.join(work, algo)
                subprocess.run([args.dnmf, "factor", matrix, "-k", str(k), "--algo", algo, "--iters", str(args.iters),
                                "--tol", "0", "--seed", "3", "--quiet", "-o", out], check=True, capture_output=True)
                report = json.load(open(os.path.join(out, "report.json")))
                hist = report["rel_error_history"]
                results.append({"case": name, "algo": algo, "targets": targets,
                                "iterations": [first_reaching(hist, t) for t in targets],
                                "seconds_per_iteration": report["seconds_per_iteration"],
                                "final_rel_error": report["rel_error"]})
    print("| case | algo | " + " | ".join("iters to target %d" % (i + 1) for i in range(3)) +
          " | s/iter | seconds to last target | final rel_error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        its = ["%d" % i if i else "> %d" % args.iters for i in r["iterations"]]
        last = r["iterations"][-1]
        secs = "%.3f" % (last * r["seconds_per_iteration"]) if last else "—"
        targets = ", ".join("%g" % t for t in r["targets"])
        print("| %s (targets %s) | %s | %s | %.4f | %s | %.2e |" % (r["case"], targets, r["algo"], " | ".join(its),
                                                                  r["seconds_per_iteration"], secs,
                                                                  r["final_rel_error"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
