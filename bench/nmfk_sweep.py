#!/usr/bin/env python3
"""NMFk selection accuracy on planted-rank data: the full sweep behind the table in docs/nmfk.md.

For each kind (dense, sparse), noise level and seed, `dnmf gen` plants a matrix of rank
k_true = 3 + (seed - 1) % 10 (so 20 seeds cover 3..12 twice) and `dnmf nmfk` searches
k_true-2 .. k_true+2 (at least 2). The selection is correct when selected_k == k_true.
Prints a Markdown table (one row per kind and noise: correct out of seeds, wrong cases, time)
and writes every run's figures as JSON.

    bench/nmfk_sweep.py --dnmf build/release/bin/dnmf --work /tmp/sweep --json sweep.json
    bench/nmfk_sweep.py --seeds 5 --noises 0.03        # a reduced sweep
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dnmf", default="build/release/bin/dnmf")
    ap.add_argument("--work", default="/tmp/dnmf_nmfk_sweep")
    ap.add_argument("--json", default=None, help="write every run's figures here")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--kinds", default="dense,sparse")
    ap.add_argument("--noises", default="0.01,0.03,0.05")
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--cols", type=int, default=150)
    ap.add_argument("--density", type=float, default=0.3, help="of the sparse matrices")
    ap.add_argument("--perturbations", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per run")
    ap.add_argument("--extra", default="", help="more nmfk options, e.g. '--algo bpp'")
    args = ap.parse_args()

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    os.makedirs(args.work, exist_ok=True)
    runs = []
    rows = []
    sweep_start = time.time()
    for kind in args.kinds.split(","):
        for noise in [float(x) for x in args.noises.split(",")]:
            correct, wrong, seconds = 0, [], 0.0
            for seed in range(1, args.seeds + 1):
                k_true = 3 + (seed - 1) % 10
                name = "%s_n%g_s%d" % (kind, noise, seed)
                matrix = os.path.join(args.work, name + (".npy" if kind == "dense" else ".mtx"))
                out = os.path.join(args.work, name)
                shutil.rmtree(out, ignore_errors=True)
                gen = [args.dnmf, "gen", "--rows", str(args.rows), "--cols", str(args.cols), "--rank", str(k_true),
                       "--noise", str(noise), "--seed", str(seed), "-o", matrix]
                if kind == "sparse":
                    gen += ["--density", str(args.density)]
                run(gen, env)
                start = time.time()
                cmd = [args.dnmf, "nmfk", matrix, "--k", "%d:%d" % (max(2, k_true - 2), k_true + 2),
                       "--perturbations", str(args.perturbations), "--seed", str(seed), "--quiet", "-o", out]
                run(cmd + args.extra.split(), env)
                elapsed = time.time() - start
                seconds += elapsed
                report = json.load(open(os.path.join(out, "nmfk.json")))
                selected = report["selection"]["selected_k"]
                ok = selected == k_true
                correct += ok
                if not ok:
                    wrong.append("seed %d: k=%d -> %s" % (seed, k_true, selected))
                runs.append({"kind": kind, "noise": noise, "seed": seed, "k_true": k_true, "selected_k": selected,
                             "wilcoxon_k": report["selection"]["wilcoxon_rule_k"], "seconds": elapsed,
                             "min_silhouette": {str(e["k"]): e["min_silhouette"] for e in report["per_k"]},
                             "rel_error": {str(e["k"]): e["rel_error"] for e in report["per_k"]},
                             "rejected": {str(e["k"]): len(e["rejected_perturbations"]) for e in report["per_k"]}})
                shutil.rmtree(out, ignore_errors=True)
                stem = matrix[:-len(".npy")] if matrix.endswith(".npy") else matrix
                for path in (matrix, stem + ".W.npy", stem + ".H.npy"):  # gen writes X.W.npy, not X.npy.W.npy
                    if os.path.exists(path):
                        os.remove(path)
            wilcoxon = sum(1 for r in runs
                           if r["kind"] == kind and r["noise"] == noise and r["wilcoxon_k"] == r["k_true"])
            rows.append((kind, noise, correct, wilcoxon, args.seeds, "; ".join(wrong) or "-", seconds))
            print("%s noise %g: %d/%d" % (kind, noise, correct, args.seeds), file=sys.stderr, flush=True)

    total = time.time() - sweep_start
    print("| data | noise | correct (silhouette rule) | correct (Wilcoxon rule) | misses | seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, noise, correct, wilcoxon, seeds, wrong, seconds in rows:
        print("| %s %dx%d%s | %g%% | %d/%d | %d/%d | %s | %.0f |" % (
            kind, args.rows, args.cols, (" density %g" % args.density) if kind == "sparse" else "", noise * 100,
            correct, seeds, wilcoxon, seeds, wrong, seconds))
    print("\ntotal %.0f s, %d runs, P=%d, options: %s"
          % (total, len(runs), args.perturbations, args.extra or "defaults"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "seconds": total, "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
