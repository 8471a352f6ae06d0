"""Streamed vs in-memory masked iteration time of `dnmf factor` in one run (issue 15): a dense Fortran-order .npy A
with a .npy mask (10% missing) under a --memory-budget that makes it stream, against the same run without a
budget, per algorithm. Prints a table and the ratios.

    python bench/masked_stream_speed.py --dnmf build/release/bin/dnmf [--rows 2000 --cols 1500 --k 16 --iters 20]

The budget is the one `dnmf factor` states as the minimum (refused with 1K) plus --margin MiB. Each
configuration runs --repeats times, alternating; the best seconds per iteration (report.json) is kept.
"""
import os
import re
import subprocess
import tempfile

import masked_bench


def minimum_budget(dnmf, work, args):
    done = subprocess.run([dnmf, "factor", *args, "--memory-budget", "1K", "-q", "-o", "refused"], cwd=work,
                          capture_output=True, text=True)
    found = re.search(r"needs at least (\d+) bytes", done.stderr)
    if found is None:
        raise SystemExit("no minimum stated: " + done.stderr)
    return int(found.group(1))


def main():
    parser = masked_bench.parser("streamed vs in-memory masked seconds per iteration")
    parser.add_argument("--margin", type=int, default=8, help="MiB above the stated minimum budget")
    args = parser.parse_args()
    dnmf = os.path.abspath(args.dnmf)
    with tempfile.TemporaryDirectory() as work:
        masked_bench.write_planted(work, args.rows, args.cols, args.k, fortran=True)
        print(f"{args.rows}x{args.cols}, k={args.k}, {args.iters} iterations, 10% missing, best of {args.repeats}; "
              f"seconds per iteration")
        print(f"{'algo':6} {'in memory':>10} {'streamed':>10} {'ratio':>7} {'tiles':>6} {'budget MiB':>11}")
        for algo in ("mu", "kl", "hals", "bpp"):
            common = ["A.npy", "--mask", "M.npy", "-k", str(args.k), "--algo", algo, "--iters", str(args.iters),
                      "--tol", "0"]
            budget = minimum_budget(dnmf, work, common) + (args.margin << 20)
            memory, streamed, tiles = [], [], 0
            for _ in range(args.repeats):
                memory.append(masked_bench.report(dnmf, work, common, "mem")["seconds_per_iteration"])
                report = masked_bench.report(dnmf, work, common + ["--memory-budget", str(budget)], "st")
                if report["memory"]["mode"] != "streamed":
                    raise SystemExit(f"{algo}: the plan did not stream")
                streamed.append(report["seconds_per_iteration"])
                tiles = report["memory"]["stream"]["tiles_per_pass"]
            print(f"{algo:6} {min(memory):10.4f} {min(streamed):10.4f} {min(streamed) / min(memory):7.2f} "
                  f"{tiles:6d} {budget / 2**20:11.1f}")


if __name__ == "__main__":
    main()
