"""Planted-ranks table for `dnmf cv` (issue 15): for each true rank and noise level, how often the
cross-validation rule selects the true k over independent seeds, with a random fraction of the entries missing.

    python bench/cv_sweep.py --dnmf build/release/bin/dnmf [--ranks 3:12] [--noise 0.01,0.05] [--seeds 20]
                             [--missing 0.1] [--rows 300 --cols 200] [--folds 5] [--holdout 0.05]

Prints a markdown table (rank, noise, correct/seeds, the wrong selections) for docs/masked.md.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dnmf", required=True)
    parser.add_argument("--ranks", default="3:12")
    parser.add_argument("--noise", default="0.01,0.05")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--missing", type=float, default=0.1)
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--cols", type=int, default=200)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--holdout", type=float, default=0.05)
    parser.add_argument("--extra", default="", help="more options for dnmf cv, e.g. '--iters 300'")
    args = parser.parse_args()
    first, last = (int(x) for x in args.ranks.split(":"))
    dnmf = os.path.abspath(args.dnmf)
    rows = []
    start = time.time()
    with tempfile.TemporaryDirectory() as work:
        for rank in range(first, last + 1):
            for noise in (float(x) for x in args.noise.split(",")):
                correct, wrong = 0, []
                for seed in range(1, args.seeds + 1):
                    subprocess.run([dnmf, "gen", "--rows", str(args.rows), "--cols", str(args.cols), "--rank",
                                    str(rank), "--noise", str(noise), "--seed", str(seed), "-o", "A.npy"],
                                   cwd=work, check=True, capture_output=True)
                    rng = np.random.default_rng(1000 + seed)
                    mask = (rng.random((args.rows, args.cols)) >= args.missing).astype(np.float64)
                    np.save(os.path.join(work, "M.npy"), mask)
                    ks = "%d:%d" % (max(1, rank - 3), rank + 3)
                    subprocess.run([dnmf, "cv", "A.npy", "--mask", "M.npy", "--k", ks, "--folds", str(args.folds),
                                    "--holdout", str(args.holdout), "--seed", str(seed), "-q", *args.extra.split(),
                                    "-o", "out"], cwd=work, check=True, capture_output=True)
                    with open(os.path.join(work, "out", "cv.json")) as f:
                        selected = json.load(f)["selected_k"]
                    if selected == rank:
                        correct += 1
                    else:
                        wrong.append("seed %d: %d" % (seed, selected))
                rows.append((rank, noise, correct, "; ".join(wrong) or "-"))
                print("rank %d noise %g: %d/%d" % (rank, noise, correct, args.seeds), file=sys.stderr, flush=True)
    print("| true k | noise | selected true k | wrong selections |")
    print("|---|---|---|---|")
    for rank, noise, correct, wrong in rows:
        print("| %d | %g%% | %d/%d | %s |" % (rank, noise * 100, correct, args.seeds, wrong))
    print("\n%dx%d, %g%% missing, %d folds of %g%%, %.0f s" % (args.rows, args.cols, args.missing * 100, args.folds,
                                                           args.holdout * 100, time.time() - start))


if __name__ == "__main__":
    main()
