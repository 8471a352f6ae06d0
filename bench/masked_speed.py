"""Masked vs unmasked iteration time of `dnmf factor` in one run (issue 15): dense with 10% of the entries
missing (--mask) and sparse with --unstored missing, per algorithm. Prints a table and the ratios.

    python bench/masked_speed.py --dnmf build/release/bin/dnmf [--rows 2000 --cols 1500 --k 16 --iters 20]

Each configuration runs --repeats times; the best seconds per iteration (report.json) is kept. The four runs of
one algorithm take turns (plain, masked, sparse, unstored; then again), so that a slow spell of a noisy machine
falls on all of them rather than on one side of a ratio.
"""
import os
import subprocess
import tempfile

import masked_bench


def best_in_turns(dnmf, work, configs, repeats):
    """The best seconds per iteration of each configuration, the configurations run in turn `repeats` times."""
    best = [float("inf")] * len(configs)
    for _ in range(repeats):
        for c, args in enumerate(configs):
            best[c] = min(best[c], masked_bench.report(dnmf, work, args, "out")["seconds_per_iteration"])
    return best


def main():
    parser = masked_bench.parser("masked vs unmasked seconds per iteration")
    parser.add_argument("--density", type=float, default=0.05, help="stored fraction of the sparse matrix")
    args = parser.parse_args()
    dnmf = os.path.abspath(args.dnmf)
    with tempfile.TemporaryDirectory() as work:
        masked_bench.write_planted(work, args.rows, args.cols, args.k)
        subprocess.run([dnmf, "gen", "--rows", str(args.rows), "--cols", str(args.cols), "--rank", str(args.k),
                        "--density", str(args.density), "--seed", "1", "-o", "S.mtx"],
                       cwd=work, check=True, capture_output=True)
        common = ["-k", str(args.k), "--iters", str(args.iters), "--tol", "0"]
        print(f"{args.rows}x{args.cols}, k={args.k}, {args.iters} iterations, best of {args.repeats}; "
              f"milliseconds per iteration")
        print(f"{'algo':6} {'dense':>10} {'dense 10% masked':>18} {'ratio':>7} {'sparse':>10} "
              f"{'sparse unstored missing':>24} {'ratio':>7}")
        for algo in ("mu", "kl", "hals", "bpp"):
            plain, masked, sparse, unstored = best_in_turns(
                dnmf, work,
                [["A.npy", "--algo", algo, *common], ["A.npy", "--algo", algo, "--mask", "M.npy", *common],
                 ["S.mtx", "--algo", algo, *common], ["S.mtx", "--algo", algo, "--unstored", "missing", *common]],
                args.repeats)
            print(f"{algo:6} {1e3 * plain:10.3f} {1e3 * masked:18.3f} {masked / plain:7.2f} {1e3 * sparse:10.3f} "
                  f"{1e3 * unstored:24.3f} {unstored / sparse:7.2f}")


if __name__ == "__main__":
    main()
