"""Masked vs unmasked iteration time of `dnmf factor --backend cuda` in one run (issue 15 on the GPU): dense with
10% of the entries missing (--mask) and sparse with --unstored missing, per algorithm; the cpu backend's masked
MU on the same files for the GPU's speed-up. Needs only the Python standard library (the GPU machine may lack
numpy): A and S come from `dnmf gen`, the mask is written here.

    python3 bench/gpu/masked_gpu.py --dnmf BUILD/bin/dnmf [--rows 8000 --cols 6000 --k 16 --iters 20]

Each configuration runs --repeats times in turns (plain, masked, sparse, unstored; then again) and the best
seconds per iteration of its report.json is kept.
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile


def write_mask(path, rows, cols, missing, seed):
    """A C-order float64 .npy of weights 1 with a `missing` fraction of 0 (missing) at pseudo-random places.
    Rows are slices of one long random pattern at random offsets: fast without numpy, and no two rows alike."""
    rng = random.Random(seed)
    period = 4 * cols
    pattern = b"".join(struct.pack("<d", 0.0 if rng.random() < missing else 1.0) for _ in range(period))
    doubled = pattern + pattern
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        for _ in range(rows):
            start = 8 * rng.randrange(period)
            f.write(doubled[start:start + 8 * cols])


def seconds_per_iteration(dnmf, work, args, timeout):
    """Runs `dnmf factor ARGS -q -o out` in `work`; its report.json's seconds per iteration (None on failure)."""
    result = subprocess.run([dnmf, "factor", *args, "-q", "-o", "out"], cwd=work, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        print("FAILED: dnmf factor %s\n%s" % (" ".join(args), result.stderr.strip()), file=sys.stderr)
        return None
    with open(os.path.join(work, "out", "report.json")) as f:
        report = json.load(f)
    return report["seconds_per_iteration"], report.get("rel_error")


def best_in_turns(dnmf, work, configs, repeats, timeout):
    best = [None] * len(configs)
    for _ in range(repeats):
        for c, args in enumerate(configs):
            got = seconds_per_iteration(dnmf, work, args, timeout)
            if got is not None and (best[c] is None or got[0] < best[c][0]):
                best[c] = got
    return best


def ms(value):
    return "%10.3f" % (1e3 * value[0]) if value else "%10s" % "failed"


def ratio(a, b):
    return "%7.2f" % (a[0] / b[0]) if a and b else "%7s" % "-"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dnmf", required=True)
    p.add_argument("--rows", type=int, default=8000)
    p.add_argument("--cols", type=int, default=6000)
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--density", type=float, default=0.05)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--algos", default="mu,kl,hals,bpp")
    args = p.parse_args()
    dnmf = os.path.abspath(args.dnmf)
    with tempfile.TemporaryDirectory() as work:
        shape = ["--rows", str(args.rows), "--cols", str(args.cols), "--rank", str(args.k), "--seed", "1"]
        subprocess.run([dnmf, "gen", *shape, "--noise", "0.01", "-o", "A.npy"], cwd=work, check=True,
                       capture_output=True)
        subprocess.run([dnmf, "gen", *shape, "--density", str(args.density), "-o", "S.mtx"], cwd=work, check=True,
                       capture_output=True)
        write_mask(os.path.join(work, "M.npy"), args.rows, args.cols, 0.10, 2)
        common = ["-k", str(args.k), "--iters", str(args.iters), "--tol", "0", "--seed", "3"]
        gpu = common + ["--backend", "cuda"]
        print("%dx%d, k=%d, %d iterations, best of %d; milliseconds per iteration, --backend cuda" %
              (args.rows, args.cols, args.k, args.iters, args.repeats))
        print("%-6s %10s %18s %7s %10s %24s %7s" % ("algo", "dense", "dense 10% masked", "ratio", "sparse",
                                                   "sparse unstored missing", "ratio"))
        for algo in args.algos.split(","):
            plain, masked, sparse, unstored = best_in_turns(
                dnmf, work,
                [["A.npy", "--algo", algo, *gpu], ["A.npy", "--algo", algo, "--mask", "M.npy", *gpu],
                 ["S.mtx", "--algo", algo, *gpu], ["S.mtx", "--algo", algo, "--unstored", "missing", *gpu]],
                args.repeats, args.timeout)
            print("%-6s %s %18s %s %s %24s %s" % (algo, ms(plain), ms(masked).strip(), ratio(masked, plain),
                                                  ms(sparse), ms(unstored).strip(), ratio(unstored, sparse)),
                  flush=True)
        # The GPU's speed-up on the masked dense problem: the cpu backend (all the host's cores) on the same files.
        cpu_iters = ["-k", str(args.k), "--iters", "5", "--tol", "0", "--seed", "3"]
        for algo in ("mu", "hals"):
            cpu, cuda = best_in_turns(
                dnmf, work, [["A.npy", "--algo", algo, "--mask", "M.npy", *cpu_iters],
                             ["A.npy", "--algo", algo, "--mask", "M.npy", *cpu_iters, "--backend", "cuda"]],
                1, args.timeout)
            print("masked %s dense, cpu backend (%d host cores) vs cuda: %s vs %s ms/iter, %s x" %
                  (algo, os.cpu_count(), ms(cpu).strip(), ms(cuda).strip(), ratio(cpu, cuda).strip()))


if __name__ == "__main__":
    main()
