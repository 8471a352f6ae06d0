#!/usr/bin/env python3
"""End-to-end tests of `dnmf factor` under mpirun (DESIGN §4).

Run one case:   cli_mpi_test.py --dnmf path/to/dnmf --mpiexec path/to/mpiexec --work scratch/dir CASE

The reference for every distributed run is the same command on one process without mpirun: W and H must agree
within 1e-8 relative (f64). Files are written and read by tests/cli/cli_test.py's own .npy and Matrix Market
code (standard library only).
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from cli_test import (Failure, Npy, check, npy_bytes, planted_rows, scipy_npz, write_bytes, write_npz,  # noqa: E402
                      write_text)

CASES = {}

# OpenMPI refuses to run as root unless told; tests run as root in CI containers. One thread per process keeps
# six processes on two cores from drowning each other.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1"}


def case(function):
    CASES[function.__name__] = function
    return function


class Context:
    def __init__(self, dnmf, mpiexec, work):
        self.dnmf, self.mpiexec, self.work = dnmf, mpiexec, work
        self.sanitized = False

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def run(self, args, processes=None, timeout=120):
        """dnmf with `args`, on `processes` ranks under mpirun (None: plainly, one process)."""
        args = [str(a) for a in args]
        command = [self.dnmf] + args
        if processes is not None:
            command = [self.mpiexec, "--oversubscribe", "-np", str(processes)] + command
        env = dict(os.environ, **MPI_ENV)
        start = time.time()
        completed = subprocess.run(command, cwd=self.work, capture_output=True, text=True, timeout=timeout, env=env)
        print("$ %s  (%.1f s, rc %d)\n--- stdout\n%s--- stderr\n%s" % (
            " ".join(command), time.time() - start, completed.returncode, completed.stdout[-3000:],
            completed.stderr[-3000:]))
        return completed

    def ok(self, args, processes=None):
        completed = self.run(args, processes)
        check(completed.returncode == 0, "expected success: %s" % " ".join(map(str, args)))
        return completed

    def report(self, out_dir):
        import json
        with open(self.path(out_dir, "report.json")) as f:
            return json.load(f)


def max_relative_difference(a, b):
    check(a.shape == b.shape, "shapes differ: %s vs %s" % (a.shape, b.shape))
    rows, cols = a.shape
    scale = max(max(abs(a(i, j)) for i in range(rows) for j in range(cols)), 1e-300)
    return max(abs(a(i, j) - b(i, j)) for i in range(rows) for j in range(cols)) / scale


def same_factors(ctx, reference_dir, other_dir, tolerance=1e-8):
    for name in ("W.npy", "H.npy"):
        a, b = Npy(ctx.path(reference_dir, name)), Npy(ctx.path(other_dir, name))
        d = max_relative_difference(a, b)
        check(d <= tolerance, "%s of %s differs from the one-process result by %.3g (> %g)" % (
            name, other_dir, d, tolerance))


def gen(ctx, name, rows, cols, rank, *extra):
    ctx.ok(["gen", "--rows", rows, "--cols", cols, "--rank", rank, "--seed", 3, "--noise", 0.01, *extra, "-o", name])


# One process vs grids of 2, 4 and 6 processes, dense and sparse, m and n not divisible by the grid.
GRIDS = [(2, "2x1"), (2, "1x2"), (4, "2x2"), (6, "3x2"), (6, "6x1")]


def equality_over_grids(ctx, matrix, algo):
    common = ["factor", matrix, "-k", 4, "--algo", algo, "--iters", 25, "--tol", 0, "--seed", 5, "-q"]
    ctx.ok(common + ["-o", "one"])
    for processes, grid in GRIDS:
        out = "np%d_%s" % (processes, grid)
        completed = ctx.ok(common + ["--grid", grid, "-o", out], processes)
        check(completed.stdout.count("k=4") == 1, "the summary must be printed once (rank 0), got:\n" +
              completed.stdout)
        same_factors(ctx, "one", out)
        report = ctx.report(out)
        check(report["grid"] == grid and report["processes"] == processes, "report grid/processes wrong")
        check(abs(report["rel_error"] - ctx.report("one")["rel_error"]) <= 1e-8 * report["rel_error"],
              "rel_error differs from one process")


@case
def dense_mu(ctx):
    gen(ctx, "A.npy", 61, 47, 4)
    equality_over_grids(ctx, "A.npy", "mu")


@case
def dense_hals_kl(ctx):
    gen(ctx, "A.npy", 53, 38, 4)
    for algo in ("hals", "kl", "bpp"):
        common = ["factor", "A.npy", "-k", 4, "--algo", algo, "--iters", 15, "--tol", 0, "-q"]
        ctx.ok(common + ["-o", "one_" + algo])
        ctx.ok(common + ["--grid", "2x2", "-o", "four_" + algo], 4)
        same_factors(ctx, "one_" + algo, "four_" + algo)


@case
def sparse_mu(ctx):
    gen(ctx, "S.mtx", 70, 55, 4, "--density", 0.08)
    equality_over_grids(ctx, "S.mtx", "mu")


@case
def sparse_empty_blocks(ctx):
    """A sparse matrix whose lower half stores nothing: on 2x1 and 3x1 grids some ranks hold empty blocks. Their
    operands differ from the others' (no transpose to keep), yet every rank must take the same iteration path:
    the ranks used to wait on different collectives forever. Results equal one process's."""
    rows, cols = 40, 30
    entries = [(i, j, 0.5 + ((i * 7 + j * 11) % 13) / 13.0) for i in range(rows // 2) for j in range(cols)
               if (i * 5 + j * 3) % 4 == 0]
    with open(ctx.path("half.mtx"), "w") as f:
        f.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (rows, cols, len(entries)))
        for i, j, v in entries:
            f.write("%d %d %.17g\n" % (i + 1, j + 1, v))
    for algo in ("mu", "kl", "hals", "bpp"):
        common = ["factor", "half.mtx", "-k", 2, "--algo", algo, "--iters", 20, "--tol", 0, "-q"]
        ctx.ok(common + ["-o", "one_" + algo])
        for processes, grid in ((2, "2x1"), (3, "3x1"), (2, "1x2")):
            out = "np%d_%s_%s" % (processes, grid, algo)
            completed = ctx.run(common + ["--grid", grid, "-o", out], processes, timeout=60)
            check(completed.returncode == 0, "%s on %s failed or hung" % (algo, grid))
            same_factors(ctx, "one_" + algo, out)


@case
def grid_auto(ctx):
    gen(ctx, "A.npy", 400, 24, 3)
    completed = ctx.ok(["factor", "A.npy", "-k", 3, "--iters", 5, "-q", "-o", "out"], 4)
    # A tall matrix: words per rank k(m/pr + n/pc) are smallest with all four processes along the rows.
    check(ctx.report("out")["grid"] == "4x1", "auto grid for 400x24 on 4 processes should be 4x1, got " +
          ctx.report("out")["grid"])
    check("grid=4x1" in completed.stdout, "summary line lacks the grid")


@case
def traffic_matches_model(ctx):
    gen(ctx, "A.npy", 300, 200, 8)
    ctx.ok(["factor", "A.npy", "-k", 8, "--iters", 10, "--tol", 0, "--grid", "2x2", "-q", "-o", "out"], 4)
    comm = ctx.report("out")["communication"]
    model = comm["model_bytes_per_iteration_per_rank"]
    for rank, measured in enumerate(comm["bytes_sent_per_iteration_per_rank"]):
        check(abs(measured - model) <= 0.10 * model, "rank %d sent %.0f bytes/iteration, model %.0f (off by more "
              "than 10%%)" % (rank, measured, model))


@case
def grid_mismatch_reported_once(ctx):
    gen(ctx, "A.npy", 30, 20, 3)
    completed = ctx.run(["factor", "A.npy", "-k", 3, "--grid", "2x2", "-o", "out"], 2, timeout=60)
    check(completed.returncode != 0, "a 2x2 grid on 2 processes must fail")
    lines = [e for e in completed.stderr.splitlines() if e.startswith("dnmf: error:")]
    check(len(lines) == 1, "the error must be printed once, got:\n" + completed.stderr)
    check("--grid 2x2 needs 4 processes" in lines[0] and "has 2" in lines[0], "unclear message: " + lines[0])
    check(not os.path.exists(ctx.path("out")), "no output may be left behind")


@case
def data_errors_from_global_figures_reported_once(ctx):
    """A failure every rank detects from the allreduced figures (entries whose squares overflow, data too small for
    KL or float32, masked or not) ends the job once with the data's exit status: each rank printed it and MPI
    aborted the job before."""
    rows = planted_rows(30, 20)
    write_bytes(ctx.path("huge.npy"), npy_bytes([[v * 1e200 for v in row] for row in rows]))
    write_bytes(ctx.path("tiny.npy"), npy_bytes([[v * 1e-31 for v in row] for row in rows]))
    write_bytes(ctx.path("M.npy"), npy_bytes([[0.0 if (i + j) % 10 == 0 else 1.0 for j in range(20)] for i in range(30)]))
    for args, needle, code in ((["huge.npy"], "overflows double precision", 5),
                               (["tiny.npy", "--algo", "kl"], "too small for KL", 3),
                               (["tiny.npy", "--precision", "f32"], "too small for float32", 3),
                               # A 0/1 mask's run: A's observed entries are to blame (it named the mask's weights)
                               (["tiny.npy", "--algo", "kl", "--mask", "M.npy"],
                                "the matrix's observed entries are too small for KL", 3)):
        completed = ctx.run(["factor", *args, "-k", 3, "-o", "out"], 2, timeout=60)
        check(completed.returncode == code, "exit status %d, expected %d" % (completed.returncode, code))
        lines = [e for e in completed.stderr.splitlines() if e.startswith("dnmf: error:")]
        check(len(lines) == 1, "the error must be printed once, got:\n" + completed.stderr)
        check(needle in lines[0] and "rank" not in lines[0], "unclear message: " + lines[0])
        check(not os.path.exists(ctx.path("out")), "no output may be left behind")


@case
def budget_kept_on_a_grid(ctx):
    """A budget the plan accepts holds on every rank of a grid: a tall matrix on a 1x2 grid at k = 20 (each rank
    reduce-scatters a 150000 x 20 numerator, which MPI copies) peaked at 1.10x a budget 10% above the stated minimum
    while the plan left that copy out."""
    ctx.ok(["gen", "--rows", 150000, "--cols", 20, "--rank", 5, "--seed", 3, "-o", "tall.npy"])
    common = ["factor", "tall.npy", "-k", 20, "--grid", "1x2", "--iters", 5, "--tol", 0, "-q"]
    refused = ctx.run(common + ["--memory-budget", 1000, "-o", "tiny"], 2)
    check(refused.returncode != 0 and "needs at least" in refused.stderr, "a 1000-byte budget must be refused")
    minimum = int(refused.stderr.split("needs at least ")[1].split(" bytes")[0])
    for factor in (1.1, 1.5):
        out = "b%d" % int(factor * 10)
        ctx.ok(common + ["--memory-budget", int(minimum * factor), "-o", out], 2)
        memory = ctx.report(out)["memory"]
        if ctx.sanitized:
            print("SKIPPED the RSS check (a sanitizer build: its RSS says nothing about the budget); release checks it")
            continue
        check(memory["peak_over_budget"] <= 1.0, "budget %.1fx the minimum (%s): peak %.3fx the budget" % (
            factor, memory["mode"], memory["peak_over_budget"]))


def dnmf_ranks(launcher):
    """{MPI rank: pid} of the dnmf processes `launcher` (mpirun's pid) started: its children, whose environment
    names their rank (other jobs' processes, of tests running beside this one, are not touched)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() != "dnmf":
                    continue
            with open("/proc/%s/stat" % pid) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != launcher:
                    continue
            with open("/proc/%s/environ" % pid, "rb") as f:
                environment = f.read().split(b"\0")
        except OSError:
            continue
        for entry in environment:
            if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(entry.split(b"=")[1])] = int(pid)
    return found


def signal_one_rank(ctx, args, rank, what):
    """Starts `dnmf ARGS` on 2 processes, sends SIGTERM to `rank` once the work has begun (not to mpirun) and
    returns (exit status, stderr); a job still running 60 s later fails the case as hung."""
    import signal
    command = [ctx.mpiexec, "--oversubscribe", "-np", "2", ctx.dnmf, *args]
    job = subprocess.Popen(command, cwd=ctx.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, **MPI_ENV))
    start = time.time()
    while len(dnmf_ranks(job.pid)) < 2 and time.time() - start < 60:
        time.sleep(0.1)
    time.sleep(1.5)  # into the iterations
    ranks = dnmf_ranks(job.pid)
    check(rank in ranks, "rank %d not found: %r" % (rank, ranks))
    os.kill(ranks[rank], signal.SIGTERM)
    try:
        _, stderr = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        raise Failure("the job went on after rank %d got SIGTERM (%s)" % (rank, what))
    print(stderr[-2000:])
    return job.returncode, stderr


def one_cancelled_line(stderr, words):
    lines = [e for e in stderr.splitlines() if e.startswith("dnmf: error:")]
    check(len(lines) == 1 and words in lines[0], "expected one '%s' line:\n%s" % (words, stderr))


@case
def signal_to_one_rank_stops_the_job(ctx):
    """SIGTERM sent to one process of a job (not to mpirun) stops every process after the current iteration with
    exit 143 and nothing committed, masked or not. Only rank 0 polled its flag before: a signal to rank 1 was
    swallowed and the job committed its results with exit 0."""
    gen(ctx, "A.npy", 600, 400, 5)
    write_bytes(ctx.path("M.npy"), npy_bytes([[0.0 if (i * 7 + j) % 10 == 0 else 1.0 for j in range(400)]
                                              for i in range(600)]))
    for extra in ([], ["--mask", "M.npy"]):
        status, stderr = signal_one_rank(ctx, ["factor", "A.npy", "-k", "5", "--iters", "100000000", "--tol", "0",
                                               "-q", "-o", "out", *extra], 1, " ".join(extra))
        check(status == 143, "exit status %d, expected 143 %s" % (status, extra))
        one_cancelled_line(stderr, "cancelled at iteration")
        check(not [d for d in os.listdir(ctx.work) if d.startswith("out")], "no output may be left behind")


@case
def signal_to_one_nmfk_group_stops_the_job(ctx):
    """nmfk --groups 2: each group runs its own jobs, so a cancel agreed inside one group left the other running
    and then waiting forever, at the next collective, for processes that had left (the job hung at 100% CPU).
    A signal to either process now stops both, nothing committed beyond the checkpoints: every process exits 143
    (SIGINT to one would make it exit 130 and the other 143, and which of the two mpirun reports is its choice)."""
    gen(ctx, "A.npy", 400, 300, 5)
    for rank in (1, 0):
        out = "out%d" % rank
        status, stderr = signal_one_rank(ctx, ["nmfk", "A.npy", "--k", "10", "--perturbations", "3", "--algo", "mu",
                                               "--iters", "100000000", "--tol", "0", "--threads", "1", "--groups",
                                               "2", "-q", "-o", out], rank, "nmfk --groups 2")
        check(status == 143, "exit status %d, expected 143" % status)
        one_cancelled_line(stderr, "cancelled")
        check(not os.path.exists(ctx.path(out, "nmfk.json")), "nothing may be committed")


@case
def cv_refused_under_mpirun(ctx):
    """dnmf cv runs on one process: under mpirun it is refused once, with the usage status and no output (every
    rank once ran the whole cross-validation and wrote the same folder)."""
    gen(ctx, "A.npy", 30, 20, 3)
    completed = ctx.run(["cv", "A.npy", "--k", "2:3", "--folds", 2, "-o", "out"], 2, timeout=60)
    check(completed.returncode == 2, "exit status %d, expected 2 (usage)" % completed.returncode)
    lines = [e for e in completed.stderr.splitlines() if e.startswith("dnmf: error:")]
    check(len(lines) == 1, "the error must be printed once, got:\n" + completed.stderr)
    check("one process" in lines[0], "unclear message: " + lines[0])
    check(not os.path.exists(ctx.path("out")), "no output may be left behind")


@case
def corrupt_block_ends_job(ctx):
    """A NaN in the rows only rank 1 reads: the job ends with rank 1's error, no hang, no output."""
    rows, cols = 12, 6
    values = [[1.0 + i + 0.5 * j for j in range(cols)] for i in range(rows)]
    values[9][4] = float("nan")  # rows 6..11 belong to rank 1 on a 2x1 grid
    write_bytes(ctx.path("A.npy"), npy_bytes(values))
    start = time.time()
    completed = ctx.run(["factor", "A.npy", "-k", 2, "--grid", "2x1", "-o", "out"], 2, timeout=60)
    check(completed.returncode != 0, "a NaN in rank 1's block must fail the job")
    check(time.time() - start < 45, "the job took too long to end")
    errors = [e for e in completed.stderr.splitlines() if e.startswith("dnmf: error:")]
    check(any("rank 1" in e and "A.npy" in e and "row 9" in e and "column 4" in e for e in errors),
          "rank 1's error naming the file and global position missing:\n" + completed.stderr)
    check(not os.path.exists(ctx.path("out", "W.npy")), "no factors may be written")


@case
def hdf5_and_dcsr_inputs(ctx):
    """The same sparse matrix as .mtx, an HDF5 CSR group and .dcsr factors alike on 1 and 4 processes; W and H
    written in parallel into one HDF5 file hold what the gathered .npy files hold."""
    gen(ctx, "S.mtx", 64, 50, 4, "--density", 0.1)
    ctx.ok(["convert", "S.mtx", "S.dcsr"])
    gen(ctx, "S.h5", 64, 50, 4, "--density", 0.1)  # same seed and options: the same matrix as S.mtx
    shutil.copy(ctx.path("S.h5"), ctx.path("S.h5ad"))  # AnnData's name for the same layout: /X
    common = ["-k", 4, "--iters", 20, "--tol", 0, "-q"]
    ctx.ok(["factor", "S.mtx"] + common + ["-o", "one"])
    for name in ("S.h5", "S.h5ad", "S.dcsr"):
        out = "four_" + name.replace(".", "_")
        ctx.ok(["factor", name] + common + ["--grid", "2x2", "-o", out], 4)
        same_factors(ctx, "one", out)
    ctx.ok(["factor", "S.h5"] + common + ["--grid", "2x2", "--factors", "h5", "-o", "h5out"], 4)
    check(sorted(os.listdir(ctx.path("h5out"))) == [".dnmf-output-set", "factors.h5", "report.json"],
          "expected factors.h5 + report (and the output set's marker)")
    import json
    for dataset, npy in (("W", "W.npy"), ("H", "H.npy")):
        info = json.loads(ctx.ok(["info", "--json", "h5out/factors.h5:/" + dataset]).stdout)
        reference = Npy(ctx.path("one", npy))
        total = sum(reference.values)
        check(tuple([info["rows"], info["cols"]]) == reference.shape, "%s shape differs" % dataset)
        check(abs(info["sum"] - total) <= 1e-8 * abs(total), "%s in factors.h5 sums to %r, W.npy to %r" % (
            dataset, info["sum"], total))


@case
def npz_inputs(ctx):
    """numpy.savez and scipy.sparse.save_npz (CSC) archives: every process reads the whole archive and keeps its
    block; the factors equal the one-process run's."""
    rows = planted_rows(41, 29, zero_every=3)
    scipy_npz(ctx.path("S.npz"), rows, by_columns=True)
    write_npz(ctx.path("D.npz"), [("X.npy", npy_bytes(rows))])
    common = ["-k", 3, "--iters", 20, "--tol", 0, "-q"]
    for name in ("S.npz", "D.npz"):
        one = "one_" + name.replace(".", "_")
        ctx.ok(["factor", name] + common + ["-o", one])
        for processes, grid in ((4, "2x2"), (3, "3x1")):
            out = "np%d_%s" % (processes, name.replace(".", "_"))
            ctx.ok(["factor", name] + common + ["--grid", grid, "-o", out], processes)
            same_factors(ctx, one, out)
            check(ctx.report(out)["format"] == "npz", "report format %r" % ctx.report(out)["format"])


def mask_rows(m, n):
    """Weights of an m x n matrix: a fixed pattern of zeros (missing), twos and ones."""
    return [[0.0 if (3 * i + 5 * j) % 7 == 0 else (2.0 if (i + j) % 5 == 0 else 1.0) for j in range(n)]
            for i in range(m)]


def masked_equal_over_grids(ctx, args, tag, grids=((2, "1x2"), (2, "2x1"), (4, "2x2"))):
    """`dnmf factor ARGS` on one process and on `grids`: factors, rel_error and the missing section agree."""
    ctx.ok(["factor"] + args + ["-o", "one_" + tag])
    one = ctx.report("one_" + tag)
    for processes, grid in grids:
        out = "%s_np%d_%s" % (tag, processes, grid)
        completed = ctx.ok(["factor"] + args + ["--grid", grid, "-o", out], processes)
        same_factors(ctx, "one_" + tag, out)
        report = ctx.report(out)
        check(report["grid"] == grid and report["processes"] == processes, "report grid/processes wrong")
        check(report["observed"] == one["observed"] and report["missing"] == one["missing"],
              "observed/missing differ: %s %s vs %s %s" % (report["observed"], report["missing"], one["observed"],
                                                           one["missing"]))
        check(abs(report["rel_error"] - one["rel_error"]) <= 1e-8 * one["rel_error"],
              "rel_error %r differs from one process's %r" % (report["rel_error"], one["rel_error"]))
        warnings = [line for line in completed.stderr.splitlines() if "have no observed entry" in line]
        check(len(warnings) == (1 if one["warnings"] else 0), "the warning must be printed once (rank 0), got:\n" +
              completed.stderr)


@case
def masked_factor(ctx):
    """--mask (dense .npy, sparse .mtx) and --unstored missing under mpirun: every rank reads its blocks of A and
    of the mask; W, H, rel_error, observed and the missing section equal the one-process run's."""
    m, n = 61, 47
    gen(ctx, "A.npy", m, n, 4)
    mask = mask_rows(m, n)
    mask[50] = [0.0] * n  # observed nowhere: in the second block row of a 2x1 or 2x2 grid
    write_bytes(ctx.path("M.npy"), npy_bytes(mask))
    for algo in ("mu", "hals", "bpp", "kl"):
        common = ["A.npy", "--mask", "M.npy", "-k", 4, "--algo", algo, "--iters", 20, "--tol", 0, "-q"]
        masked_equal_over_grids(ctx, common, "dense_" + algo)
    report = ctx.report("dense_bpp_np4_2x2")
    check(report["missing"]["unobserved_rows"] == 1 and report["missing"]["mask"] == "M.npy",
          "missing section: %s" % report["missing"])
    check(report["observed"] == sum(1 for row in mask for v in row if v > 0), "observed %s" % report["observed"])
    # A sparse mask (unstored = missing) on the dense A, and a sparse A whose unstored entries are missing.
    entries = [(i, j, v) for i, row in enumerate(mask) for j, v in enumerate(row) if v > 0]
    write_text(ctx.path("M.mtx"), "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (m, n, len(entries)) +
               "".join("%d %d %g\n" % (i + 1, j + 1, v) for i, j, v in entries))
    masked_equal_over_grids(ctx, ["A.npy", "--mask", "M.mtx", "-k", 4, "--algo", "hals", "--iters", 20, "--tol", 0,
                                  "-q"], "mtx_mask", grids=((4, "2x2"),))
    gen(ctx, "S.mtx", 70, 55, 4, "--density", 0.4)
    for algo in ("mu", "bpp"):
        masked_equal_over_grids(ctx, ["S.mtx", "--unstored", "missing", "-k", 4, "--algo", algo, "--iters", 20,
                                      "--tol", 0, "-q"], "unstored_" + algo)


@case
def unit_mask_extrapolates_on_a_grid(ctx):
    """A mask of ones masks nothing: --extrapolate runs the unmasked grid solver, as on one process (the grid
    refused it); a real mask is refused once."""
    m, n = 61, 47
    gen(ctx, "A.npy", m, n, 4)
    write_bytes(ctx.path("ones.npy"), npy_bytes([[1.0] * n for _ in range(m)]))
    common = ["A.npy", "-k", 4, "--algo", "hals", "--extrapolate", "--iters", 20, "--tol", 0, "-q", "--grid", "1x2"]
    ctx.ok(["factor"] + common + ["-o", "plain"], 2)
    ctx.ok(["factor"] + common + ["--mask", "ones.npy", "-o", "ones"], 2)
    same_factors(ctx, "plain", "ones", tolerance=0)
    write_bytes(ctx.path("M.npy"), npy_bytes(mask_rows(m, n)))
    completed = ctx.run(["factor"] + common + ["--mask", "M.npy", "-o", "holes"], 2)
    check(completed.returncode == 2 and completed.stderr.count("extrapolation is not available with missing values") == 1,
          "a real mask with --extrapolate: expected one refusal, exit 2:\n" + completed.stderr)


@case
def masked_bad_input_reported_once(ctx):
    """A negative weight in the block only rank 1 reads, and a mask of another shape: every rank fails with the
    same error, printed once with the global place and the data error's exit status; nothing is written."""
    rows, cols = 12, 6
    write_bytes(ctx.path("A.npy"), npy_bytes(planted_rows(rows, cols)))
    weights = [[1.0] * cols for _ in range(rows)]
    weights[9][4] = -0.5  # rows 6..11 belong to rank 1 on a 2x1 grid
    write_bytes(ctx.path("M.npy"), npy_bytes(weights))
    write_bytes(ctx.path("M_shape.npy"), npy_bytes([[1.0] * rows for _ in range(cols)]))
    # A malformed Matrix Market line in the part of the file rank 1 parses: it ended the job in MPI_Abort with a
    # "rank 1:" prefix and Open MPI's banner; every rank knows who failed, so the job ends as for the others.
    lines = ["%d %d %g" % (i + 1, j + 1, 1.0) for j in range(cols) for i in range(rows)]
    lines[60] = "7 garbage 1"
    write_text(ctx.path("M_bad.mtx"), "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" %
               (rows, cols, len(lines)) + "\n".join(lines) + "\n")
    for mask, words in (("M.npy", ["M.npy", "row 9, column 4", "mask weights must be finite and >= 0"]),
                        ("M_shape.npy", ["M_shape.npy", "6x12", "12x6", "a mask must have A's shape"]),
                        ("M_bad.mtx", ["M_bad.mtx:63:", "garbage"])):
        completed = ctx.run(["factor", "A.npy", "-k", 2, "--mask", mask, "--grid", "2x1", "-o", "out"], 2, timeout=60)
        check(completed.returncode == 3, "exit status %d, expected 3 (data error)" % completed.returncode)
        errors = [line for line in completed.stderr.splitlines() if line.startswith("dnmf: error:")]
        check(len(errors) == 1, "the error must be printed once, got:\n" + completed.stderr)
        check(all(w in errors[0] for w in words), "unclear message: " + errors[0])
        check("rank " not in errors[0] and "MPI_ABORT" not in completed.stderr, "an abort: " + completed.stderr)
        check(not os.path.exists(ctx.path("out")), "no output may be left behind")


@case
def masked_traffic_matches_model(ctx):
    """report.json's bytes per iteration on a 2x2 grid against docs/masked.md's model, MU and HALS."""
    gen(ctx, "A.npy", 300, 200, 8)
    write_bytes(ctx.path("M.npy"), npy_bytes(mask_rows(300, 200)))
    for algo in ("mu", "hals"):
        out = "out_" + algo
        ctx.ok(["factor", "A.npy", "--mask", "M.npy", "-k", 8, "--algo", algo, "--iters", 10, "--tol", 0,
                "--grid", "2x2", "-q", "-o", out], 4)
        comm = ctx.report(out)["communication"]
        model = comm["model_bytes_per_iteration_per_rank"]
        for rank, measured in enumerate(comm["bytes_sent_per_iteration_per_rank"]):
            check(abs(measured - model) <= 0.10 * model, "%s: rank %d sent %.0f bytes/iteration, model %.0f (off by "
                  "more than 10%%)" % (algo, rank, measured, model))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dnmf", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--sanitized", action="store_true",
                        help="a sanitizer build: its RSS (shadow memory, quarantine) says nothing about a budget")
    parser.add_argument("case", choices=sorted(CASES))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        context = Context(os.path.abspath(args.dnmf), args.mpiexec, args.work)
        context.sanitized = args.sanitized
        CASES[args.case](context)
    except Failure as failure:
        print("FAIL %s: %s" % (args.case, failure))
        return 1
    except Exception:
        traceback.print_exc(file=sys.stdout)
        print("FAIL %s: unexpected exception (see above)" % args.case)
        return 1
    print("PASS %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
