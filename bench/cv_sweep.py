"""Planted-ranks table for `dnmf cv` (issue 15): for each true rank, how often the cross-validation rule selects
the true k over independent seeds, with a random fraction of the entries missing.

    python bench/cv_sweep.py --dnmf build/release/bin/dnmf [--ranks 3:12] [--noise 0.01:0.05] [--seeds 20]
                             [--missing 0.1] [--rows 100 --cols 80] [--span 2] [--folds 5] [--holdout 0.05]
                             [--workers 2] [--json sweep.json]

--noise LO:HI spreads the noise level evenly over the seeds (seed 1 at LO, the last at HI); --noise A,B runs
every seed at each level. Each run is `dnmf gen` (planted rank, multiplicative noise), a random mask hiding
--missing of the entries (numpy, keyed by the seed), then `dnmf cv --k rank-span:rank+span` with its defaults
(bpp, 500 iterations) on one thread. Prints a markdown table (rank, noise, correct/seeds, the wrong selections)
for docs/masked.md.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def noise_plan(text, seeds):
    """(label, [noise per seed]) pairs."""
    if ":" in text:
        lo, hi = (float(x) for x in text.split(":"))
        levels = [lo + (hi - lo) * s / max(1, seeds - 1) for s in range(seeds)]
        return [("%g-%g%%" % (lo * 100, hi * 100), levels)]
    return [("%g%%" % (float(x) * 100), [float(x)] * seeds) for x in text.split(",")]


def run(command, cwd):
    """Runs a dnmf command; a failure raises with dnmf's own message (capture_output hid it behind a traceback)."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr.strip()}")
    return done


def one_run(dnmf, work_root, args, rank, noise, seed):
    work = tempfile.mkdtemp(dir=work_root)
    run([dnmf, "gen", "--rows", str(args.rows), "--cols", str(args.cols), "--rank", str(rank), "--noise",
         repr(noise), "--seed", str(seed), "-o", "A.npy"], work)
    rng = np.random.default_rng(1000 * rank + seed)
    mask = (rng.random((args.rows, args.cols)) >= args.missing).astype(np.float64)
    np.save(os.path.join(work, "M.npy"), mask)
    ks = "%d:%d" % (max(1, rank - args.span), rank + args.span)
    started = time.time()
    run([dnmf, "cv", "A.npy", "--mask", "M.npy", "--k", ks, "--folds", str(args.folds), "--holdout",
         str(args.holdout), "--seed", str(seed), "--threads", "1", "-q", *args.extra.split(), "-o", "out"], work)
    with open(os.path.join(work, "out", "cv.json")) as f:
        report = json.load(f)
    return {"rank": rank, "noise": noise, "seed": seed, "selected": report["selected_k"], "best": report["best_k"],
            "seconds": time.time() - started,
            "ranks": [{"k": r["k"], "mean": r["mean_heldout_error"], "se": r["standard_error"]}
                      for r in report["ranks"]]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dnmf", required=True)
    parser.add_argument("--ranks", default="3:12")
    parser.add_argument("--noise", default="0.01:0.05")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--missing", type=float, default=0.1)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--cols", type=int, default=80)
    parser.add_argument("--span", type=int, default=2, help="k from rank-span to rank+span")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--holdout", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2, help="runs side by side (one thread each)")
    parser.add_argument("--extra", default="", help="more options for dnmf cv, e.g. '--iters 300'")
    parser.add_argument("--json", help="write every run's per-k figures here")
    args = parser.parse_args()
    bounds = [int(x) for x in args.ranks.split(":")]  # 'FIRST:LAST' or one rank
    if len(bounds) not in (1, 2):
        parser.error(f"--ranks takes FIRST:LAST or one rank, got {args.ranks!r}")
    first, last = bounds[0], bounds[-1]
    dnmf = os.path.abspath(args.dnmf)
    plan = noise_plan(args.noise, args.seeds)
    start = time.time()
    runs = []
    with tempfile.TemporaryDirectory() as work_root, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as pool:
        futures = [(label, pool.submit(one_run, dnmf, work_root, args, rank, levels[seed - 1], seed))
                   for rank in range(first, last + 1) for label, levels in plan for seed in range(1, args.seeds + 1)]
        for label, future in futures:
            runs.append({**future.result(), "noise_label": label})
            r = runs[-1]
            print("rank %d noise %.4f seed %d: selected %d (%.1f s)" % (r["rank"], r["noise"], r["seed"],
                                                                         r["selected"], r["seconds"]),
                  file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    print("| true k | noise | selected true k | wrong selections (seed: k) |")
    print("|---|---|---|---|")
    for rank in range(first, last + 1):
        for label, _ in plan:
            these = [r for r in runs if r["rank"] == rank and r["noise_label"] == label]
            correct = sum(1 for r in these if r["selected"] == rank)
            wrong = "; ".join("%d: %d" % (r["seed"], r["selected"]) for r in these if r["selected"] != rank)
            print("| %d | %s | %d/%d | %s |" % (rank, label, correct, len(these), wrong or "-"))
    print("\n%dx%d, %g%% missing, k = true ± %d, %d folds of %g%%, %d runs, %.0f s" % (
        args.rows, args.cols, args.missing * 100, args.span, args.folds, args.holdout * 100, len(runs),
        time.time() - start))


if __name__ == "__main__":
    main()
