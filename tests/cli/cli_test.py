#!/usr/bin/env python3
"""End-to-end tests of the dnmf command-line tool.

Run one case:   cli_test.py --dnmf path/to/dnmf --work scratch/dir CASE
Check wiring:   cli_test.py --registered case1,case2,...   (the cases CMake registered)

Standard library only: .npy and Matrix Market files are written and parsed here by hand (and .npz archives
packed with zipfile, as numpy itself packs them), so the tests need neither numpy nor scipy and do not share
code (or bugs) with the reader under test.
"""

import argparse
import ast
import json
import math
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import time
import traceback
import zipfile

NPY_MAGIC = b"\x93NUMPY"
CASES = {}


def case(function):
    """Registers a test case under its function name."""
    CASES[function.__name__] = function
    return function


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# ------------------------------------------------------------------------------------------------
# Files


def npy_bytes(rows, values=None, descr="<f8", fortran=False, header_text=None):
    """A .npy file: `rows` is a list of row lists; values are laid out in C or Fortran order."""
    shape = (len(rows), len(rows[0]) if rows else 0)
    if header_text is None:
        header_text = "{'descr': '%s', 'fortran_order': %s, 'shape': (%d, %d), }" % (
            descr, fortran, shape[0], shape[1])
    # numpy pads the header with spaces so that the data starts on a 64-byte boundary.
    unpadded = len(NPY_MAGIC) + 2 + 2 + len(header_text) + 1
    header = header_text + " " * ((64 - unpadded % 64) % 64) + "\n"
    if fortran:
        flat = [rows[i][j] for j in range(shape[1]) for i in range(shape[0])]
    else:
        flat = [v for row in rows for v in row]
    code = {"<f8": "d", "<f4": "f"}[descr]
    data = struct.pack("<%d%s" % (len(flat), code), *flat)
    return NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def npy_array(descr, shape, data):
    """A .npy image of any dtype and shape (a tuple; () for a 0-D array) with `data` as its raw bytes."""
    header_text = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, tuple(shape))
    unpadded = len(NPY_MAGIC) + 2 + 2 + len(header_text) + 1
    header = header_text + " " * ((64 - unpadded % 64) % 64) + "\n"
    return NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def write_npz(path, members, compressed=True):
    """An .npz archive as numpy.savez writes it: each member through ZipFile.open with force_zip64."""
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members:
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(data)


def scipy_npz(path, rows, by_columns=False, compressed=True):
    """scipy.sparse.save_npz of the matrix `rows` (a list of row lists) as CSR, or as CSC."""
    m, n = len(rows), len(rows[0])
    outer, inner = (n, m) if by_columns else (m, n)
    data, indices, indptr = [], [], [0]
    for a in range(outer):
        for b in range(inner):
            value = rows[b][a] if by_columns else rows[a][b]
            if value != 0:
                data.append(value)
                indices.append(b)
        indptr.append(len(data))
    write_npz(path, [
        ("indices.npy", npy_array("<i4", (len(indices),), struct.pack("<%di" % len(indices), *indices))),
        ("indptr.npy", npy_array("<i4", (len(indptr),), struct.pack("<%di" % len(indptr), *indptr))),
        ("format.npy", npy_array("|S3", (), b"csc" if by_columns else b"csr")),
        ("shape.npy", npy_array("<i8", (2,), struct.pack("<2q", m, n))),
        ("data.npy", npy_array("<f8", (len(data),), struct.pack("<%dd" % len(data), *data))),
    ], compressed)
    return len(data)


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


class Npy:
    """A parsed .npy file: header dict, shape and element access by (row, column)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            raw = f.read()
        check(raw[:6] == NPY_MAGIC, "%s: no .npy magic" % path)
        if raw[6] == 1:
            length, start = struct.unpack("<H", raw[8:10])[0], 10
        else:
            length, start = struct.unpack("<I", raw[8:12])[0], 12
        self.header = ast.literal_eval(raw[start:start + length].decode("latin1"))
        self.shape = tuple(self.header["shape"])
        self.descr = self.header["descr"]
        check(self.descr in ("<f8", "<f4"), "%s: unexpected dtype %s" % (path, self.descr))
        check(len(self.shape) == 2, "%s: expected a 2-D array, shape %s" % (path, self.shape))
        data = raw[start + length:]
        count = self.shape[0] * self.shape[1]
        size = int(self.descr[2:])
        check(len(data) == count * size,
              "%s: %d data bytes for shape %s %s" % (path, len(data), self.shape, self.descr))
        self.values = struct.unpack("<%d%s" % (count, "d" if size == 8 else "f"), data)

    def __call__(self, i, j):
        rows, cols = self.shape
        return self.values[i + j * rows] if self.header["fortran_order"] else self.values[i * cols + j]


def mtx_size_line(path):
    """(rows, cols, entries) from a Matrix Market file's size line."""
    with open(path) as f:
        check(f.readline().startswith("%%MatrixMarket"), "%s: no Matrix Market banner" % path)
        for line in f:
            if line.strip() and not line.startswith("%"):
                return tuple(int(x) for x in line.split())
    raise Failure("%s: no size line" % path)


# ------------------------------------------------------------------------------------------------
# Running dnmf


# The machine's own condition, not the command's: `dnmf factor` warns when the BLAS runs a fallback kernel on a CPU
# with AVX2 or AVX-512 (OpenBLAS 0.3.21 picks Prescott on CPUs newer than it knows). Only blas_named checks it.
BLAS_WARNING = "dnmf: warning: the BLAS runs a generic kernel"


class Result:
    def __init__(self, args, completed):
        self.args = args
        self.rc = completed.returncode
        self.stdout = completed.stdout
        self.raw_stderr = completed.stderr
        self.stderr = "".join(line for line in completed.stderr.splitlines(keepends=True)
                              if not line.startswith(BLAS_WARNING))

    def describe(self):
        return "dnmf %s -> rc %d\n--- stdout\n%s--- stderr\n%s" % (" ".join(self.args), self.rc, self.stdout,
                                                                   self.raw_stderr)


class Context:
    def __init__(self, dnmf, work):
        self.dnmf = dnmf
        self.work = work

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def run(self, *args, timeout=240, env=None, preexec_fn=None):
        """Runs dnmf with the scratch directory as working directory (so messages carry short names)."""
        args = [str(a) for a in args]
        full_env = dict(os.environ, **(env or {}))
        completed = subprocess.run([self.dnmf] + args, cwd=self.work, capture_output=True, text=True,
                                   timeout=timeout, env=full_env, preexec_fn=preexec_fn)
        result = Result(args, completed)
        print(result.describe()[-4000:])
        return result

    def ok(self, *args):
        result = self.run(*args)
        check(result.rc == 0, "expected success:\n" + result.describe())
        return result

    def gen(self, rows, cols, rank, output, *extra):
        return self.ok("gen", "--rows", rows, "--cols", cols, "--rank", rank, "--seed", 1, *extra, "-o", output)

    def report(self, out_dir):
        with open(self.path(out_dir, "report.json")) as f:
            return json.load(f)

    def expect_error(self, args, needles, out_dir="out", code=None, env=None, timeout=240, stderr_filter=None):
        """A failure: non-zero exit (`code` when given: the class of the error, docs/reliability.md), one line
        `dnmf: error: ...` on stderr containing every needle, no output. Lines starting with `stderr_filter` (a
        warning the case expects before the error) are set aside first."""
        if out_dir and os.path.isdir(self.path(out_dir)):
            before = sorted(os.listdir(self.path(out_dir)))
        else:
            before = None
        result = self.run(*args, env=env, timeout=timeout)
        check(result.rc != 0, "expected failure:\n" + result.describe())
        check(code is None or result.rc == code, "expected exit status %s:\n%s" % (code, result.describe()))
        lines = [line for line in result.stderr.splitlines()
                 if stderr_filter is None or not line.startswith(stderr_filter)]
        check(len(lines) == 1, "expected exactly one line on stderr, got %d:\n%s" % (len(lines), result.stderr))
        check(lines[0].startswith("dnmf: error: "), "stderr does not start with 'dnmf: error: ': " + lines[0])
        for needle in needles:
            check(needle in lines[0], "error message lacks %r: %s" % (needle, lines[0]))
        check(result.stdout == "", "expected nothing on stdout, got: " + result.stdout)
        if out_dir:
            after = sorted(os.listdir(self.path(out_dir))) if os.path.isdir(self.path(out_dir)) else None
            check(after == before, "output directory %s changed: %s -> %s" % (out_dir, before, after))
        return lines[0]


def check_summary_line(stdout, k, algo, out_dir):
    lines = stdout.splitlines()
    check(len(lines) == 1, "expected one summary line on stdout, got: " + stdout)
    pattern = r"k=%d algo=%s grid=\S+ iterations=\d+ rel_error=\S+ seconds=\S+ \(\S+ s/iter\) -> %s$" % (
        k, algo, re.escape(out_dir))
    check(re.match(pattern, lines[0]), "summary line %r does not match %r" % (lines[0], pattern))


def small_dense(ctx, name="A.npy", rows=20, cols=10, rank=3):
    ctx.gen(rows, cols, rank, name)
    return name


# ------------------------------------------------------------------------------------------------
# Cases: the must-show run and the report


@case
def must_show(ctx):
    ctx.gen(2000, 1500, 8, "A.npy", "--noise", 0)
    result = ctx.ok("factor", "A.npy", "-k", 8, "--algo", "hals", "--iters", 1000, "-o", "out/")
    report = ctx.report("out")
    check(report["rel_error"] < 1e-3, "rel_error %g is not below 1e-3" % report["rel_error"])
    w, h = Npy(ctx.path("out", "W.npy")), Npy(ctx.path("out", "H.npy"))
    check(w.shape == (2000, 8), "W.npy shape %s, expected (2000, 8)" % (w.shape,))
    check(h.shape == (8, 1500), "H.npy shape %s, expected (8, 1500)" % (h.shape,))
    check(w.descr == "<f8" and h.descr == "<f8", "default precision must write f8")
    check(min(w.values) >= 0 and min(h.values) >= 0, "factors must be non-negative")
    check_summary_line(result.stdout, 8, "hals", "out/")


@case
def extrapolate(ctx):
    """--extrapolate: the same planted fit to the same error, the choice and its restarts in report.json, and a
    clear refusal where it does not apply."""
    ctx.gen(300, 200, 6, "A.npy", "--noise", 0.01)
    for algo in ("hals", "bpp"):
        ctx.ok("factor", "A.npy", "-k", 6, "--algo", algo, "--iters", 200, "--tol", 0, "-o", "plain/")
        ctx.ok("factor", "A.npy", "-k", 6, "--algo", algo, "--iters", 200, "--tol", 0, "--extrapolate", "-o", "x/")
        plain, fast = ctx.report("plain"), ctx.report("x")
        check(plain["extrapolate"] is False and "extrapolation_restarts" not in plain,
              "plain run's report: extrapolate %r" % plain.get("extrapolate"))
        check(fast["extrapolate"] is True and isinstance(fast["extrapolation_restarts"], int),
              "extrapolated run's report: %r %r" % (fast.get("extrapolate"), fast.get("extrapolation_restarts")))
        # Both end at the noise floor (1%); extrapolation must not end above the plain iteration's error.
        check(fast["rel_error"] <= 1.001 * plain["rel_error"],
              "%s: extrapolated rel_error %g above the plain %g" % (algo, fast["rel_error"], plain["rel_error"]))
    ctx.expect_error(("factor", "A.npy", "-k", 6, "--algo", "mu", "--extrapolate", "-o", "mu/"),
                     ["extrapolation applies to hals and bpp", "mu"], out_dir="mu")


@case
def gen_truth_files(ctx):
    os.makedirs(ctx.path("data"))
    result = ctx.gen(30, 20, 3, "data/A.npy", "--noise", 0)
    check(len(result.stdout.splitlines()) == 1, "gen must print one summary line")
    for needle in ("30x20", "rank 3", "data/A.npy", "data/A.W.npy", "data/A.H.npy"):
        check(needle in result.stdout, "gen summary lacks %r: %s" % (needle, result.stdout))
    a, w, h = (Npy(ctx.path("data", name)) for name in ("A.npy", "A.W.npy", "A.H.npy"))
    check(a.shape == (30, 20) and w.shape == (30, 3) and h.shape == (3, 20),
          "shapes %s %s %s" % (a.shape, w.shape, h.shape))
    # Without noise the truth must reproduce A.
    worst = max(abs(a(i, j) - sum(w(i, c) * h(c, j) for c in range(3))) for i in range(30) for j in range(20))
    scale = max(abs(v) for v in a.values)
    check(worst <= 1e-12 * scale + 1e-300, "A != W H: max difference %g (scale %g)" % (worst, scale))
    check(min(a.values) >= 0, "planted A must be non-negative")
    # f32 output really is f32.
    ctx.gen(10, 8, 2, "B.npy", "--precision", "f32")
    check(Npy(ctx.path("B.npy")).descr == "<f4", "--precision f32 must write <f4")
    check(Npy(ctx.path("B.W.npy")).descr == "<f4", "--precision f32 must write <f4 truth")
    # --density is the fraction of non-zeros of a sparse A, at any rank (sqrt(density / rank) per factor gave 70%
    # for 0.9 at rank 2 and 75% for 0.999).
    for rank in (2, 5):
        for density in (0.05, 0.5, 0.9, 0.999):
            ctx.gen(200, 200, rank, "D.mtx", "--density", density)
            stored = mtx_size_line(ctx.path("D.mtx"))[2] / 40000.0
            check(abs(stored - density) <= 0.02, "--density %g, rank %d: %.3f non-zero" % (density, rank, stored))
    # Noise that overflows the precision is refused, not written as infinities that factor then refuses.
    for args in (["--rank", 3, "--noise", "1e39", "--precision", "f32"], ["--rank", 10, "--noise", "1e308"]):
        ctx.expect_error(["gen", "--rows", 20, "--cols", 20, "-o", "inf.npy"] + args,
                         ["noise", "overflow"], out_dir=None, code=2)
        check(not os.path.exists(ctx.path("inf.npy")), "gen wrote inf.npy after refusing it")
    # Sizes past memory (or past what rows * cols can count) are one clear line, not a crash.
    ctx.expect_error(["gen", "--rows", 9223372036854775807, "--cols", 3000000, "--rank", 2, "-o", "huge.npy"],
                     ["gen:", "does not fit in memory"], out_dir=None, code=1)
    # Sizes past this machine's memory are refused before anything is allocated (a 3e9 x 3e9 sparse gen was
    # OOM-killed at 24 GB; a 3e6 x 3e6 dense one aborted under AddressSanitizer in the allocator).
    for shape, extra in (((3000000, 3000000), []), ((3000000000, 3000000000), ["--density", 1e-12])):
        ctx.expect_error(["gen", "--rows", shape[0], "--cols", shape[1], "--rank", 4, *extra, "-o",
                          "huge.mtx" if extra else "huge.npy"], ["gen:", "does not fit in memory"], out_dir=None,
                         code=1, timeout=60)
    # An output that cannot be written is found before the matrix is built: at once, not after the build.
    started = time.monotonic()
    ctx.expect_error(["gen", "--rows", 3000000000, "--cols", 3000000000, "--rank", 4, "--density", 1e-12, "-o",
                      "no_such_dir/A.mtx"], ["no_such_dir/A.mtx", "cannot write"], out_dir=None, code=4, timeout=60)
    check(time.monotonic() - started < 10, "gen into a missing folder took %.1f s" % (time.monotonic() - started))
    # A, W and H are one set: when H cannot be written (here its name is a folder) the previous A and W stay.
    before = [open(ctx.path("data", n), "rb").read() for n in ("A.npy", "A.W.npy")]
    shutil.move(ctx.path("data", "A.H.npy"), ctx.path("H_saved.npy"))
    os.makedirs(ctx.path("data", "A.H.npy"))
    result = ctx.run("gen", "--rows", 30, "--cols", 20, "--rank", 3, "--seed", 9, "-o", "data/A.npy")
    check(result.rc == 4, "gen into a folder named A.H.npy: " + result.describe())
    check([open(ctx.path("data", n), "rb").read() for n in ("A.npy", "A.W.npy")] == before,
          "a failed gen replaced A or W without H")
    check(sorted(os.listdir(ctx.path("data"))) == ["A.H.npy", "A.W.npy", "A.npy"],
          "a failed gen left %s" % sorted(os.listdir(ctx.path("data"))))


@case
def report_fields(ctx):
    small_dense(ctx, rows=120, cols=90, rank=4)
    ctx.ok("factor", "A.npy", "-k", 4, "--algo", "mu", "--iters", 30, "--tol", 0, "--seed", 7, "--threads", 2,
           "--grid", "1x1", "-o", "out")
    r = ctx.report("out")
    check(sorted(os.listdir(ctx.path("out"))) == [".dnmf-output-set", "H.npy", "W.npy", "report.json"],
          "out/ must hold exactly W.npy, H.npy, report.json and the set's marker: %s" % os.listdir(ctx.path("out")))
    expected_types = {
        "input": str, "format": str, "m": int, "n": int, "nnz": int, "k": int, "algo": str, "init": str,
        "seed": int, "precision": str, "backend": str, "threads": int, "fused": bool, "iterations": int,
        "max_iterations": int, "tol": (int, float), "converged": bool, "rel_error": float,
        "rel_error_history": list, "objective_history": list, "seconds": (int, float),
        "init_seconds": (int, float), "seconds_per_iteration": (int, float), "peak_rss_bytes": int, "grid": str,
        "version": str, "timestamp": str,
    }
    for key, kind in expected_types.items():
        check(key in r, "report.json lacks %r" % key)
        check(isinstance(r[key], kind) and not (kind is int and isinstance(r[key], bool)),
              "report.json %r = %r is not %s" % (key, r[key], kind))
    exact = {"input": "A.npy", "format": "npy", "m": 120, "n": 90, "k": 4, "algo": "mu", "init": "random",
             "seed": 7, "precision": "f64", "backend": "cpu", "threads": 2, "max_iterations": 30, "tol": 0,
             "grid": "1x1"}
    for key, value in exact.items():
        check(r[key] == value, "report.json %r = %r, expected %r" % (key, r[key], value))
    check(0 < r["nnz"] <= 120 * 90, "nnz %d out of range" % r["nnz"])
    check(1 <= r["iterations"] <= r["max_iterations"], "iterations %d vs max %d" % (r["iterations"],
                                                                                   r["max_iterations"]))
    check(r["iterations"] == 30 and r["converged"] is False, "with --tol 0 all 30 iterations must run")
    check(len(r["rel_error_history"]) == r["iterations"], "len(rel_error_history) != iterations")
    check(len(r["objective_history"]) == r["iterations"], "len(objective_history) != iterations")
    check(all(isinstance(v, (int, float)) and math.isfinite(v) for v in r["rel_error_history"]),
          "rel_error_history must be finite numbers")
    check(0 <= r["rel_error"] < 1, "rel_error %g not in [0, 1)" % r["rel_error"])
    check(r["rel_error_history"][-1] <= r["rel_error_history"][0], "MU must not increase the error overall")
    check(r["seconds"] >= 0 and r["init_seconds"] >= 0, "negative timings")
    check(math.isclose(r["seconds_per_iteration"], r["seconds"] / r["iterations"], rel_tol=1e-9, abs_tol=1e-12),
          "seconds_per_iteration != seconds / iterations")
    check(r["peak_rss_bytes"] > 0, "peak_rss_bytes must be > 0")
    check(re.match(r"\d+\.\d+\.\d+", r["version"]), "version %r" % r["version"])
    check(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r["timestamp"]), "timestamp %r" % r["timestamp"])

    # A second run into the same directory: f32, no fusion, grid auto; the files are replaced.
    ctx.ok("factor", "A.npy", "-k", 4, "--iters", 5, "--precision", "f32", "--no-fuse", "--grid", "auto",
           "--quiet", "-o", "out")
    r = ctx.report("out")
    check(r["precision"] == "f32" and r["fused"] is False, "precision %r fused %r" % (r["precision"], r["fused"]))
    check(Npy(ctx.path("out", "W.npy")).descr == "<f4", "f32 run must write <f4 factors")
    check(sorted(os.listdir(ctx.path("out"))) == [".dnmf-output-set", "H.npy", "W.npy", "report.json"],
          "no temporary files may remain: %s" % os.listdir(ctx.path("out")))
    check(leftovers(ctx) == [], "no staging folder may remain: %s" % leftovers(ctx))


@case
def blas_named(ctx):
    """--version and report.json name the BLAS and its kernel; a fallback kernel on an AVX2 CPU is warned about."""
    version = ctx.ok("--version").stdout.splitlines()
    check(len(version) == 2 and re.fullmatch(r"\d+\.\d+\.\d+", version[0]), "--version: %r" % version)
    match = re.fullmatch(r"BLAS: (OpenBLAS|BLIS|MKL) (\S+), kernel (.+) \(CPU: (\w*)\)", version[1])
    check(match is not None, "--version's BLAS line %r" % version[1])
    name, blas_version, kernel, isa = match.groups()
    small_dense(ctx, rows=40, cols=30, rank=3)
    result = ctx.ok("factor", "A.npy", "-k", 3, "--iters", 3, "--quiet", "-o", "out")
    blas = ctx.report("out")["blas"]
    check(blas["name"] == name and blas["version"] == blas_version and blas["kernel"] == kernel
          and blas["cpu_vector_isa"] == isa, "report.json blas %r against --version %r" % (blas, version[1]))
    check((BLAS_WARNING in result.raw_stderr) == blas["generic_kernel"],
          "the warning must appear exactly when report.json says generic_kernel: %r" % result.raw_stderr)
    if name != "OpenBLAS" or isa not in ("avx2", "avx512"):
        print("SKIPPED part: forcing a fallback kernel needs OpenBLAS on an AVX2 CPU (here %s, %s)" % (name, isa))
        return
    # OpenBLAS's DYNAMIC_ARCH build honours OPENBLAS_CORETYPE: Prescott is its SSE3 fallback.
    forced = ctx.run("factor", "A.npy", "-k", 3, "--iters", 3, "--quiet", "-o", "out2",
                     env={"OPENBLAS_CORETYPE": "Prescott"})
    check(forced.rc == 0, "expected success:\n" + forced.describe())
    report = ctx.report("out2")["blas"]
    if report["kernel"].lower() != "prescott":
        print("SKIPPED part: this OpenBLAS ignored OPENBLAS_CORETYPE (kernel %s)" % report["kernel"])
        return
    check(report["generic_kernel"] is True, "Prescott on %s must count as generic: %r" % (isa, report))
    check(BLAS_WARNING in forced.raw_stderr, "no warning:\n" + forced.describe())
    check("OPENBLAS_CORETYPE=" in forced.raw_stderr, "the warning must name the remedy:\n" + forced.describe())


@case
def sparse(ctx):
    result = ctx.gen(600, 400, 4, "S.mtx", "--density", 0.01)
    rows, cols, entries = mtx_size_line(ctx.path("S.mtx"))
    check((rows, cols) == (600, 400), "S.mtx size line %d %d" % (rows, cols))
    check(0 < entries < 600 * 400 * 0.05, "S.mtx has %d entries for density 0.01" % entries)
    check(str(entries) in result.stdout, "gen summary must give nnz %d: %s" % (entries, result.stdout))
    # gen's nnz is info's: noise clamped at zero leaves zeros (the summary said nnz 200 for 61 non-zeros).
    noisy = ctx.gen(20, 10, 2, "noisy.npy", "--noise", 5)
    nonzeros = json.loads(ctx.ok("info", "--json", "noisy.npy").stdout)["nnz"]
    check(nonzeros < 200 and ("nnz %d," % nonzeros) in noisy.stdout, "gen nnz vs info %d: %s" % (nonzeros, noisy.stdout))
    check(Npy(ctx.path("S.W.npy")).shape == (600, 4) and Npy(ctx.path("S.H.npy")).shape == (4, 400),
          "sparse truth shapes")
    ctx.ok("factor", "S.mtx", "-k", 4, "--algo", "hals", "--iters", 50, "--precision", "f32", "-o", "out")
    r = ctx.report("out")
    check(r["format"] == "mtx" and r["precision"] == "f32", "format %r precision %r" % (r["format"],
                                                                                         r["precision"]))
    check(r["nnz"] == entries, "report nnz %d != %d entries in S.mtx" % (r["nnz"], entries))
    check((r["m"], r["n"]) == (600, 400), "report shape %dx%d" % (r["m"], r["n"]))
    # nnz counts the matrix's stored entries, not the file's lines: a symmetric file's off-diagonal line stands
    # for two entries, and duplicate lines are one (it said 3 and 4 here, from the size lines).
    write_text(ctx.path("sym.mtx"), "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n2 1 1\n3 3 4\n")
    write_text(ctx.path("dups.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 4\n"
                                     "1 1 1\n1 1 1\n2 1 1\n3 3 4\n")
    for name, expected in (("sym.mtx", 4), ("dups.mtx", 3)):
        ctx.ok("factor", name, "-k", 1, "--iters", 3, "-o", "out_" + name)
        got = ctx.report("out_" + name)["nnz"]
        check(got == expected, "%s: report nnz %r, expected %d" % (name, got, expected))
        # nmfk.json counts them alike (it gave the header's line count).
        ctx.ok("nmfk", name, "--k", "1:1", "--perturbations", 2, "--iters", 3, "-q", "-o", "nmfk_" + name)
        with open(ctx.path("nmfk_" + name, "nmfk.json")) as f:
            got = json.load(f)["input"]["nnz"]
        check(got == expected, "%s: nmfk.json nnz %r, expected %d" % (name, got, expected))
    check(math.isfinite(r["rel_error"]) and r["rel_error"] < 1, "rel_error %r" % r["rel_error"])
    check(Npy(ctx.path("out", "W.npy")).shape == (600, 4), "W.npy shape")
    check(Npy(ctx.path("out", "H.npy")).shape == (4, 400), "H.npy shape")


# ------------------------------------------------------------------------------------------------
# Cases: numpy's .npz and AnnData's .h5ad


def same_factors(a, b):
    """Two runs' factors agree to rounding (sparse products on several threads sum in a varying order)."""
    scale = max(abs(v) for v in b.values) or 1.0
    return a.shape == b.shape and max(abs(x - y) for x, y in zip(a.values, b.values)) <= 1e-12 * scale


def planted_rows(m, n, zero_every=0):
    """A rank-2 non-negative matrix as row lists, every `zero_every`-th entry zero (0: none)."""
    rows = [[(1 + i % 3) * (1 + j % 2) + 0.5 * ((i + j) % 4) for j in range(n)] for i in range(m)]
    if zero_every:
        for i in range(m):
            for j in range(n):
                if (i * n + j) % zero_every == 0:
                    rows[i][j] = 0.0
    return rows


@case
def npz_inputs(ctx):
    rows = planted_rows(12, 9)
    write_bytes(ctx.path("A.npy"), npy_bytes(rows))
    write_npz(ctx.path("D.npz"), [("arr_0.npy", npy_bytes(rows, fortran=True))])
    j = json.loads(ctx.ok("info", "D.npz", "--json").stdout)
    check((j["format"], j["rows"], j["cols"], j["nnz"]) == ("npz", 12, 9, 108), "info --json D.npz: %r" % j)
    # The same matrix from .npy and from .npz: the same factors.
    run = ("-k", 2, "--iters", 20, "--tol", 0, "--quiet")
    ctx.ok("factor", "A.npy", *run, "-o", "from_npy")
    ctx.ok("factor", "D.npz", *run, "-o", "from_npz")
    check(ctx.report("from_npz")["format"] == "npz", "report format %r" % ctx.report("from_npz")["format"])
    for name in ("W.npy", "H.npy"):
        check(same_factors(Npy(ctx.path("from_npz", name)), Npy(ctx.path("from_npy", name))),
              "%s from D.npz differs from A.npy's" % name)

    # scipy.sparse.save_npz, CSR (stored) and CSC (deflated): one matrix, the same factors.
    sparse = planted_rows(15, 11, zero_every=3)
    nnz = scipy_npz(ctx.path("S.npz"), sparse, compressed=False)
    scipy_npz(ctx.path("C.npz"), sparse, by_columns=True)
    j = json.loads(ctx.ok("info", "--json", "C.npz").stdout)
    check((j["rows"], j["cols"], j["stored"], j["nnz"]) == (15, 11, nnz, nnz), "info --json C.npz: %r" % j)
    check(abs(j["sum"] - sum(map(sum, sparse))) < 1e-9, "info sum %r" % j["sum"])
    ctx.ok("factor", "S.npz", *run, "-o", "csr")
    ctx.ok("factor", "C.npz", *run, "-o", "csc")
    check(ctx.report("csr")["nnz"] == nnz, "report nnz %r, expected %d" % (ctx.report("csr")["nnz"], nnz))
    for name in ("W.npy", "H.npy"):
        check(same_factors(Npy(ctx.path("csc", name)), Npy(ctx.path("csr", name))),
              "%s from the CSC archive differs from the CSR one's" % name)
    ctx.ok("convert", "C.npz", "C.dcsr")
    check(mtx_size_line_after_convert(ctx, "C.dcsr") == (15, 11, nnz), "C.npz -> C.dcsr -> C.mtx lost entries")
    # Extensions in any case, as every reader takes them (an upper-case .DCSR input was refused as an output).
    shutil.copyfile(ctx.path("C.dcsr"), ctx.path("U.DCSR"))
    check(mtx_size_line_after_convert(ctx, "U.DCSR") == (15, 11, nnz), "U.DCSR -> C.mtx lost entries")
    ctx.ok("convert", "C.npz", "V.DCSR")
    check(mtx_size_line_after_convert(ctx, "V.DCSR") == (15, 11, nnz), "C.npz -> V.DCSR -> C.mtx lost entries")

    # Several arrays: named on the command line, or an error that lists them.
    write_npz(ctx.path("T.npz"), [("A.npy", npy_bytes(rows)), ("B.npy", npy_bytes(sparse))])
    ctx.expect_error(["factor", "T.npz", "-k", 2, "-o", "out"], ["T.npz", "several arrays (A, B)", "T.npz:A"])
    j = json.loads(ctx.ok("info", "--json", "T.npz:B").stdout)
    check((j["rows"], j["cols"]) == (15, 11), "info T.npz:B shape %r" % ((j["rows"], j["cols"]),))
    # info names an array member's dtype and order as for a .npy (a scipy matrix's values are read as f8).
    write_npz(ctx.path("F.npz"), [("arr_0.npy", npy_bytes(rows, descr="<f4", fortran=True))])
    j = json.loads(ctx.ok("info", "--json", "F.npz").stdout)
    check(j["dtype"] == "f4" and j["fortran_order"] is True, "info F.npz: %r" % j)
    check("f4, Fortran order" in ctx.ok("info", "F.npz").stdout, "info F.npz text layout")
    ctx.ok("nmfk", "T.npz:A", "--k", "2:3", "--perturbations", 2, "--iters", 20, "--quiet", "-o", "nmfk")


def mtx_size_line_after_convert(ctx, dcsr):
    ctx.ok("convert", dcsr, "back.mtx")
    return mtx_size_line(ctx.path("back.mtx"))


@case
def h5ad_input(ctx):
    generated = ctx.run("gen", "--rows", 40, "--cols", 30, "--rank", 3, "--density", 0.3, "--seed", 1, "-o", "S.h5")
    if generated.rc != 0 and "HDF5 support is not built" in generated.stderr:
        print("SKIP: HDF5 support is not built")
        return
    check(generated.rc == 0, "gen -o S.h5 failed:\n" + generated.describe())
    shutil.copy(ctx.path("S.h5"), ctx.path("S.h5ad"))
    shutil.copy(ctx.path("S.h5"), ctx.path("S.hdf5"))
    run = ("-k", 3, "--iters", 15, "--tol", 0, "--quiet")
    ctx.ok("factor", "S.h5", *run, "-o", "h5")
    for name in ("S.h5ad", "S.h5ad:/X", "S.hdf5", "S.hdf5:X"):
        out = name.replace(".", "_").replace(":", "_").replace("/", "_")
        ctx.ok("factor", name, *run, "-o", out)
        r = ctx.report(out)
        check(r["format"] == "hdf5" and (r["m"], r["n"]) == (40, 30), "%s: report %r" % (name, r))
        for factor in ("W.npy", "H.npy"):
            check(same_factors(Npy(ctx.path(out, factor)), Npy(ctx.path("h5", factor))),
                  "%s from %s differs from S.h5's" % (factor, name))
    j = json.loads(ctx.ok("info", "--json", "S.h5ad").stdout)
    check((j["format"], j["rows"], j["cols"]) == ("hdf5", 40, 30), "info --json S.h5ad: %r" % j)
    ctx.expect_error(["factor", "S.h5ad:/layers/counts", "-k", 2, "-o", "out"],
                     ["S.h5ad", "no object '/layers/counts'"])
    # A file cut short is bad input data (exit 3), as a cut .npy is.
    write_bytes(ctx.path("cut.h5"), open(ctx.path("S.h5"), "rb").read()[:3000])
    ctx.expect_error(["factor", "cut.h5", "-k", 2, "-o", "out"], ["cut.h5", "cannot open as HDF5"], code=3)


@case
def err_npz_damaged(ctx):
    rows = planted_rows(5, 4, zero_every=2)
    scipy_npz(ctx.path("S.npz"), rows, compressed=False)
    data = open(ctx.path("S.npz"), "rb").read()
    write_bytes(ctx.path("cut.npz"), data[:len(data) // 2])
    ctx.expect_error(["factor", "cut.npz", "-k", 2, "-o", "out"], ["cut.npz", "not a zip archive, or one cut short"])
    # One byte of a stored member's values changed: its checksum no longer matches.
    at = data.index(b"data.npy") + len("data.npy")
    at = data.index(NPY_MAGIC, at) + 64 + 3
    write_bytes(ctx.path("crc.npz"), data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:])
    ctx.expect_error(["factor", "crc.npz", "-k", 2, "-o", "out"], ["crc.npz:data.npy", "CRC"], code=3)
    rows[1][0] = -3.0
    scipy_npz(ctx.path("neg.npz"), rows)
    ctx.expect_error(["factor", "neg.npz", "-k", 2, "-o", "out"], ["neg.npz", "row 1", "column 0", "-3"])
    write_npz(ctx.path("none.npz"), [("notes.txt", b"hello")])
    ctx.expect_error(["info", "none.npz"], ["none.npz", "no arrays"], out_dir=None)
    # A shape of floats is refused, as scipy refuses it (3.7 x 4.2 was read as 3 x 4).
    write_npz(ctx.path("fshape.npz"), [
        ("indices.npy", npy_array("<i4", (1,), struct.pack("<i", 0))),
        ("indptr.npy", npy_array("<i4", (4,), struct.pack("<4i", 0, 1, 1, 1))),
        ("format.npy", npy_array("|S3", (), b"csr")),
        ("shape.npy", npy_array("<f8", (2,), struct.pack("<2d", 3.7, 4.2))),
        ("data.npy", npy_array("<f8", (1,), struct.pack("<d", 1.0))),
    ])
    ctx.expect_error(["info", "fshape.npz"], ["fshape.npz:shape.npy", "<f8", "expected integers"], out_dir=None,
                     code=3)


# ------------------------------------------------------------------------------------------------
# Cases: info


def info_fields(stdout):
    """The `key  value` lines of `dnmf info` as a dict of strings."""
    fields = {}
    for line in stdout.splitlines():
        key, _, value = line.partition(" ")
        fields[key] = value.strip()
    return fields


@case
def info_good(ctx):
    rows = [[0.0, 1.5, 2.0], [3.0, 0.0, 0.25]]
    write_bytes(ctx.path("good.npy"), npy_bytes(rows, fortran=True))
    result = ctx.ok("info", "good.npy")
    check(result.stderr == "", "info on a good file must print nothing on stderr")
    f = info_fields(result.stdout)
    expected = {"shape": "2 x 3", "nnz": "4", "min": "0", "max": "3", "sum": "6.75", "negative": "0", "nan": "0",
                "inf": "0"}
    for key, value in expected.items():
        check(f.get(key) == value, "info %s = %r, expected %r\n%s" % (key, f.get(key), value, result.stdout))
    check("f8" in f.get("format", "") and "Fortran" in f.get("format", ""), "format line %r" % f.get("format"))
    check(float(f["density"]) == 4 / 6 or abs(float(f["density"]) - 4 / 6) < 1e-5, "density %r" % f["density"])


@case
def info_json(ctx):
    rows = [[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]]
    write_bytes(ctx.path("a.npy"), npy_bytes(rows, descr="<f4"))
    j = json.loads(ctx.ok("info", "a.npy", "--json").stdout)
    expected = {"path": "a.npy", "format": "npy", "dtype": "f4", "fortran_order": False, "rows": 2, "cols": 3,
                "nnz": 4, "min": 0, "max": 5, "sum": 11, "negative": 0, "nan": 0, "inf": 0}
    for key, value in expected.items():
        check(j.get(key) == value, "info --json %s = %r, expected %r" % (key, j.get(key), value))
    check(abs(j["density"] - 4 / 6) < 1e-12, "density %r" % j["density"])
    # Sparse: implicit zeros take part in min; duplicates are summed; stored counts what the file holds.
    write_text(ctx.path("s.mtx"), "%%MatrixMarket matrix coordinate real general\n% comment\n4 5 3\n"
                                  "1 1 2.5\n2 3 4\n4 5 1\n")
    j = json.loads(ctx.ok("info", "s.mtx", "--json").stdout)
    expected = {"format": "mtx", "rows": 4, "cols": 5, "stored": 3, "nnz": 3, "min": 0, "max": 4, "sum": 7.5,
                "negative": 0}
    for key, value in expected.items():
        check(j.get(key) == value, "info --json (mtx) %s = %r, expected %r" % (key, j.get(key), value))
    # A .dcsr names the precision its values are stored in, in JSON and in the text's layout line.
    for precision, dtype in (("f32", "f4"), ("f64", "f8")):
        ctx.ok("convert", "s.mtx", "s_%s.dcsr" % precision, "--precision", precision)
        j = json.loads(ctx.ok("info", "s_%s.dcsr" % precision, "--json").stdout)
        check(j["dtype"] == dtype and j["sum"] == 7.5, "info --json (dcsr %s): %r" % (precision, j))
        text = ctx.ok("info", "s_%s.dcsr" % precision).stdout
        check("CSR, %s values" % dtype in text, "info (dcsr %s) layout: %r" % (precision, text))


@case
def info_negative(ctx):
    inf, nan = float("inf"), float("nan")
    rows = [[1.0, -2.0, 0.0], [nan, 4.0, -0.5], [inf, -inf, 3.0], [-1.0, nan, 1.0]]
    write_bytes(ctx.path("bad.npy"), npy_bytes(rows))
    result = ctx.run("info", "bad.npy")
    check(result.rc == 0, "info must succeed on a matrix with negatives (it is diagnostic)")
    f = info_fields(result.stdout)
    # Counted all, not just the first: finite negatives -2, -0.5, -1; NaN twice; +inf and -inf.
    for key, value in {"negative": "3", "nan": "2", "inf": "2", "shape": "4 x 3"}.items():
        check(f.get(key) == value, "info %s = %r, expected %r\n%s" % (key, f.get(key), value, result.stdout))
    lines = result.stderr.splitlines()
    check(len(lines) == 1 and "warning" in lines[0] and "bad.npy" in lines[0]
          and "with --missing nan it fits NaN entries as missing" in lines[0],
          "expected one warning line naming bad.npy and --missing nan, got: %r" % result.stderr)
    j = json.loads(ctx.run("info", "--json", "bad.npy").stdout)
    check((j["negative"], j["nan"], j["inf"]) == (3, 2, 2), "info --json counts %r" % j)
    # Matrix Market duplicates are summed when read, but factor checks each line first: info counts the -1 that
    # factor refuses and says how many lines were summed; min and max are the merged matrix's, where the bad
    # line stands for its place (the 2 beside it is not added), as factor would read it.
    write_text(ctx.path("dup.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 4\n"
                                    "1 1 -1\n1 1 2\n2 2 1\n3 3 1\n")
    result = ctx.run("info", "dup.mtx")
    f = info_fields(result.stdout)
    for key, value in {"negative": "1", "min": "-1", "max": "1", "stored": "3", "sum": "3"}.items():
        check(f.get(key) == value, "info (dup.mtx) %s = %r, expected %r\n%s" % (key, f.get(key), value, result.stdout))
    check(f.get("duplicates", "").startswith("1 "), "info (dup.mtx) duplicates line: %r" % result.stdout)
    check("warning" in result.stderr and "1 negative" in result.stderr, "info (dup.mtx) warning: %r" % result.stderr)
    # Four lines at one place of a 2 x 2 matrix leave three places unstored: zeros, so min is 0 (it was 5); the
    # place holds their sum, 20.
    write_text(ctx.path("dup4.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 4\n" + "1 1 5\n" * 4)
    j = json.loads(ctx.ok("info", "--json", "dup4.mtx").stdout)
    check((j["stored"], j["min"], j["max"], j["sum"]) == (1, 0, 20, 20), "info --json dup4.mtx: %r" % j)
    # A small file declaring 2**40 rows: refused before its row pointers are allocated (a 10 KB file declaring 2**31
    # rows was read until the kernel killed the process, with no message).
    write_text(ctx.path("tall.mtx"), "%%MatrixMarket matrix coordinate real general\n1099511627776 3 1\n1 1 1\n")
    for command in (["info", "tall.mtx"], ["factor", "tall.mtx", "-k", 1, "-o", "out_tall"]):
        ctx.expect_error(command, ["tall.mtx", "out of memory while reading"], out_dir=None, code=1)
    # 2**31 rows (16 GiB of row pointers) were allocated and the process was killed on a machine of 24 GiB.
    write_text(ctx.path("tall31.mtx"), "%%MatrixMarket matrix coordinate real general\n2147483648 3 1\n1 1 1\n")
    if os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") < 2 * 8 * 2**31:  # refused below 32 GiB
        ctx.expect_error(["factor", "tall31.mtx", "-k", 1, "-o", "out_tall"],
                         ["tall31.mtx", "out of memory while reading", "row pointers"], out_dir=None, code=1)
    # An empty array of 2**40 columns is described at once (info looped over its empty columns for minutes).
    write_bytes(ctx.path("empty.npy"), npy_bytes([], header_text="{'descr': '<f8', 'fortran_order': False, "
                                                                 "'shape': (0, 1099511627776), }"))
    start = time.time()
    j = json.loads(ctx.run("info", "--json", "empty.npy", timeout=30).stdout)
    check((j["rows"], j["cols"]) == (0, 1099511627776) and time.time() - start < 20, "info --json empty.npy: %r" % j)
    j = json.loads(ctx.run("info", "--json", "dup.mtx").stdout)
    check((j["negative"], j["duplicates"], j["stored"]) == (1, 1, 3), "info --json (dup.mtx) %r" % j)
    # convert refuses an empty matrix from its header (0 x 2**40 had it check every empty column; 2**40 x 0
    # allocate row pointers until memory ran out).
    write_bytes(ctx.path("tall0.npy"), npy_bytes([], header_text="{'descr': '<f8', 'fortran_order': False, "
                                                                 "'shape': (1099511627776, 0), }"))
    for name in ("empty.npy", "tall0.npy"):
        start = time.time()
        ctx.expect_error(["convert", name, "e.dcsr"], [name, "empty", "nothing to convert"], out_dir=None, code=3,
                         timeout=30)
        check(time.time() - start < 20, "convert %s took %.0f s" % (name, time.time() - start))
    # A symmetric file's repeated line is one duplicate, in either triangle (both were counted twice: the reader
    # stores an off-diagonal line in both triangles).
    write_text(ctx.path("sym.mtx"), "%%MatrixMarket matrix coordinate real symmetric\n3 3 5\n"
                                    "2 1 1\n2 1 1\n1 3 4\n3 1 4\n3 3 1\n")
    j = json.loads(ctx.run("info", "--json", "sym.mtx").stdout)
    check(j["duplicates"] == 2 and j["stored"] == 5, "info --json (sym.mtx) %r" % j)
    write_text(ctx.path("symd.mtx"), "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 2 1\n2 2 3\n")
    j = json.loads(ctx.run("info", "--json", "symd.mtx").stdout)
    check(j["duplicates"] == 1 and j["max"] == 4, "info --json (symd.mtx) %r" % j)
    ctx.expect_error(["factor", "dup.mtx", "-k", 1, "-o", "dup_out"], ["dup.mtx:3: entry at row 0, column 0", "-1"],
                     out_dir="dup_out", code=3)
    # Masked runs check only observed entries, after duplicates are merged: the merge keeps the bad line's -1
    # (not the sum, 1), so they refuse the place too, whether the stored entries or a mask say it is observed.
    for extra in (["--unstored", "missing"], ["--mask", "dup_mask.mtx"]):
        write_text(ctx.path("dup_mask.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 3\n"
                                             "1 1 1\n2 2 1\n3 3 1\n")
        ctx.expect_error(["factor", "dup.mtx", "-k", 1, "-o", "dup_out"] + extra,
                         ["dup.mtx", "entry at row 0, column 0", "is -1"], out_dir="dup_out", code=3)
    # The same place unobserved (weight 0) is not fitted, so its lines are not checked.
    write_text(ctx.path("dup_mask.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 3\n"
                                         "1 1 0\n2 2 1\n3 3 1\n")
    ctx.ok("factor", "dup.mtx", "-k", 1, "--iters", 3, "--mask", "dup_mask.mtx", "-o", "dup_masked")


# ------------------------------------------------------------------------------------------------
# Cases: progress, --help


PROGRESS_LINE = re.compile(r"^iter (\d+)/(\d+)  rel_error \d\.\d{3}e[-+]\d+  \S+ s/iter  ETA \d+\.\d s$")


@case
def quiet(ctx):
    small_dense(ctx, rows=100, cols=80)
    result = ctx.ok("factor", "A.npy", "-k", 3, "--iters", 20, "--tol", 0, "--quiet", "-o", "out")
    check(result.stderr == "", "--quiet must print nothing on stderr, got: %r" % result.stderr)
    check_summary_line(result.stdout, 3, "mu", "out")


@case
def progress(ctx):
    small_dense(ctx, rows=100, cols=80)
    result = ctx.ok("factor", "A.npy", "-k", 3, "--iters", 200, "--tol", 0, "-o", "out")
    lines = result.stderr.splitlines()
    check(lines, "expected progress lines on stderr")
    iterations = []
    for line in lines:
        match = PROGRESS_LINE.match(line)
        check(match, "not a progress line: %r" % line)
        check(match.group(2) == "200", "budget in %r" % line)
        iterations.append(int(match.group(1)))
    check(iterations[:10] == list(range(1, 11)), "the first 10 iterations each get a line: %s" % iterations[:12])
    check(iterations[-1] == 200, "the last iteration gets a line: %s" % iterations[-3:])
    check(iterations == sorted(set(iterations)), "iterations must increase: %s" % iterations)
    # About every 2% (4 iterations) after the first 10, never a line per iteration for all 200.
    check(len(iterations) <= 10 + 200 // 4 + 2, "too many progress lines: %d" % len(iterations))
    check(all(b - a <= 4 for a, b in zip(iterations, iterations[1:])), "gaps over 2%%: %s" % iterations)
    check_summary_line(result.stdout, 3, "mu", "out")


@case
def help(ctx):
    result = ctx.ok("--help")
    for word in ("gen", "info", "factor", ".npy", ".npz", ".mtx", ".h5ad", ".hdf5", ".dcsr"):
        check(word in result.stdout, "dnmf --help lacks %r" % word)
    result = ctx.ok("factor", "--help")
    for flag in ("--algo", "--iters", "--tol", "--init", "--seed", "--precision", "--backend", "--threads",
                 "--no-fuse", "--l1-w", "--l2-h", "--memory-budget", "--grid", "--quiet", "--output"):
        check(flag in result.stdout, "dnmf factor --help lacks %s" % flag)
    # nmfk and cv list only what they can use; what they refuse is still parsed, so they can say why.
    shown = {"nmfk": ("--grid", "--perturbations", "--algo", "--extrapolate"),
             "cv": ("--mask", "--missing", "--unstored", "--folds")}
    hidden = {"nmfk": ("--memory-budget", "--mask", "--missing", "--unstored"),
              "cv": ("--memory-budget", "--grid", "--extrapolate")}
    for command in ("nmfk", "cv"):
        text = ctx.ok(command, "--help").stdout
        for flag in shown[command]:
            check(flag in text, "dnmf %s --help lacks %s" % (command, flag))
        for flag in hidden[command]:
            check(flag not in text, "dnmf %s --help lists %s, which it refuses" % (command, flag))
    small_dense(ctx)
    ctx.expect_error(["cv", "A.npy", "--k", 2, "--memory-budget", "1G", "-o", "out"], ["--memory-budget"], code=2)
    ctx.expect_error(["nmfk", "A.npy", "--k", 2, "--memory-budget", "1G", "-o", "out"], ["streaming"], code=2)
    ctx.expect_error([], ["subcommand"], out_dir=None, code=2)


# ------------------------------------------------------------------------------------------------
# Cases: errors. Each must fail with one line naming the file and the problem, and write nothing.


def matrix_with(value, at, rows=5, cols=4):
    data = [[float(1 + i + j) for j in range(cols)] for i in range(rows)]
    data[at[0]][at[1]] = value
    return data


def planted_rows_dense(m, n, k=2):
    """A small positive m x n matrix of rank k as row lists (no randomness needed)."""
    return [[sum((1 + (i * (c + 1)) % 5) * (1 + (j + 2 * c) % 3) for c in range(k)) * 0.1 for j in range(n)]
            for i in range(m)]


@case
def masked_factor(ctx):
    """--mask (dense .npy and sparse .mtx), --missing nan and --unstored missing: the observed count and the
    missing section in report.json, and a fully masked row: its row of W is zero, with a warning."""
    m, n = 12, 9
    data = planted_rows_dense(m, n)
    data[1][1] = 0.0  # an observed zero: report.json's nnz counts the observed non-zeros
    write_bytes(ctx.path("A.npy"), npy_bytes(data))
    mask = [[0.0 if (i + 2 * j) % 7 == 0 else 1.0 for j in range(n)] for i in range(m)]
    mask[5] = [0.0] * n  # row 5 has no observed entry
    observed = sum(1 for row in mask for v in row if v > 0)
    nonzero = sum(1 for i in range(m) for j in range(n) if mask[i][j] > 0 and data[i][j] != 0)
    write_bytes(ctx.path("M.npy"), npy_bytes(mask))
    result = ctx.ok("factor", "A.npy", "-k", 2, "--mask", "M.npy", "--algo", "bpp", "-o", "out")
    check("1 rows and 0 columns" in result.stderr and "warning" in result.stderr, "no warning: " + result.stderr)
    report = ctx.report("out")
    check(report["observed"] == observed, "observed %s, expected %d" % (report["observed"], observed))
    check(report["nnz"] == nonzero < observed, "nnz %s, expected %d (of %d observed)" % (report["nnz"], nonzero, observed))
    check(report["missing"]["mask"] == "M.npy", "missing section: %s" % report["missing"])
    check(report["missing"]["unobserved_rows"] == 1, "unobserved rows: %s" % report["missing"])
    w = Npy(ctx.path("out", "W.npy"))
    check(all(w(5, c) == 0.0 for c in range(2)), "the unobserved row of W is not zero")
    check(report["rel_error"] < 0.05, "rel_error %s" % report["rel_error"])
    # --grid auto on one process: chosen by words as on a masked grid (the report said "given").
    check(report["grid_choice"] == {"rule": "words", "chosen": "1x1", "by_words": "1x1"},
          "grid_choice: %s" % report["grid_choice"])
    # The same mask as Matrix Market (unstored = weight 0): the same observed entries.
    entries = [(i, j, v) for i, row in enumerate(mask) for j, v in enumerate(row) if v > 0]
    write_text(ctx.path("M.mtx"), "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (m, n, len(entries)) +
               "".join("%d %d %g\n" % (i + 1, j + 1, v) for i, j, v in entries))
    ctx.ok("factor", "A.npy", "-k", 2, "--mask", "M.mtx", "-o", "out_mtx")
    check(ctx.report("out_mtx")["observed"] == observed, "observed with the .mtx mask")
    # The same mask as numpy saves a boolean array ('|b1', one byte per entry): the same fit as the 0/1 float one.
    flags = bytes(1 if v > 0 else 0 for row in mask for v in row)
    write_bytes(ctx.path("B.npy"), npy_array("|b1", (m, n), flags))
    ctx.ok("factor", "A.npy", "-k", 2, "--mask", "B.npy", "--algo", "bpp", "-o", "out_bool")
    check(ctx.report("out_bool")["observed"] == observed, "observed with the boolean mask")
    check(same_factors(Npy(ctx.path("out_bool", "W.npy")), Npy(ctx.path("out", "W.npy"))),
          "the boolean mask's W differs from the float mask's")
    # NaN entries as missing.
    nan_data = [row[:] for row in data]
    nan_data[2][3] = float("nan")
    write_bytes(ctx.path("nan.npy"), npy_bytes(nan_data))
    ctx.ok("factor", "nan.npy", "-k", 2, "--missing", "nan", "-o", "out_nan")
    check(ctx.report("out_nan")["observed"] == m * n - 1, "observed with --missing nan")
    # The other readers keep NaN as stored too (they refused it, exit 3): the same fit from an .npz archive, and
    # a negative entry at a place the mask hides is never read.
    write_npz(ctx.path("nan.npz"), [("X.npy", npy_bytes(nan_data))])
    ctx.ok("factor", "nan.npz", "-k", 2, "--missing", "nan", "-o", "out_nan_npz")
    check(ctx.report("out_nan_npz")["observed"] == m * n - 1, "observed with --missing nan (.npz)")
    check(same_factors(Npy(ctx.path("out_nan_npz", "W.npy")), Npy(ctx.path("out_nan", "W.npy"))),
          "the .npz's W differs from the .npy's")
    hidden = [row[:] for row in data]
    hidden[0][0] = -7.0  # mask[0][0] is 0
    write_npz(ctx.path("hidden.npz"), [("X.npy", npy_bytes(hidden))])
    ctx.ok("factor", "hidden.npz", "-k", 2, "--mask", "M.npy", "--algo", "bpp", "-o", "out_hidden")
    check(same_factors(Npy(ctx.path("out_hidden", "W.npy")), Npy(ctx.path("out", "W.npy"))),
          "a hidden negative entry of an .npz changed W")
    j = json.loads(ctx.ok("info", "--json", "hidden.npz").stdout)
    check(j["negative"] == 1, "info --json hidden.npz: %r" % j)
    # Sparse A, unstored entries missing: only the stored ones are fitted.
    stored = [(i, j, data[i][j]) for i in range(m) for j in range(n) if (i * j) % 4 != 1]
    write_text(ctx.path("A.mtx"), "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (m, n, len(stored)) +
               "".join("%d %d %r\n" % (i + 1, j + 1, v) for i, j, v in stored))
    ctx.ok("factor", "A.mtx", "-k", 2, "--unstored", "missing", "-o", "out_sparse")
    report = ctx.report("out_sparse")
    check(report["observed"] == len(stored), "observed %s with --unstored missing" % report["observed"])
    check(report["missing"]["unstored"] == "missing", "unstored: %s" % report["missing"])


@case
def masked_cuda(ctx):
    """--backend cuda with missing values: all four algorithms with --mask and with --unstored missing are no
    longer refused. With a GPU, W and H equal the cpu backend's (same seed, same start: the start is made on the
    host); without one (or without CUDA in the build) the run fails only for that reason, saying so (the device
    is checked first)."""
    m, n = 14, 11
    data = planted_rows_dense(m, n)
    write_bytes(ctx.path("A.npy"), npy_bytes(data))
    mask = [[0.0 if (i + 2 * j) % 7 == 0 else (2.0 if (i + j) % 5 == 0 else 1.0) for j in range(n)] for i in range(m)]
    write_bytes(ctx.path("M.npy"), npy_bytes(mask))
    stored = [(i, j, data[i][j]) for i in range(m) for j in range(n) if (i * j) % 4 != 1]
    write_text(ctx.path("A.mtx"), "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (m, n, len(stored)) +
               "".join("%d %d %r\n" % (i + 1, j + 1, v) for i, j, v in stored))
    common = ["-k", 2, "--iters", 15, "--tol", 0, "--seed", 4]
    runs = [("hals", ["A.npy", "--mask", "M.npy"]), ("bpp", ["A.npy", "--mask", "M.npy"]),
            ("mu", ["A.mtx", "--unstored", "missing"]), ("kl", ["A.mtx", "--unstored", "missing"]),
            ("hals", ["A.mtx", "--unstored", "missing"]), ("bpp", ["A.mtx", "--unstored", "missing"])]
    for algo, source in runs:
        tag = algo + ("_unstored" if "--unstored" in source else "")
        ctx.ok("factor", *source, "--algo", algo, *common, "-o", "cpu_" + tag)
        result = ctx.run("factor", *source, "--algo", algo, *common, "--backend", "cuda", "-o", "gpu_" + tag)
        if result.rc != 0:
            # No device here: the only acceptable failure is the device's absence, never a refusal.
            absent = ("no CUDA device", "cannot load", "no CUDA backend")  # no GPU, no module, a CPU-only build
            check("--backend cuda" in result.stderr and any(reason in result.stderr for reason in absent),
                  "cuda run of %s failed for another reason:\n%s" % (tag, result.describe()))
            continue
        check(ctx.report("gpu_" + tag)["backend"] == "cuda", "backend: %s" % ctx.report("gpu_" + tag))
        for name in ("W.npy", "H.npy"):
            a, b = Npy(ctx.path("gpu_" + tag, name)), Npy(ctx.path("cpu_" + tag, name))
            scale = max(abs(b(i, j)) for i in range(b.shape[0]) for j in range(b.shape[1]))
            diff = max(abs(a(i, j) - b(i, j)) for i in range(b.shape[0]) for j in range(b.shape[1]))
            check(diff <= 1e-9 * scale, "%s %s: cuda differs from cpu by %g (scale %g)" % (tag, name, diff, scale))


@case
def cv(ctx):
    """dnmf cv: the table on stdout, cv.json and cv.csv in the output set, the planted rank selected."""
    ctx.gen(40, 30, 3, "A.npy", "--noise", 0.01)
    result = ctx.ok("cv", "A.npy", "--k", "2:5", "--folds", 3, "--holdout", 0.1, "--iters", 100, "-q", "-o", "out")
    check("selected k=3" in result.stdout, "stdout: " + result.stdout)
    with open(ctx.path("out", "cv.json")) as f:
        report = json.load(f)
    check(report["selected_k"] == 3 and [r["k"] for r in report["ranks"]] == [2, 3, 4, 5], "cv.json: %s" % report)
    check(len(report["held_out_per_fold"]) == 3 and report["observed"] == 40 * 30, "cv.json folds: %s" % report)
    with open(ctx.path("out", "cv.csv")) as f:
        lines = f.read().splitlines()
    check(lines[0] == "k,mean_heldout_error,standard_error,selected" and len(lines) == 5, "cv.csv: %s" % lines)
    check(report["emptied_rows_per_fold"] == [0, 0, 0] and "warning" not in report and "warning" not in
          result.stderr, "a 10%% hold-out of 40x30 empties no row: %s / %s" % (report, result.stderr))
    check(result.stderr == "", "-q printed: " + result.stderr)
    # cv.json recorded neither the penalties nor init, precision or backend, though they change the choice.
    check(report["penalties"] == {"l1_w": 0, "l2_w": 0, "l1_h": 0, "l2_h": 0} and report["init"] == "random"
          and report["precision"] == "f64" and report["backend"] == "cpu", "cv.json options: %s" % report)
    ctx.ok("cv", "A.npy", "--k", "2:3", "--folds", 2, "--iters", 20, "--l1-w", 0.5, "--l2-h", 0.25, "--precision",
           "f32", "--init", "nndsvd", "-q", "-o", "options")
    with open(ctx.path("options", "cv.json")) as f:
        options = json.load(f)
    check(options["penalties"] == {"l1_w": 0.5, "l2_w": 0, "l1_h": 0, "l2_h": 0.25} and options["init"] == "nndsvd"
          and options["precision"] == "f32", "cv.json options: %s" % options)
    ctx.expect_error(["cv", "A.npy", "--k", 2, "--holdout", "1e-9", "-o", "tiny"],
                     ["hides no entry of 1200 observed ones in fold 0 (seed 1)", "raise the fraction"], out_dir=None,
                     code=2)
    # Without -q a line per (fold, k) fit, with the held-out error cv.json records (a sweep ran silently before).
    result = ctx.ok("cv", "A.npy", "--k", "2:5", "--folds", 3, "--holdout", 0.1, "--iters", 100, "-o", "loud")
    lines = [line for line in result.stderr.splitlines() if line.startswith("cv: fold ")]
    check(len(lines) == 12 and lines[0].startswith("cv: fold 1/3 k=2 held-out error ")
          and lines[-1].startswith("cv: fold 3/3 k=5 "), "progress lines: " + result.stderr)
    first = float(lines[0].split("held-out error ")[1].split()[0])
    check(abs(first - report["ranks"][0]["fold_errors"][0]) <= 1e-4 * first, "fold 1 k=2: %s / %s" % (lines[0], report))
    # A hold-out so large that it hides whole rows: those cannot be fitted, and the run says so.
    result = ctx.ok("cv", "A.npy", "--k", "2:3", "--folds", 2, "--holdout", 0.95, "--iters", 20, "-q", "-o", "out95")
    with open(ctx.path("out95", "cv.json")) as f:
        report = json.load(f)
    emptied = report["emptied_rows_per_fold"]
    check(len(emptied) == 2 and max(emptied) > 0 and "warning" in report, "cv.json, 95%% hidden: %s" % report)
    check("dnmf: warning: A.npy: cross-validation: in" in result.stderr and "rows" in result.stderr and
          "smaller hold-out fraction" in result.stderr, "stderr: " + result.stderr)
    # A fold whose held-out entries are all zero has no relative error (it was scored in A's units and averaged
    # with the others' ratios); one that keeps only zeros has nothing to fit (it blamed the file, exit 3). Both are
    # usage errors naming the fold, before any fit. One non-zero among five observed entries; seeds 2 and 4 of a
    # 30% hold-out hide only zeros and only the non-zero.
    zeros = [[1.0 if (i, j) == (0, 0) else 0.0 for j in range(5)] for i in range(6)]
    write_bytes(ctx.path("Z.npy"), npy_bytes(zeros))
    write_bytes(ctx.path("MZ.npy"), npy_bytes([[1.0 if i == j else 0.0 for j in range(5)] for i in range(6)]))
    zero_fold = ["cv", "Z.npy", "--mask", "MZ.npy", "--k", 1, "--folds", 1, "--holdout", 0.3, "-o", "out_zero"]
    ctx.expect_error(zero_fold + ["--seed", 2], ["Z.npy: fold 0", "all of them zero", "--holdout"], out_dir=None, code=2)
    ctx.expect_error(zero_fold + ["--seed", 4], ["Z.npy: fold 0", "keeps only zero entries"], out_dir=None, code=2)
    # nmfk --cv refuses such a fold before its sweep (it ran every job first, then refused, writing no result).
    ctx.expect_error(["nmfk", "Z.npy", "--k", "1:1", "--perturbations", 2, "--iters", 5, "--cv", "--cv-folds", 1,
                      "--cv-holdout", 0.3, "--seed", 2, "-o", "nmfk_zero"], ["Z.npy: fold 0", "all of them zero"],
                     out_dir=None, code=2)
    check(not os.path.exists(ctx.path("nmfk_zero", "checkpoints")), "nmfk --cv ran its jobs before refusing the fold")
    # -q: no progress lines, and so no line saying why the run goes on past them.
    quiet = ctx.ok("nmfk", "A.npy", "--k", "2:3", "--perturbations", 2, "--iters", 50, "--cv", "--cv-folds", 2, "-q",
                   "-o", "nmfk_quiet")
    check("cross-validation:" not in quiet.stderr, "nmfk --cv -q printed: " + quiet.stderr)
    # The fits hide entries (masked fits), which do not extrapolate: --extrapolate was accepted and not applied.
    for command in (["cv", "A.npy", "--k", "2:3"], ["nmfk", "A.npy", "--k", "2:3", "--cv"]):
        ctx.expect_error(command + ["--algo", "hals", "--extrapolate", "-o", "out_x"], ["--extrapolate", "masked fits"],
                         out_dir=None, code=2)
    # One process only: a grid other than 1x1 is refused rather than ignored.
    ctx.expect_error(["cv", "A.npy", "--k", "2:3", "--grid", "2x2", "-o", "out_grid"], ["--grid 2x2", "one process"],
                     out_dir=None, code=2)
    ctx.expect_error(["cv", "A.npy", "--k", "2:50", "-o", "out"], ["k=50"], code=2)


@case
def unit_mask_extrapolates_streamed(ctx):
    """A mask of ones masks nothing: with --extrapolate the unmasked solver runs under a memory budget as in memory
    (streaming refused it, "extrapolation is not available with missing values"); a real mask is still refused."""
    m, n = 300, 200
    ctx.gen(m, n, 4, "A.npy")
    write_bytes(ctx.path("ones.npy"), npy_bytes([[1.0] * n for _ in range(m)]))
    common = ["-k", 4, "--algo", "hals", "--extrapolate", "--iters", 20, "--tol", 0, "-q"]
    ctx.ok("factor", "A.npy", *common, "-o", "plain")
    ctx.ok("factor", "A.npy", "--mask", "ones.npy", *common, "--memory-budget", "1G", "-o", "budget")
    for name in ("W.npy", "H.npy"):
        check(open(ctx.path("plain", name), "rb").read() == open(ctx.path("budget", name), "rb").read(),
              "%s: the ones mask under a budget is not the unmasked run" % name)
    holes = [[1.0] * n for _ in range(m)]
    holes[3][4] = 0.0
    write_bytes(ctx.path("holes.npy"), npy_bytes(holes))
    ctx.expect_error(["factor", "A.npy", "--mask", "holes.npy", *common, "--memory-budget", "1G", "-o", "h"],
                     ["A.npy", "extrapolation is not available with missing values"], out_dir=None, code=2)


@case
def masked_stream(ctx):
    """dnmf factor A.npy --mask M.npy --memory-budget: a budget a few MiB above the stated minimum streams A and
    its mask in many tiles, and W, H equal the in-memory masked run's (same start, same iterations)."""
    m, n = 1000, 600
    ctx.gen(m, n, 5, "A.npy")
    mask = [[0.0 if (i * 7 + j * 3) % 10 == 0 else (2.0 if (i + j) % 13 == 0 else 1.0) for j in range(n)]
            for i in range(m)]
    write_bytes(ctx.path("M.npy"), npy_bytes(mask, fortran=True))
    common = ["-k", 4, "--mask", "M.npy", "--iters", 10, "--tol", 0, "--seed", 3]
    for algo in ("mu", "hals"):
        ctx.ok("factor", "A.npy", "--algo", algo, *common, "-o", "mem_" + algo)
        refused = ctx.expect_error(["factor", "A.npy", "--algo", algo, *common, "--memory-budget", "1K",
                                    "-o", "st_" + algo], ["needs at least"], out_dir=None)
        minimum = int(re.search(r"needs at least (\d+) bytes", refused).group(1))
        # The minimum includes the process's RSS measured at planning time, which differs between two runs of
        # one command by up to a few MiB where transparent huge pages are on (CI saw 1.1 MiB). A run refused
        # for that is retried with a wider margin; 4 MiB still cuts this 9.6 MB pair of matrices into >= 4 tiles.
        for margin in (1 << 20, 2 << 20, 4 << 20):
            result = ctx.run("factor", "A.npy", "--algo", algo, *common, "--memory-budget", minimum + margin,
                             "-o", "st_" + algo)
            if result.rc == 0 or "budget" not in result.stderr:
                break
        check(result.rc == 0, "expected success:\n" + result.describe())
        report = ctx.report("st_" + algo)
        check(report["memory"]["mode"] == "streamed", "not streamed: %s" % report["memory"])
        check(report["memory"]["stream"]["tiles_per_pass"] >= 4, "tiles: %s" % report["memory"]["stream"])
        check(report["observed"] == ctx.report("mem_" + algo)["observed"], "observed differs")
        for name in ("W.npy", "H.npy"):
            a, b = Npy(ctx.path("st_" + algo, name)), Npy(ctx.path("mem_" + algo, name))
            check(a.shape == b.shape, "%s shapes %s %s" % (name, a.shape, b.shape))
            scale = max(abs(b(i, j)) for i in range(b.shape[0]) for j in range(b.shape[1]))
            diff = max(abs(a(i, j) - b(i, j)) for i in range(b.shape[0]) for j in range(b.shape[1]))
            check(diff <= 1e-10 * scale, "%s %s: streamed differs from in-memory by %g (scale %g)" %
                  (algo, name, diff, scale))


@case
def stream_error_classes(ctx):
    """Under a memory budget, errors keep the class they have in memory (docs/reliability.md): a bad entry met
    while streaming is bad input data (3), options that cannot stream are usage errors (2)."""
    ctx.gen(1000, 600, 4, "A.npy")
    with open(ctx.path("A.npy"), "rb") as f:
        raw = bytearray(f.read())
    header = Npy(ctx.path("A.npy"))
    length, start = (struct.unpack("<H", raw[8:10])[0], 10) if raw[6] == 1 else (struct.unpack("<I", raw[8:12])[0], 12)
    i, j = 700, 500
    at = i + j * 1000 if header.header["fortran_order"] else i * 600 + j
    raw[start + length + 8 * at:start + length + 8 * at + 8] = struct.pack("<d", -0.5)
    write_bytes(ctx.path("bad.npy"), bytes(raw))
    refused = ctx.expect_error(["factor", "A.npy", "-k", 4, "--memory-budget", "1K", "-o", "out"],
                               ["needs at least"], code=2)
    minimum = int(re.search(r"needs at least (\d+) bytes", refused).group(1))
    budget = minimum  # it carries 4 MiB for the baseline's jitter; it streams: holding A (4.8 MB) would need more
    ctx.expect_error(["factor", "bad.npy", "-k", 4, "--iters", 2, "--memory-budget", budget, "-o", "out"],
                     ["bad.npy", "row 700, column 500", "-0.5"], code=3)
    ctx.expect_error(["factor", "A.npy", "-k", 4, "--init", "nndsvd", "--memory-budget", budget, "-o", "out"],
                     ["--init nndsvd", "--init random"], code=2)
    ctx.gen(300, 200, 3, "S.mtx", "--density", 0.2)
    held = ctx.expect_error(["factor", "S.mtx", "-k", 3, "--memory-budget", "1K", "-o", "out"],
                            ["S.mtx", "to be held in memory", "dnmf convert"], code=2)
    # The figure it states carries the baseline's margin: a rerun with it is accepted (the bare need was refused
    # again when the baseline grew between the runs).
    stated = int(re.search(r"needs (\d+) bytes", held).group(1))
    ctx.ok("factor", "S.mtx", "-k", 3, "--iters", 2, "--memory-budget", stated, "-o", "held")


@case
def peak_rss_is_the_programs_own(ctx):
    """report.json's peak_rss_bytes is dnmf's own high-water mark, not its parent's: getrusage's ru_maxrss
    survives exec, so a dnmf started from a large process used to report that process's size."""
    small_dense(ctx)
    ctx.ok("factor", "A.npy", "-k", 2, "--iters", 5, "-o", "alone")
    alone = ctx.report("alone")["peak_rss_bytes"]
    ballast = b"\x01" * (alone + (160 << 20))  # this harness now holds more than dnmf's peak + 160 MiB, touched
    ctx.ok("factor", "A.npy", "-k", 2, "--iters", 5, "-o", "out")
    peak = ctx.report("out")["peak_rss_bytes"]
    check(0 < peak < alone + (64 << 20), "peak_rss_bytes %d (alone: %d): the run reports its parent's size of "
          "more than %d" % (peak, alone, len(ballast)))
    del ballast


@case
def err_mask(ctx):
    """Bad masks and paths that do not support masks yet: one clear error each, nothing written."""
    write_bytes(ctx.path("A.npy"), npy_bytes(planted_rows_dense(6, 5)))
    write_bytes(ctx.path("M_shape.npy"), npy_bytes([[1.0] * 6 for _ in range(5)]))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M_shape.npy", "-o", "out"],
                     ["M_shape.npy", "5x6", "6x5"], code=3)
    negative = [[1.0] * 5 for _ in range(6)]
    negative[4][1] = -0.5
    write_bytes(ctx.path("M_neg.npy"), npy_bytes(negative))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M_neg.npy", "-o", "out"],
                     ["M_neg.npy", "row 4, column 1", "weights must be finite and >= 0"], code=3)
    negative[4][1] = float("nan")
    write_bytes(ctx.path("M_nan.npy"), npy_bytes(negative))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M_nan.npy", "-o", "out"], ["M_nan.npy", "row 4"], code=3)
    nan_data = planted_rows_dense(6, 5)
    nan_data[1][2] = float("nan")
    write_bytes(ctx.path("nan.npy"), npy_bytes(nan_data))
    ctx.expect_error(["factor", "nan.npy", "-k", 2, "--mask", "M_shape.npy", "-o", "out"], ["M_shape.npy"], code=3)
    write_bytes(ctx.path("M.npy"), npy_bytes([[1.0, 0.0, 1.0, 1.0, 1.0] for _ in range(6)]))
    ctx.expect_error(["factor", "nan.npy", "-k", 2, "--mask", "M.npy", "-o", "out"], ["nan.npy", "--missing nan"],
                     code=3)
    # Under a memory budget: too small for even two tiles of A and the mask; a mask that cannot stream.
    # (Held in memory this block needs less than streamed, so the message gives that figure too.)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M.npy", "--memory-budget", "1K", "-o", "out"],
                     ["A.npy", "too small", "needs at least", "held in memory instead it needs"], code=2)
    write_text(ctx.path("M.mtx"), "%%MatrixMarket matrix coordinate real general\n6 5 1\n1 1 1\n")
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M.mtx", "--memory-budget", "1K", "-o", "out"],
                     ["cannot stream", "M.mtx", "must be a .npy"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--unstored", "missing", "-o", "out"],
                     ["A.npy", "--unstored missing applies to a sparse matrix"], code=2)
    # A grid that does not fit one process is refused with missing values as without (a 2x1 ran on 1x1, exit 0).
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M.npy", "--grid", "2x1", "-o", "out"],
                     ["--grid 2x1 needs 2 processes", "run it under mpirun -np 2"], code=2)
    ctx.expect_error(["factor", "nan.npy", "-k", 2, "--missing", "nan", "--grid", "1x3", "-o", "out"],
                     ["--grid 1x3 needs 3 processes"], code=2)
    ctx.expect_error(["nmfk", "A.npy", "--k", "1:2", "--mask", "M.npy", "-o", "out"],
                     ["not supported by nmfk", "dnmf cv"], code=2)
    # A finite entry that float32 cannot hold is bad input, not a missing value, whatever --missing says (it was
    # fitted as missing, exit 0); the message says what happened and points to f64, not to --missing nan.
    write_bytes(ctx.path("M_corner.npy"), npy_bytes(matrix_with(0.0, (0, 0), 6, 5)))
    for value, words in ((1e39, "too large for single precision"), (1e-50, "too small for single precision")):
        write_bytes(ctx.path("big.npy"), npy_bytes(matrix_with(value, (2, 1), 6, 5)))
        for extra in ([], ["--missing", "nan"], ["--mask", "M_corner.npy"]):
            line = ctx.expect_error(["factor", "big.npy", "-k", 2, "--precision", "f32", "-o", "out"] + extra,
                                    ["big.npy", "row 2, column 1", words, "--precision f64"], code=3)
            check("--missing nan takes" not in line, "the f32 marker is not a NaN: " + line)
    # A weight float32 cannot hold says so (it said "is nan"); a tiny negative weight is printed as it is
    # (it said -0.000000, which reads as a valid weight).
    write_bytes(ctx.path("M.npy"), npy_bytes(matrix_with(1e39, (0, 3), 6, 5)))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--precision", "f32", "--mask", "M.npy", "-o", "out"],
                     ["M.npy", "weight at row 0, column 3", "too large for single precision"], code=3)
    write_bytes(ctx.path("M.npy"), npy_bytes(matrix_with(-1e-9, (0, 3), 6, 5)))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "M.npy", "-o", "out"],
                     ["M.npy", "weight at row 0, column 3", "is -1e-09;"], code=3)


@case
def err_negative(ctx):
    write_bytes(ctx.path("neg.npy"), npy_bytes(matrix_with(-2.5, (3, 2))))
    ctx.expect_error(["factor", "neg.npy", "-k", 2, "-o", "out"], ["neg.npy", "row 3", "column 2", "-2.5"], code=3)
    # Fortran order on disk must report the same logical position.
    write_bytes(ctx.path("negf.npy"), npy_bytes(matrix_with(-7.0, (1, 3)), fortran=True))
    ctx.expect_error(["factor", "negf.npy", "-k", 2, "-o", "out"], ["negf.npy", "row 1", "column 3", "-7"], code=3)
    # An existing output set is kept untouched by a failed run.
    small_dense(ctx)
    ctx.ok("factor", "A.npy", "-k", 2, "-o", "keep")
    before = set_bytes(ctx, "keep")
    ctx.expect_error(["factor", "neg.npy", "-k", 2, "-o", "keep"], ["neg.npy", "row 3"], out_dir="keep", code=3)
    check(set_bytes(ctx, "keep") == before, "a failed run changed the previous output set")
    # Sparse input names the position too (1-based 3 2 in the file is row 2, column 1).
    write_text(ctx.path("neg.mtx"), "%%MatrixMarket matrix coordinate real general\n4 4 2\n1 1 1.0\n3 2 -0.5\n")
    ctx.expect_error(["factor", "neg.mtx", "-k", 2, "-o", "out"], ["neg.mtx", "row 2", "column 1"], code=3)


@case
def err_nan(ctx):
    write_bytes(ctx.path("nan.npy"), npy_bytes(matrix_with(float("nan"), (1, 3))))
    ctx.expect_error(["factor", "nan.npy", "-k", 2, "-o", "out"],
                     ["nan.npy", "row 1", "column 3", "NaN", "--missing nan"], code=3)
    # nmfk takes no missing values: its message points to cv, not to a flag it refuses.
    line = ctx.expect_error(["nmfk", "nan.npy", "--k", "1:2", "-o", "out"],
                            ["nan.npy", "row 1", "column 3", "NaN", "dnmf cv --missing nan"], code=3)
    check("fitted as missing" not in line, "nmfk's message offers --missing nan: " + line)


@case
def err_inf(ctx):
    write_bytes(ctx.path("inf.npy"), npy_bytes(matrix_with(float("inf"), (4, 0))))
    ctx.expect_error(["factor", "inf.npy", "-k", 2, "-o", "out"], ["inf.npy", "row 4", "column 0", "inf"], code=3)


@case
def err_truncated_npy(ctx):
    data = npy_bytes([[1.0] * 10 for _ in range(10)])
    write_bytes(ctx.path("cut.npy"), data[:-300])
    ctx.expect_error(["factor", "cut.npy", "-k", 2, "-o", "out"], ["cut.npy", "truncated"], code=3)


@case
def err_malformed_npy_header(ctx):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4 }"
    write_bytes(ctx.path("bad.npy"), npy_bytes([[1.0] * 4 for _ in range(3)], header_text=header))
    ctx.expect_error(["factor", "bad.npy", "-k", 2, "-o", "out"], ["bad.npy", "malformed header"], code=3)


@case
def err_malformed_mtx_header(ctx):
    write_text(ctx.path("bad.mtx"), "%%MatrixMarket matrix coordinate real\n3 3 1\n1 1 1.0\n")
    ctx.expect_error(["factor", "bad.mtx", "-k", 2, "-o", "out"], ["bad.mtx", "header"], code=3)


@case
def err_mtx_index_out_of_range(ctx):
    write_text(ctx.path("range.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 2 1.0\n")
    ctx.expect_error(["factor", "range.mtx", "-k", 2, "-o", "out"], ["range.mtx", "out of range"], code=3)


@case
def err_truncated_mtx(ctx):
    write_text(ctx.path("cut.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 2 1.0\n")
    ctx.expect_error(["factor", "cut.mtx", "-k", 2, "-o", "out"], ["cut.mtx", "truncated"], code=3)


@case
def err_k_zero(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 0, "-o", "out"], ["A.npy", "k=0", "20x10"], code=2)


@case
def err_k_too_large(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 11, "-o", "out"], ["A.npy", "k=11", "k <= 10"], code=2)


@case
def err_unknown_flag(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--bogus-flag", "-o", "out"], ["--bogus-flag"], code=2)
    # One subcommand's spelling in another: CLI11 said only "--k is required", never naming the -k it ignored.
    ctx.expect_error(["nmfk", "A.npy", "-k", "2:3", "-o", "out"],
                     ["nmfk does not take '-k' (did you mean '--k'?)", "--k is required"], out_dir=None, code=2)
    ctx.expect_error(["factor", "A.npy", "--k", 3, "-o", "out"],
                     ["factor does not take '--k' (did you mean '-k'?)", "--rank is required"], out_dir=None, code=2)
    # Options after "--" are file names: "'-k' (did you mean '-k'?)".
    ctx.expect_error(["factor", "--", "-A.npy", "-k", 2, "-o", "out"],
                     ["factor: after '--' every word is read as a file name; put the options before it"],
                     out_dir=None, code=2)
    # An option before the subcommand: "A subcommand is required".
    ctx.expect_error(["--foo", "factor", "A.npy", "-k", 2, "-o", "out"], ["unknown option '--foo'"], out_dir=None,
                     code=2)


@case
def err_unwritable_proc(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "/proc/dnmf_out"], ["/proc/dnmf_out"], out_dir=None, code=4)
    check(not os.path.exists("/proc/dnmf_out"), "/proc/dnmf_out must not exist")


@case
def err_unwritable_under_file(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "A.npy/out"], ["A.npy/out", "directory"], out_dir=None, code=4)
    check(os.path.isfile(ctx.path("A.npy")), "the input must be left alone")
    # A missing directory tree is created, and removed again when the run fails later (here: bad k).
    ctx.expect_error(["factor", "A.npy", "-k", 99, "-o", "new/deep/out"], ["A.npy", "k=99"], out_dir=None, code=2)
    check(not os.path.exists(ctx.path("new")), "directories created for a failed run must be removed")


@case
def err_missing_input(ctx):
    ctx.expect_error(["factor", "nothere.npy", "-k", 2, "-o", "out"], ["nothere.npy", "No such file"], code=4)
    ctx.expect_error(["info", "nothere.mtx"], ["nothere.mtx", "No such file"], out_dir=None, code=4)


@case
def err_unknown_extension(ctx):
    write_text(ctx.path("data.csv"), "1,2\n3,4\n")
    ctx.expect_error(["factor", "data.csv", "-k", 1, "-o", "out"], ["data.csv", "format"], code=2)


@case
def err_grid(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--grid", "2x2", "-o", "out"],
                     ["--grid 2x2", "4 processes", "mpirun -np 4"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--grid", "two", "-o", "out"], ["--grid", "two"], code=2)


@case
def err_tf32_without_cuda(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--tf32", "-o", "out"], ["--tf32", "--backend cuda"], code=2)


@case
def err_memory_budget(ctx):
    small_dense(ctx)
    # Too small for the factors plus two tiles: the message states the minimum budget.
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--memory-budget", "1K", "-o", "out"],
                     ["memory budget 1024 bytes", "too small", "needs at least", "MiB"])
    # A C-order file streams through a staging buffer: the minimum names it, so that its parts add up (4 MiB
    # were missing from the list).
    write_bytes(ctx.path("C.npy"), npy_bytes(planted_rows_dense(20, 10)))
    line = ctx.expect_error(["factor", "C.npy", "-k", 2, "--memory-budget", "1K", "-o", "out"],
                            ["needs at least", "+ staging 4.0 MiB (converting the file's order or type)"])
    # (The breakdown ends at its closing parenthesis; a resident figure may follow it.)
    breakdown = line.split("needs at least", 1)[1].split("; held in memory instead", 1)[0]
    parts = [float(x) for x in re.findall(r"([0-9.]+) MiB", breakdown)[1:]]
    minimum = float(re.search(r"needs at least \d+ bytes \(([0-9.]+) MiB\)", line).group(1))
    check(abs(sum(parts) - minimum) < 0.2, "the minimum %s MiB is not the sum of its parts %r" % (minimum, parts))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--memory-budget", "12Q", "-o", "out"],
                     ["--memory-budget", "12Q", "unit"])


@case
def err_gen_sparse_npy_name(ctx):
    ctx.expect_error(["gen", "--rows", 50, "--cols", 40, "--rank", 2, "--density", 0.1, "-o", "S.npy"],
                     ["S.npy", ".mtx"], out_dir=None)
    check(os.listdir(ctx.work) == [], "gen must write nothing on a bad -o name: %s" % os.listdir(ctx.work))
    # Planted options that cannot be met are usage errors (exit 2).
    for bad, needle in ((("--rank", 20, "--rows", 10, "--cols", 12, "--density", 0.5), "planted rank 20"),
                        (("--rank", 2, "--rows", 10, "--cols", 12, "--density", 0.5, "--noise", -1), "noise")):
        ctx.expect_error(["gen", *bad, "-o", "S.mtx"], [needle], out_dir=None, code=2)


# ------------------------------------------------------------------------------------------------
# Cases: reliability (docs/reliability.md). An output set is replaced whole or not at all; errors exit by class.


def set_bytes(ctx, out_dir):
    """{relative path: bytes} of every file under an output directory (None when it does not exist)."""
    root = ctx.path(out_dir)
    if not os.path.isdir(root):
        return None
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def leftovers(ctx, base="out"):
    """Staging or moved-aside folders of `base` in the scratch directory."""
    return sorted(n for n in os.listdir(ctx.work) if n.startswith(base + ".tmp.") or n.startswith(base + ".old."))


def check_complete_factor_set(ctx, out_dir, seed):
    files = set_bytes(ctx, out_dir)
    check(files is not None, "%s is missing" % out_dir)
    for name in ("W.npy", "H.npy", "report.json", ".dnmf-output-set"):
        check(name in files, "%s lacks %s: %s" % (out_dir, name, sorted(files)))
    check(ctx.report(out_dir)["seed"] == seed, "%s holds the set of seed %s, expected %s" % (
        out_dir, ctx.report(out_dir)["seed"], seed))


def factor_args(seed, out="out"):
    return ["factor", "A.npy", "-k", 3, "--seed", seed, "--iters", 20, "-q", "-o", out]


@case
def output_set_faults(ctx):
    small_dense(ctx, rows=60, cols=40)
    ctx.ok(*factor_args(1))
    first = set_bytes(ctx, "out")
    # An injected failure at each step of the commit: exit 4, the previous set untouched, nothing left behind. After
    # the swap (exchanged; renamed without the exchange) the swap is undone: it exited 4 with the new set in place
    # and the previous one removed (a helper session's finding).
    for step, env in (("staged", {}), ("carried", {}), ("synced", {}), ("exchanged", {}),
                      ("renamed", {"DNMF_TEST_NO_EXCHANGE": "1"})):
        ctx.expect_error(factor_args(2), ["injected failure", step], out_dir=None, code=4,
                         env=dict(env, DNMF_TEST_FAIL_AT=step))
        check(set_bytes(ctx, "out") == first, "a failure at %s changed the previous set" % step)
        check(leftovers(ctx) == [], "a failure at %s left %s" % (step, leftovers(ctx)))
    # A kill (SIGKILL: no cleanup at all) at each step: before the swap the previous set is whole, after it the
    # new one; the next run removes what the dead one left.
    for step, seed_after in (("staged", 1), ("carried", 1), ("synced", 1), ("exchanged", 3)):
        result = ctx.run(*factor_args(3), env={"DNMF_TEST_KILL_AT": step})
        check(result.rc == -9, "expected death by SIGKILL at %s:\n%s" % (step, result.describe()))
        if seed_after == 1:
            check(set_bytes(ctx, "out") == first, "a kill at %s changed the previous set" % step)
        else:
            check_complete_factor_set(ctx, "out", 3)
        check(leftovers(ctx) != [], "a kill at %s should leave its staging folder for the next run" % step)
        ctx.ok(*factor_args(1))
        check(leftovers(ctx) == [], "the next run did not clean %s" % leftovers(ctx))
        first = set_bytes(ctx, "out")
    # Without renameat2's exchange (other file systems): the old set is moved aside, then the new one in. A kill
    # in between leaves no `out`; the next run puts the previous set back before anything else.
    no_exchange = {"DNMF_TEST_NO_EXCHANGE": "1"}
    result = ctx.run(*factor_args(4), env=dict(no_exchange, DNMF_TEST_KILL_AT="aside"))
    check(result.rc == -9 and not os.path.exists(ctx.path("out")), "expected out moved aside:\n" + result.describe())
    ctx.expect_error(factor_args(5), ["injected failure"], out_dir=None, code=4,
                     env=dict(no_exchange, DNMF_TEST_FAIL_AT="staged"))
    check(set_bytes(ctx, "out") == first, "the previous set was not restored after a kill between the renames")
    check(leftovers(ctx) == [], "left behind: %s" % leftovers(ctx))
    result = ctx.run(*factor_args(6), env=no_exchange)
    check(result.rc == 0, result.describe())
    check_complete_factor_set(ctx, "out", 6)
    check(leftovers(ctx) == [], "left behind: %s" % leftovers(ctx))


def limit_file_size(limit, ignore_signal):
    def apply():
        import resource
        import signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if ignore_signal else signal.SIG_DFL)
    return apply


@case
def output_set_full_disk(ctx):
    # A write that the file system refuses part-way (EFBIG under RLIMIT_FSIZE, the same path as ENOSPC), with SIGXFSZ
    # ignored by the caller and at its default action: the CLI ignores it itself, so the second is the same clean
    # I/O failure (the process died of the signal in the middle of W.npy, its staging folder left to the next run).
    ctx.gen(3000, 200, 8, "A.npy")
    args = ["factor", "A.npy", "-k", 8, "--iters", 5, "-q", "-o", "out"]
    ctx.ok(*args)
    first = set_bytes(ctx, "out")
    result = ctx.run(*args, preexec_fn=limit_file_size(100000, True))
    check(result.rc == 4 and "cannot write" in result.stderr, "expected an I/O failure:\n" + result.describe())
    check(set_bytes(ctx, "out") == first and leftovers(ctx) == [], "a failed write changed the previous set")
    result = ctx.run(*args, preexec_fn=limit_file_size(100000, False))
    check(result.rc == 4 and "cannot write: File too large" in result.stderr, "expected an I/O failure, not "
          "death by SIGXFSZ:\n" + result.describe())
    check(set_bytes(ctx, "out") == first and leftovers(ctx) == [], "a failed write changed the previous set")
    ctx.ok(*args)
    # HDF5 outputs too (a helper session's finding): factors.h5 and gen's .h5 under the limit ended in a segfault
    # (HDF5 could not close the file it failed to write, and its exit-time cleanup crashed), exit 139, after a
    # message of HDF5's internals; gen's exited 1.
    first = set_bytes(ctx, "out")
    for h5_args in (args + ["--factors", "h5"], ["gen", "--rows", 400, "--cols", 300, "--rank", 3, "-o", "G.h5"]):
        for ignore in (True, False):
            result = ctx.run(*h5_args, preexec_fn=limit_file_size(40 * 1024, ignore))
            check(result.rc == 4 and "cannot write: File too large" in result.stderr and "errno" not in result.stderr,
                  "expected a one-line I/O failure:\n" + result.describe())
            check(set_bytes(ctx, "out") == first and leftovers(ctx) == [] and not os.path.exists(ctx.path("G.h5")),
                  "a failed HDF5 write changed the previous set or left files: %s %s" % (leftovers(ctx), result.describe()))
    # nmfk's checkpoint that cannot be written is named alone (the input's name was put before it: "A.npy:
    # out_k/checkpoints/k8_p0.job: cannot write").
    result = ctx.run("nmfk", "A.npy", "--k", 8, "--perturbations", 2, "--iters", 5, "--threads", 1, "-q", "-o",
                     "out_k", preexec_fn=limit_file_size(100000, True))
    check(result.rc == 4 and "dnmf: error: out_k/checkpoints/k8_p" in result.stderr and "cannot write" in
          result.stderr, "expected the checkpoint named alone:\n" + result.describe())
    # A real full file system where this machine lets us mount one (root in a container): a 128 KiB tmpfs
    # holds the small set of B.npy but not the 192 KiB W of A.npy.
    mnt = ctx.path("small")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", mnt], capture_output=True).returncode != 0:
        print("SKIP tmpfs part: cannot mount here")
        return
    try:
        small = ["factor", "A.npy", "-k", 8, "--iters", 5, "-q", "-o", "small/out"]
        ctx.run("gen", "--rows", 200, "--cols", 100, "--rank", 4, "--seed", 1, "-o", "B.npy")
        ctx.ok("factor", "B.npy", "-k", 4, "--iters", 5, "-q", "-o", "small/out")
        before = set_bytes(ctx, "small/out")
        result = ctx.run(*small)
        check(result.rc == 4 and "No space left" in result.stderr, "expected ENOSPC:\n" + result.describe())
        check(set_bytes(ctx, "small/out") == before, "a full disk changed the previous set")
        check(sorted(os.listdir(mnt)) == ["out"], "left behind on the full disk: %s" % os.listdir(mnt))
    finally:
        subprocess.run(["umount", mnt])


@case
def output_set_read_only(ctx):
    small_dense(ctx)
    mnt = ctx.path("ro")
    os.makedirs(mnt)
    args = ["factor", "A.npy", "-k", 2, "-q", "-o", "ro/out"]
    if os.geteuid() != 0:
        ctx.ok(*args)
        before = set_bytes(ctx, "ro/out")
        os.chmod(mnt, 0o555)
        try:
            ctx.expect_error(args, ["ro/out", "not writable", "staging folder in", "/ro ", "write permission"],
                             out_dir=None, code=4)
        finally:
            os.chmod(mnt, 0o755)
        check(set_bytes(ctx, "ro/out") == before, "a read-only target changed the previous set")
        return
    # root ignores permissions: a read-only mount is the only read-only target.
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], capture_output=True).returncode != 0:
        print("SKIP: running as root and cannot mount a read-only file system here")
        return
    try:
        ctx.ok(*args)
        before = set_bytes(ctx, "ro/out")
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        # The folder named is the parent, where the staging folder goes (it said only "not writable", which sent
        # users whose OUT was writable inside a read-only folder to the wrong one).
        ctx.expect_error(args, ["ro/out", "not writable", "Read-only", "staging folder in", "/ro ", "write permission"],
                         out_dir=None, code=4)
        check(set_bytes(ctx, "ro/out") == before, "a read-only target changed the previous set")
    finally:
        subprocess.run(["umount", mnt])


@case
def convert_keeps_nan_for_missing(ctx):
    # A sparse matrix with NaN entries had no way into .dcsr (convert refused the NaN and had no --missing), so
    # --missing nan could not stream it; with --missing nan the NaN are kept, and only they.
    entries = [(i, j, (i * 7 + j * 3) % 5 + 1.0) for i in range(30) for j in range(20) if (i + 2 * j) % 3 == 0]
    text = "".join("%d %d %s\n" % (i + 1, j + 1, "nan" if (i + j) % 11 == 0 else repr(v)) for i, j, v in entries)
    write_text(ctx.path("N.mtx"), "%%%%MatrixMarket matrix coordinate real general\n30 20 %d\n" % len(entries) + text)
    ctx.expect_error(["convert", "N.mtx", "N.dcsr"], ["N.mtx", "is NaN", "--missing nan"], out_dir=None, code=3)
    check(not os.path.exists(ctx.path("N.dcsr")), "a refused convert left N.dcsr")
    ctx.ok("convert", "N.mtx", "N.dcsr", "--missing", "nan")
    common = ["-k", 3, "--unstored", "missing", "--missing", "nan", "--iters", 20, "--tol", 0, "-q"]
    ctx.ok("factor", "N.mtx", *common, "-o", "from_mtx")
    ctx.ok("factor", "N.dcsr", *common, "-o", "from_dcsr")
    for name in ("W.npy", "H.npy"):
        check(open(ctx.path("from_mtx", name), "rb").read() == open(ctx.path("from_dcsr", name), "rb").read(),
              "%s: the .dcsr's run differs from the .mtx's" % name)
    check(ctx.report("from_dcsr")["observed"] == len(entries) - text.count("nan"), "observed entries")
    ctx.ok("convert", "N.dcsr", "back.mtx", "--missing", "nan")  # and back, NaN kept
    check(open(ctx.path("back.mtx")).read().count("nan") == text.count("nan"), "NaN lost on the way back")
    # Other bad values stay refused.
    write_text(ctx.path("neg.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 -1\n")
    ctx.expect_error(["convert", "neg.mtx", "neg.dcsr", "--missing", "nan"], ["neg.mtx", "row 1, column 1", "-1"],
                     out_dir=None, code=3)


@case
def stdout_write_failure(ctx):
    # What dnmf prints must reach stdout: `dnmf info --json A.npy > stats.json` on a full disk left an empty file
    # and exit 0 (info's text is its whole result); so did summaries, --help and --version.
    if not os.path.exists("/dev/full"):
        print("SKIP: no /dev/full here")
        return
    small_dense(ctx)
    for args in (["info", "A.npy"], ["info", "--json", "A.npy"], ["--version"], ["factor", "A.npy", "-k", 2, "-o", "o"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([ctx.dnmf] + [str(a) for a in args], cwd=ctx.work, stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=120)
        check(done.returncode == 4 and "dnmf: error: cannot write to standard output" in done.stderr,
              "%s > /dev/full: exit %d, %r" % (" ".join(map(str, args)), done.returncode, done.stderr[-500:]))
    ctx.ok("info", "A.npy")  # and a writable stdout is fine


@case
def output_set_dangling_link(ctx):
    # -o naming a link to a folder that does not exist yet: followed, as a link to an existing folder is (the
    # check before the work passed it, and the commit failed after all the work: "Not a directory", exit 4).
    small_dense(ctx)
    os.symlink("later", ctx.path("link"))
    ctx.ok("factor", "A.npy", "-k", 2, "-q", "-o", "link")
    check(os.path.islink(ctx.path("link")), "the link itself was replaced")
    check(os.path.isfile(ctx.path("later", "W.npy")) and os.path.isfile(ctx.path("later", "report.json")),
          "no output set in the link's target: %s" % os.listdir(ctx.work))
    # A loop of links is refused before any work.
    os.symlink("loop_b", ctx.path("loop_a"))
    os.symlink("loop_a", ctx.path("loop_b"))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "loop_a"], ["loop_a", "symbolic link"], out_dir=None,
                     code=4)
    # A dangling link on the way to -o: "cannot create output directory: File exists".
    os.symlink("nowhere", ctx.path("dl"))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "dl/out"],
                     ["dl/out: cannot create output directory:", "dl is a symbolic link to nowhere, which does not exist"],
                     out_dir=None, code=4)
    # gen stages its files under longer names: a legal -o name of 240 bytes failed naming the staged file.
    name = "g" * 236 + ".npy"
    ctx.expect_error(["gen", "--rows", 5, "--cols", 4, "--rank", 2, "-o", name],
                     [name + ": the name is 240 bytes; dnmf gen writes it under a staged name", "bytes shorter"],
                     out_dir=None, code=2)
    check(not [n for n in os.listdir(ctx.work) if "gggg" in n], "gen left files: %s" % os.listdir(ctx.work))


@case
def names_not_utf8(ctx):
    # A file name need not be UTF-8 on Linux: the JSON reports carry it with replacement characters (the writer
    # threw after the whole run, exit 1, and nmfk left its checkpoints behind).
    small_dense(ctx)
    name = b"b\xe9.npy"
    shutil.copy(ctx.path("A.npy"), os.path.join(os.fsencode(ctx.work), name))
    for args, report in ((["factor", name, "-k", 2, "-q", "-o", "out"], "out/report.json"),
                         (["nmfk", name, "--k", "2:3", "--perturbations", 2, "--iters", 50, "-q", "-o", "nk"],
                          "nk/nmfk.json")):
        completed = subprocess.run([os.fsencode(ctx.dnmf)] + [a if isinstance(a, bytes) else str(a).encode()
                                                              for a in args],
                                   cwd=ctx.work, capture_output=True)
        check(completed.returncode == 0, "%s on a non-UTF-8 name: rc %d\n%s" %
              (args[0], completed.returncode, completed.stderr.decode("utf-8", "replace")))
        with open(ctx.path(report), encoding="utf-8") as f:
            j = json.load(f)
        check("b\ufffd.npy" in json.dumps(j, ensure_ascii=False), "%s: the name is not in the report: %r" % (report, j))
    info = subprocess.run([os.fsencode(ctx.dnmf), b"info", b"--json", name], cwd=ctx.work, capture_output=True)
    check(info.returncode == 0 and json.loads(info.stdout.decode("utf-8"))["rows"] == 20,
          "info --json on a non-UTF-8 name: rc %d %r" % (info.returncode, info.stderr))


@case
def output_set_target_checks(ctx):
    small_dense(ctx)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", ""], ["-o", "empty"], out_dir=None, code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "."], ["working directory"], out_dir=None, code=2)
    # A legal name too long for the staging folder or temporary file beside it: a usage error saying so (it was
    # "output directory is not writable: File name too long", exit 4).
    long_name = "d" * 240
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", long_name], ["the name is 240 bytes", "at most"],
                     out_dir=None, code=2)
    ctx.expect_error(["convert", "A.npy", "e" * 245 + ".dcsr"], ["the name is 250 bytes", "shorter name"],
                     out_dir=None, code=2)
    # A directory holding files dnmf did not write is never replaced.
    os.makedirs(ctx.path("mine"))
    write_text(ctx.path("mine", "notes.txt"), "mine\n")
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "mine"], ["mine", "notes.txt"], out_dir="mine", code=2)
    # Known names alone do not make a folder dnmf's: without the marker of a committed set it is refused, and an
    # input inside a set that dnmf did write is refused too (the replaced set would take it with it).
    os.makedirs(ctx.path("proj", "k_3"))
    os.makedirs(ctx.path("proj", "checkpoints"))
    shutil.copy(ctx.path("A.npy"), ctx.path("proj", "k_3", "A.npy"))
    write_text(ctx.path("proj", "checkpoints", "notes.txt"), "mine\n")
    ctx.expect_error(["factor", "proj/k_3/A.npy", "-k", 2, "-o", "proj"], ["proj", "was not written by dnmf"],
                     out_dir=None, code=2)
    check(os.path.exists(ctx.path("proj", "k_3", "A.npy")), "the input inside -o was removed")
    shutil.rmtree(ctx.path("proj", "k_3"))
    ctx.expect_error(["factor", "A.npy", "-k", 2, "-o", "proj"], ["proj", "checkpoints", "did not write"],
                     out_dir=None, code=2)
    ctx.ok("factor", "A.npy", "-k", 2, "-q", "-o", "set")
    shutil.copy(ctx.path("A.npy"), ctx.path("set", "W.npy"))
    ctx.expect_error(["factor", "set/W.npy", "-k", 2, "-o", "set"], ["set", "holds the input set/W.npy"],
                     out_dir=None, code=2)
    # Stale staging folders: a dead process's is removed, a live one's (this script's pid) is left alone; names
    # that only look like ours (a user's "out.old.2023.csv") are neither removed nor renamed.
    dead = ctx.path("out.tmp.999999999.0123456789abcdef")
    live = ctx.path("out.tmp.%d.0123456789abcdef" % os.getpid())
    for d in (dead, live):
        os.makedirs(d)
        write_text(os.path.join(d, "W.npy"), "partial")
    mine = [ctx.path("out.tmp.999999.notes.txt"), ctx.path("out.old.999997.csv"), ctx.path("out.tmp.999998.2024"),
            ctx.path("out.old.999996.0123456789abcdef")]  # the last: a folder without the marker of a set
    write_text(mine[0], "mine\n")
    write_text(mine[1], "old,csv\n")
    for d in mine[2:]:
        os.makedirs(d)
        write_text(os.path.join(d, "x"), "data\n")
    ctx.ok("factor", "A.npy", "-k", 2, "-q", "-o", "out")
    check(not os.path.exists(dead), "the dead run's staging folder was not removed")
    check(os.path.exists(live), "a live run's staging folder was removed")
    for path in mine:
        check(os.path.exists(path), "%s, not dnmf's, was removed or renamed" % path)


@case
def output_set_nmfk(ctx):
    ctx.gen(40, 30, 2, "A.npy", "--noise", 0)
    args = ["nmfk", "A.npy", "--k", "1:3", "--perturbations", 2, "--iters", 50, "-q", "-o", "out"]
    result = ctx.ok(*args)
    check("-> out/nmfk.json" in result.stdout, "the summary must name the final path: " + result.stdout)
    first = set_bytes(ctx, "out")
    for name in ("nmfk.json", "nmfk.csv", "k_1/W.npy", "k_3/H.npy", ".dnmf-output-set"):
        check(name in first, "nmfk set lacks %s: %s" % (name, sorted(first)))
    check(any(n.startswith("checkpoints/") for n in first), "no checkpoints in %s" % sorted(first))
    # (The rerun's "resuming from checkpoints" notice is a second stderr line, so not expect_error.)
    result = ctx.run(*args, env={"DNMF_TEST_FAIL_AT": "carried"})
    check(result.rc == 4 and "dnmf: error: injected failure" in result.stderr, result.describe())
    check(set_bytes(ctx, "out") == first and leftovers(ctx) == [], "a failed nmfk commit changed the set")
    # Killed after the swap: the new set is in place with its checkpoints carried over; a rerun resumes.
    result = ctx.run(*args, env={"DNMF_TEST_KILL_AT": "exchanged"})
    check(result.rc == -9, result.describe())
    after = set_bytes(ctx, "out")
    check(sorted(after) == sorted(first), "the new nmfk set differs in its files: %s" % sorted(after))
    result = ctx.ok(*args)
    check("6 from checkpoints" in result.stdout, "the rerun did not resume: " + result.stdout)
    check(leftovers(ctx) == [], "left behind: %s" % leftovers(ctx))
    # A first run killed before its commit leaves an OUT of checkpoints only; a rerun on a file system without
    # renameat2's exchange moves it aside and dies before its own rename: the next run puts it back and resumes
    # (it was left as OUT.old.* for good, and the run started from nothing).
    fresh = [a if a != "out" else "fresh" for a in args]
    result = ctx.run(*fresh, env={"DNMF_TEST_KILL_AT": "staged"})
    check(result.rc == -9 and os.listdir(ctx.path("fresh")) == ["checkpoints"], result.describe())
    result = ctx.run(*fresh, env={"DNMF_TEST_NO_EXCHANGE": "1", "DNMF_TEST_KILL_AT": "aside"})
    check(result.rc == -9 and not os.path.exists(ctx.path("fresh")), result.describe())
    result = ctx.ok(*fresh)
    check("6 from checkpoints" in result.stdout, "the checkpoints moved aside were not put back: " + result.stdout)
    check(leftovers(ctx, "fresh") == [], "left behind: %s" % leftovers(ctx, "fresh"))


@case
def exit_codes(ctx):
    small_dense(ctx)
    result = ctx.ok("--help")
    check("Exit status" in result.stdout and "143" in result.stdout, "dnmf --help lacks the exit codes")
    # Usage: the parser's own errors and the library's option checks alike.
    ctx.expect_error(["fcator", "A.npy"], ["unknown subcommand 'fcator'", "did you mean 'factor'?"],
                     out_dir=None, code=2)
    ctx.expect_error(["zzzzzz"], ["unknown subcommand 'zzzzzz'", "factor"], out_dir=None, code=2)
    ctx.expect_error(["factor", "A.npy", "-o", "out"], ["--rank"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", "two", "-o", "out"], ["two"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--algo", "nope", "-o", "out"], ["nope"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--iters", -1, "-o", "out"], ["iters"], code=2)
    ctx.expect_error(["nmfk", "A.npy", "--k", "3:1", "-o", "out"], ["--k", "empty"], code=2)
    # One perturbation can never give a silhouette; a sweep too large to cluster is refused before any fit.
    ctx.expect_error(["nmfk", "A.npy", "--k", "1:2", "--perturbations", 1, "-o", "out"],
                     ["--perturbations must be >= 2", "silhouettes"], code=2)
    ctx.expect_error(["nmfk", "A.npy", "--k", "1:2", "--perturbations", 2000000000, "-o", "out"],
                     ["2000000000 perturbations", "GiB", "fewer --perturbations"], code=2, timeout=30)
    # An empty mask or budget (an unset shell variable) is refused, not taken as none.
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--mask", "", "-o", "out"], ["--mask", "empty"], code=2)
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--memory-budget", "", "-o", "out"], ["--memory-budget", "empty"],
                     code=2)
    # A seed beyond 64 bits is refused, not clamped to 2^64 - 1 (two such seeds would run one stream).
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--seed", "18446744073709551616", "-o", "out"],
                     ["--seed", "18446744073709551616", "at most"], code=2)
    ctx.expect_error(["gen", "--rows", 4, "--cols", 4, "--rank", 1, "--seed", "-3", "-o", "g.npy"],
                     ["--seed", "-3"], out_dir=None, code=2)
    ctx.ok("factor", "A.npy", "-k", 2, "--iters", 1, "--seed", "18446744073709551615", "-q", "-o", "seeded")
    check(json.load(open(ctx.path("seeded/report.json")))["seed"] == 2 ** 64 - 1, "the largest seed is kept")
    # Data, then I/O.
    write_bytes(ctx.path("zero.npy"), npy_bytes([[0.0, 0.0], [0.0, 0.0]]))
    ctx.expect_error(["factor", "zero.npy", "-k", 1, "-o", "out"], ["zero.npy", "zeros"], code=3)
    ctx.expect_error(["info", "missing.npy"], ["missing.npy"], out_dir=None, code=4)
    # Numerical: finite entries whose squares overflow double precision.
    write_bytes(ctx.path("huge.npy"), npy_bytes([[1e300, 2e300], [3e300, 1e300]]))
    ctx.expect_error(["factor", "huge.npy", "-k", 1, "-o", "out"], ["huge.npy", "overflows", "rescale"], code=5)


@case
def interrupted(ctx):
    import signal
    import time
    ctx.gen(3000, 2000, 8, "A.npy")
    args = ["factor", "A.npy", "-k", 8, "--iters", 2, "-q", "-o", "out"]
    ctx.ok(*args)
    first = set_bytes(ctx, "out")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        long_run = [str(a) for a in [ctx.dnmf, "factor", "A.npy", "-k", 8, "--iters", 100000, "--tol", 0, "-o", "out"]]
        process = subprocess.Popen(long_run, cwd=ctx.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        process.stderr.readline()  # the first progress line: the solver is iterating
        time.sleep(0.5)
        process.send_signal(sig)
        stdout, stderr = process.communicate(timeout=60)
        check(process.returncode == code, "expected exit %d after %s, got %d: %s" % (
            code, sig.name, process.returncode, stderr))
        check("dnmf: error:" in stderr and "cancelled" in stderr, "no clear message: " + stderr)
        check(set_bytes(ctx, "out") == first and leftovers(ctx) == [], "an interrupted run changed the set")
    # A signal just after the staging folder is made (DNMF_TEST_SIGNAL_AT): the handlers were installed after it,
    # so the process died of the signal, without a message, and left the folder (a helper session's finding).
    ctx.gen(60, 40, 3, "S.npy")
    for command in (["factor", "S.npy", "-k", 3], ["nmfk", "S.npy", "--k", "2:3", "--perturbations", 2],
                    ["cv", "S.npy", "--k", "2:3"]):
        for out in ("out", "new_" + command[0]):  # over a set, and into a new folder
            result = ctx.run(*(command + ["-q", "-o", out]), env={"DNMF_TEST_SIGNAL_AT": "staging"})
            check(result.rc == 143 and "dnmf: error:" in result.stderr and "cancelled" in result.stderr,
                  "expected the cancelled run's exit and message:\n" + result.describe())
            check(leftovers(ctx, out) == [], "left: %s" % leftovers(ctx, out))
            # nmfk keeps its (empty) checkpoints folder in OUT, as a first run that dies leaves it, and says so.
            if command[0] == "nmfk":
                check("checkpointed in %s/checkpoints: the same command resumes them" % out in result.stderr,
                      "nmfk's interruption does not say what to do: " + result.stderr)
                shutil.rmtree(ctx.path(out, "checkpoints"), ignore_errors=True)
            check(set_bytes(ctx, "out") == first and
                  (out == "out" or not os.path.exists(ctx.path(out)) or os.listdir(ctx.path(out)) == []),
                  "an interrupted %s changed %s" % (command[0], out))
    # With --restart the same command would discard the checkpoints again: the message says to drop the flag.
    result = ctx.run("nmfk", "S.npy", "--k", "2:3", "--perturbations", 2, "--restart", "-q", "-o", "again",
                     env={"DNMF_TEST_SIGNAL_AT": "staging"})
    check(result.rc == 143 and "the same command without --restart resumes them" in result.stderr,
          "nmfk --restart's interruption: " + result.describe())


@case
def signal_during_the_commit_is_not_swallowed(ctx):
    """A SIGINT or SIGTERM during the output commit (the fsync of every file can take seconds) was looked at only
    before it: exit 0 and the new set committed (a helper session's finding). Before the swap the previous set
    stays and the run exits 143; during the swap the new set stands and the run says so, exit 143 too."""
    ctx.gen(60, 40, 3, "S.npy")
    for command, result_file in ((["factor", "S.npy", "-k", 3], "report.json"),
                                 (["nmfk", "S.npy", "--k", "2:3", "--perturbations", 2], "nmfk.json"),
                                 (["cv", "S.npy", "--k", "2:3"], "cv.json")):
        ctx.ok(*(command + ["--iters", 5, "-q", "-o", "out"]))

        def result_bytes():
            with open(ctx.path("out", result_file), "rb") as f:
                return f.read()

        first = result_bytes()
        for step in ("staged", "carried", "synced", "exchanged"):
            # nmfk's checkpoints (kept in OUT across sets) are of 5 iterations: another count is refused.
            shutil.rmtree(ctx.path("out", "checkpoints"), ignore_errors=True)
            result = ctx.run(*(command + ["--iters", 7, "-q", "-o", "out"]), env={"DNMF_TEST_SIGNAL_AT": step})
            swapped = step == "exchanged"
            said = "the new results are in place" if swapped else "interrupted before the output was committed"
            check(result.rc == 143 and said in result.stderr, "%s at %s:\n%s" % (command[0], step, result.describe()))
            check((result_bytes() != first) == swapped and leftovers(ctx, "out") == [],
                  "%s at %s: the set %s, left %s" % (command[0], step, "changed" if result_bytes() != first else
                                                     "stayed", leftovers(ctx, "out")))
        shutil.rmtree(ctx.path("out"))


@case
def closed_output_pipes_do_not_kill_a_run(ctx):
    """A reader of stderr or stdout that went away (`dnmf factor ... 2>&1 | head -2`) killed the run with SIGPIPE
    (status 141) and left its staging folder; the writes now fail quietly and the run commits its set."""
    ctx.gen(300, 250, 5, "S.npy")
    script = "%s factor S.npy -k 4 --iters 3000 --tol 0 -o piped 2>&1 | head -2 >/dev/null; echo ${PIPESTATUS[0]}"
    done = subprocess.run(["bash", "-c", script % shlex.quote(str(ctx.dnmf))], cwd=ctx.work, capture_output=True,
                          text=True, timeout=120)
    check(done.stdout.strip() == "0", "status %r (141 is SIGPIPE): %s" % (done.stdout, done.stderr))
    check(os.path.exists(ctx.path("piped", "report.json")) and leftovers(ctx, "piped") == [],
          "the run did not commit, or left %s" % leftovers(ctx, "piped"))
    done = subprocess.run(["bash", "-c", "%s info S.npy | head -1 >/dev/null; echo ${PIPESTATUS[0]}" %
                           shlex.quote(str(ctx.dnmf))], cwd=ctx.work, capture_output=True, text=True, timeout=60)
    check(done.stdout.strip() == "0" and done.stderr == "", "info into a closed pipe: %r %r" % (done.stdout,
                                                                                             done.stderr))


@case
def cv_interrupted_while_checking_folds(ctx):
    """dnmf cv checks every fold's draw before it fits (a fold hiding none or all of the entries is refused up
    front); with two billion folds that check ran for hours and ignored SIGINT and SIGTERM (it polled nothing)."""
    import signal
    import time
    ctx.gen(40, 30, 3, "A.npy")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        run = [str(a) for a in [ctx.dnmf, "cv", "A.npy", "--k", "2:3", "--folds", 2000000000, "-q", "-o", "out"]]
        process = subprocess.Popen(run, cwd=ctx.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        if process.poll() is not None:
            check(False, "the run ended before the signal: %s" % (process.communicate(),))
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=60)
        check(process.returncode == code, "expected exit %d after %s, got %d: %s" % (
            code, sig.name, process.returncode, stderr))
        check("cancelled while checking the hold-out folds" in stderr, "no clear message: " + stderr)
        check(leftovers(ctx) == [], "an interrupted cv left %s" % leftovers(ctx))


@case
def duplicates_adding_up_to_inf(ctx):
    """Two Matrix Market lines at one place, each finite, whose sum overflows: every line passed the checks, the
    sum did not. convert wrote the inf into a .dcsr and exited 0, factor refused a nameless 'sum of the entries is
    infinite' (blaming double precision in a float32 run) and info counted no infinite entry beside max inf. Now
    each refuses or counts the place."""
    write_text(ctx.path("dup64.mtx"), "%%MatrixMarket matrix coordinate real general\n3 4 3\n"
                                      "1 2 1.5e308\n1 2 1.5e308\n2 2 1\n")
    write_text(ctx.path("dup32.mtx"), "%%MatrixMarket matrix coordinate real general\n3 4 3\n"
                                      "1 2 3e38\n1 2 3e38\n2 2 1\n")
    place = "duplicate entries at row 1, column 2 (1-based) add up to inf"
    ctx.expect_error(["convert", "dup64.mtx", "o.dcsr"], ["dup64.mtx", place, "float64's range"], out_dir=None,
                     code=3)
    check(not os.path.exists(ctx.path("o.dcsr")), "convert left o.dcsr")
    ctx.expect_error(["convert", "--precision", "f32", "dup32.mtx", "o.dcsr"],
                     ["dup32.mtx", place, "float32's range", "--precision f64"], out_dir=None, code=3)
    for precision, name in (("f64", "dup64.mtx"), ("f32", "dup32.mtx")):
        ctx.expect_error(["factor", name, "--precision", precision, "-k", 1, "-o", "out"], [name, place], code=3)
    ctx.ok("factor", "dup32.mtx", "-k", 1, "--iters", 2, "-q", "-o", "out")  # float64 holds the sum
    j = json.loads(ctx.run("info", "--json", "dup64.mtx").stdout)
    check(j["inf"] == 1 and j["duplicates"] == 1, "info --json dup64.mtx: %r" % j)
    result = ctx.run("info", "dup64.mtx")
    check("1 infinite" in result.stderr, "info dup64.mtx gave no warning: %r" % result.stderr)


@case
def cv_unobserved_rows(ctx):
    """A row with no stored entry under --unstored missing: factor warns of it, dnmf cv said nothing and cv.json
    did not record it."""
    lines = ["%d %d %g" % (i, j, 0.5 + ((i * 7 + j * 3) % 5) / 10.0)
             for i in range(1, 31) if i != 3 for j in range(1, 21) if (i + 2 * j) % 3 == 0]
    write_text(ctx.path("S.mtx"), "%%%%MatrixMarket matrix coordinate real general\n30 20 %d\n%s\n"
               % (len(lines), "\n".join(lines)))
    result = ctx.ok("cv", "S.mtx", "--unstored", "missing", "--k", "1:2", "--folds", 2, "--iters", 20, "-o", "out")
    check("1 rows and 0 columns have no observed entry at all" in result.stderr, "no warning: %r" % result.stderr)
    with open(ctx.path("out", "cv.json")) as f:
        report = json.load(f)
    check((report["unobserved_rows"], report["unobserved_cols"]) == (1, 0), "cv.json: %s" % report)


@case
def nmfk_poisson_of_non_counts(ctx):
    """--perturbation poisson of data that are not counts ran without a word: it warns (stderr, nmfk.json) with
    the number of entries that are not whole numbers; counts get no warning."""
    rows = [[float((i * 5 + j * 3) % 7) for j in range(12)] for i in range(15)]
    write_bytes(ctx.path("C.npy"), npy_bytes(rows))
    rows[2][4] += 0.25
    rows[7][1] += 0.5
    write_bytes(ctx.path("F.npy"), npy_bytes(rows))
    nonzeros = sum(1 for row in rows for v in row if v != 0)
    for name, fractional in (("C.npy", 0), ("F.npy", 2)):
        result = ctx.ok("nmfk", name, "--k", "2:2", "--perturbations", 2, "--perturbation", "poisson", "--iters", 10,
                        "-q", "-o", "out_" + name)
        with open(ctx.path("out_" + name, "nmfk.json")) as f:
            report = json.load(f)
        if fractional:
            needle = "%d of the %d non-zero entries of A are not whole numbers" % (fractional, nonzeros)
            check(needle in result.stderr, "no warning: %r" % result.stderr)
            check(len(report["warnings"]) == 1 and needle in report["warnings"][0], "nmfk.json: %s" % report)
        else:
            check("warning" not in result.stderr and report["warnings"] == [],
                  "counts warned: %r %s" % (result.stderr, report["warnings"]))


@case
def cv_scale_of_the_observed_entries(ctx):
    """dnmf cv judged the scale with the hidden entries counted as zeros: data factor accepts (root mean square
    1.01e-150, above the 1e-150 floor) was refused, and a refusal inside a fold named no file and blamed a mask that
    was never given."""
    def scaled(name, rms):
        rows = [[(1 + (i * 7 + j * 3) % 5) * (1 + (i + 2 * j) % 3) for j in range(20)] for i in range(30)]
        norm = math.sqrt(sum(v * v for row in rows for v in row) / 600.0)
        write_bytes(ctx.path(name), npy_bytes([[v / norm * rms for v in row] for row in rows]))
    scaled("E.npy", 1.01e-150)
    ctx.ok("factor", "E.npy", "-k", 2, "-q", "-o", "f")
    ctx.ok("cv", "E.npy", "--k", "1:2", "--iters", 20, "-q", "-o", "c")
    scaled("T.npy", 1e-160)
    result = ctx.run("cv", "T.npy", "--k", "1:2", "--iters", 20, "-q", "-o", "c2")
    check(result.rc == 3 and "dnmf: error: T.npy: fold 0, k = 1: the matrix's entries are too small" in result.stderr
          and "mask" not in result.stderr, result.describe())
    result = ctx.run("cv", "T.npy", "--k", "31", "-q", "-o", "c3")
    check(result.rc == 2 and "dnmf: error: T.npy: k=31 does not fit" in result.stderr, result.describe())


@case
def budget_beyond_memory(ctx):
    """A --memory-budget larger than the machine's memory (64G typed for 64M) plans within the budget, not the
    machine: said in a warning, the run goes on (it said nothing); a budget the machine has gives none."""
    ctx.gen(60, 40, 3, "A.npy")
    result = ctx.ok("factor", "A.npy", "-k", 3, "--iters", 2, "--memory-budget", "1000T", "-q", "-o", "out")
    check("dnmf: warning: --memory-budget 1000.0 TiB is more than this machine's memory" in result.stderr,
          "no warning: %r" % result.stderr)
    result = ctx.ok("factor", "A.npy", "-k", 3, "--iters", 2, "--memory-budget", "1G", "-q", "-o", "out")
    check("warning" not in result.stderr, "a warning for a budget the machine has: %r" % result.stderr)


@case
def convert_interrupted(ctx):
    """convert has no loop to poll a flag: SIGTERM while it writes removes the temporary it fills, says so in one
    line and exits 143 (the partial OUT.tmp.<pid>.<n> stayed beside the output); the previous .dcsr is as it was.
    A temporary a killed convert left (its process gone) is removed by the next convert; a file size limit is an
    I/O error (exit 4), not SIGXFSZ's death with the temporary in place."""
    import resource
    import signal
    ctx.gen(20000, 2000, 5, "L.mtx", "--density", "0.05")
    ctx.ok("convert", "L.mtx", "X.dcsr")
    with open(ctx.path("X.dcsr"), "rb") as f:
        before = f.read()
    temporaries = lambda: [n for n in os.listdir(ctx.work) if ".tmp." in n]
    interrupted = False
    for _ in range(10):  # the signal must land while the file is written: wait for its temporary
        process = subprocess.Popen([ctx.dnmf, "convert", "L.mtx", "X.dcsr"], cwd=ctx.work, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        while process.poll() is None and not temporaries():
            time.sleep(0.0005)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
        check(temporaries() == [], "left after SIGTERM: %r" % temporaries())
        if process.returncode == 0:
            continue  # finished before the signal
        check(process.returncode == 143, "exit %d: %s" % (process.returncode, stderr))
        check(stderr == "dnmf: error: interrupted; X.dcsr is as it was\n", "stderr: %r" % stderr)
        interrupted = True
        break
    check(interrupted, "no SIGTERM landed while the file was written in 10 tries")
    with open(ctx.path("X.dcsr"), "rb") as f:
        check(f.read() == before, "the previous X.dcsr changed")
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_bytes(ctx.path("X.dcsr.tmp.%d.0" % gone.pid), b"partial")
    ctx.ok("convert", "L.mtx", "X.dcsr")
    check(temporaries() == [], "a dead process's temporary was kept: %r" % temporaries())
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100 * 1024, 100 * 1024))
    result = ctx.run("convert", "L.mtx", "Y.dcsr", preexec_fn=limit)
    check(result.rc == 4 and "Y.dcsr: cannot write: File too large" in result.stderr, result.describe())
    check(temporaries() == [] and not os.path.exists(ctx.path("Y.dcsr")), "left: %r" % os.listdir(ctx.work))


@case
def special_files(ctx):
    # Inputs that are not regular files are refused at once, naming the file; a FIFO with no writer must not
    # block (the timeout would fail the case).
    os.mkfifo(ctx.path("fifo.npy"))
    ctx.expect_error(["info", "fifo.npy"], ["fifo.npy", "FIFO"], out_dir=None, code=4, timeout=20)
    ctx.expect_error(["factor", "fifo.npy", "-k", 2, "-o", "out"], ["fifo.npy", "FIFO"], code=4, timeout=20)
    os.mkfifo(ctx.path("fifo.mtx"))
    ctx.expect_error(["info", "fifo.mtx"], ["fifo.mtx", "FIFO"], out_dir=None, code=4, timeout=20)
    os.makedirs(ctx.path("dir.npy"))
    ctx.expect_error(["info", "dir.npy"], ["dir.npy", "directory"], out_dir=None, code=4, timeout=20)
    os.symlink("/dev/zero", ctx.path("zero.npy"))
    ctx.expect_error(["factor", "zero.npy", "-k", 2, "-o", "out"], ["zero.npy", "character device"], code=4,
                     timeout=20)


def fortran_npy(path, rows, cols):
    """A Fortran-order f8 .npy of positive values (streamed runs lend its column stripes from a mapping)."""
    import array
    header_text = "{'descr': '<f8', 'fortran_order': True, 'shape': (%d, %d), }" % (rows, cols)
    unpadded = len(NPY_MAGIC) + 2 + 2 + len(header_text) + 1
    header = header_text + " " * ((64 - unpadded % 64) % 64) + "\n"
    column = array.array("d", [1.0 + (i * 7919 % 101) / 50.0 for i in range(rows)])
    with open(path, "wb") as f:
        f.write(NPY_MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        for j in range(cols):
            f.write(column[j % 97:] + column[:j % 97])


@case
def numeric_edges(ctx):
    # Finite f64 values that float32 cannot hold, values that underflow to zero, and --threads far beyond the
    # cores: each gets a message that says what happened and what to do.
    write_bytes(ctx.path("big.npy"), npy_bytes(matrix_with(1e100, (3, 2))))
    ctx.expect_error(["factor", "big.npy", "-k", 2, "--precision", "f32", "-o", "out"],
                     ["big.npy: entry at row 3, column 2 (0-based)", "too large for single precision",
                      "use --precision f64, or rescale"], code=3)
    ctx.ok("factor", "big.npy", "-k", 2, "--precision", "f64", "--iters", 5, "-q", "-o", "out")
    write_bytes(ctx.path("tiny.npy"), npy_bytes(matrix_with(1e-50, (1, 3))))
    ctx.expect_error(["factor", "tiny.npy", "-k", 2, "--precision", "f32", "-o", "out2"],
                     ["tiny.npy: entry at row 1, column 3 (0-based)", "underflows to zero in float32",
                      "use --precision f64"], out_dir="out2", code=3)
    # The same through .dcsr's conversion.
    ctx.ok("convert", "big.npy", "big.dcsr")
    ctx.expect_error(["factor", "big.dcsr", "-k", 2, "--precision", "f32", "-o", "out2"],
                     ["big.dcsr: entry at row 3, column 2", "too large for single precision"], out_dir="out2", code=3)
    # Matrix Market text: underflow even in double precision, overflow of float32.
    write_text(ctx.path("tiny.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e-400\n2 2 1\n")
    ctx.expect_error(["factor", "tiny.mtx", "-k", 1, "-o", "out2"],
                     ["tiny.mtx:3", "underflows to zero in double precision", "rescale"], out_dir="out2", code=3)
    write_text(ctx.path("big.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e100\n2 2 1\n")
    ctx.expect_error(["factor", "big.mtx", "-k", 1, "--precision", "f32", "-o", "out2"],
                     ["big.mtx:3", "too large for single precision", "--precision f64"], out_dir="out2", code=3)
    result = ctx.ok("factor", "big.npy", "-k", 2, "--threads", 4096, "--iters", 2, "-q", "-o", "out3")
    check("dnmf: warning: --threads 4096 is far more than the" in result.stderr,
          "no --threads warning: " + result.stderr)
    result = ctx.ok("factor", "big.npy", "-k", 2, "--threads", 1, "--iters", 2, "-q", "-o", "out4")
    check("warning" not in result.stderr, "a warning for --threads 1: " + result.stderr)
    # Beyond what a process can run (libgomp crashed at 100000 threads, exit 139): a usage error, from the option
    # or from OMP_NUM_THREADS, for factor and nmfk.
    too_many = ["more than dnmf runs in one process (at most 4096)"]
    # (expect_error asks for the error line alone: no "far more than the cores" warning before it.)
    ctx.expect_error(["factor", "big.npy", "-k", 2, "--threads", 100000, "-o", "out5"], ["--threads 100000"] + too_many,
                     out_dir="out5", code=2)
    ctx.expect_error(["factor", "big.npy", "-k", 2, "-o", "out5"], ["OMP_NUM_THREADS) 100000"] + too_many,
                     out_dir="out5", code=2, env={"OMP_NUM_THREADS": "100000"})
    ctx.expect_error(["nmfk", "big.npy", "--k", 2, "--perturbations", 2, "--threads", 5000, "-o", "out5"],
                     ["--threads 5000"] + too_many, out_dir="out5", code=2)
    # inf is >= 0: "noise must be >= 0" did not say what was wrong with it.
    for noise in ("inf", "nan"):
        result = ctx.run("gen", "--rows", 10, "--cols", 5, "--rank", 2, "--noise", noise, "-o", "noisy.npy")
        check(result.rc == 2 and "noise must be a finite number >= 0, got " in result.stderr, result.describe())


@case
def names_with_line_breaks(ctx):
    """A file name holding a newline (a legal name) split warnings and summary lines in two, and could print a line
    that read as dnmf's own error in a successful run (a helper session's finding)."""
    name = "x\ndnmf: error: forged.npy"
    write_bytes(ctx.path(name), npy_bytes([[1.0, -2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]))
    result = ctx.run("info", name)
    check(result.rc == 0, result.describe())
    check(not any(line.startswith("dnmf: error:") for line in result.stderr.splitlines()), result.describe())
    check("dnmf: warning: x dnmf: error: forged.npy: 1 negative" in result.stderr, result.describe())
    check("file      x dnmf: error: forged.npy" in result.stdout, result.describe())
    small_dense(ctx)
    out = "o\nk=99 fake"
    result = ctx.ok("factor", "A.npy", "-k", 2, "--iters", 3, "-o", out)
    summary = [line for line in result.stdout.splitlines() if line.startswith("k=")]
    check(len(summary) == 1 and summary[0].endswith("-> o k=99 fake"), result.describe())
    check(os.path.isfile(ctx.path(out, "W.npy")), "the output folder is the one named")


@case
def output_path_too_long(ctx):
    """An -o path within the kernel's 4095 bytes but too long for what dnmf writes inside it failed after the run,
    naming the staging folder and blaming a 5-byte name (a helper session's finding). Refused before any work."""
    small_dense(ctx)
    base = os.path.abspath(ctx.work)
    parts, length = [], len(base)
    while length < 3980:
        part = "d" * min(200, 3980 - length)
        parts.append(part)
        length += len(part) + 1
    deep = os.path.join(ctx.work, *parts)
    os.makedirs(deep)
    out = os.path.join(deep, "out")
    ctx.expect_error(["factor", "A.npy", "-k", 2, "--iters", 2, "-o", out],
                     ["the output folder's path is", "bytes a path may have: choose a shorter path"], out_dir=None,
                     code=2)
    check(os.listdir(deep) == [], "files left in %s: %s" % (deep[-40:], os.listdir(deep)))


@case
def decimal_integers(ctx):
    # CLI11 reads whole numbers with base 0: `-k 010` ran k = 8, `--seed 010` the stream of seed 8 (a zero-padded
    # value from `seq -w` ran another rank or seed with exit 0), `08` failed as "Could not convert" and `0x3` ran 3.
    small_dense(ctx)
    ctx.ok("factor", "A.npy", "-k", "010", "--seed", "010", "--iters", "0050", "--threads", "01", "-q", "-o", "pad")
    report = ctx.report("pad")
    check(report["k"] == 10 and report["seed"] == 10 and report["iterations"] == 50, "padded values: %r" % report)
    check(Npy(ctx.path("pad/W.npy")).shape == (20, 10), "W's shape with -k 010")
    ctx.ok("factor", "A.npy", "-k", "08", "--seed", "09", "--iters", 5, "-q", "-o", "eight")
    check(ctx.report("eight")["k"] == 8 and ctx.report("eight")["seed"] == 9, "08 / 09 not read as 8 / 9")
    for flag, value in (("-k", "0x3"), ("-k", "2.5"), ("--iters", "1e3"), ("--seed", "0x10")):
        args = ["factor", "A.npy", "-o", "bad", flag, value] + (["-k", 3] if flag != "-k" else [])
        ctx.expect_error(args, ["must be a whole decimal number, got '%s'" % value], out_dir="bad", code=2)
    # CLI11 clamped what does not fit a 64-bit integer: -k 99999999999999999999 ran as k = 9223372036854775807.
    for value in ("99999999999999999999", "-99999999999999999999", "9223372036854775808"):
        ctx.expect_error(["factor", "A.npy", "-o", "bad", "-k", value],
                         ["must be at most 9223372036854775807 in magnitude, got '%s'" % value], out_dir="bad", code=2)
    ctx.ok("factor", "A.npy", "-k", 2, "--iters", 1, "--seed", "18446744073709551615", "-q", "-o", "top_seed")
    check(ctx.report("top_seed")["seed"] == 18446744073709551615, "a seed above 2^63 is a seed")
    result = ctx.run("gen", "--rows", "010", "--cols", "06", "--rank", "02", "-o", "g.npy")
    check(result.rc == 0 and Npy(ctx.path("g.npy")).shape == (10, 6), result.describe())
    ctx.ok("cv", "A.npy", "--k", 2, "--folds", "010", "--iters", 5, "-q", "-o", "cv")
    with open(ctx.path("cv/cv.json")) as f:
        check(json.load(f)["folds"] == 10, "cv --folds 010")


@case
def convert_precision_applies_to_dcsr(ctx):
    # `convert X.dcsr OUT.mtx --precision f32` rounded the values written (0.3 -> 0.300000012) with a summary that
    # did not say so; --precision is the value type of a .dcsr output.
    write_bytes(ctx.path("w.npy"), npy_bytes([[0.1, 0.2], [0.3, 1.0]]))
    result = ctx.ok("convert", "w.npy", "w.dcsr")
    check("(values f64)" in result.stdout, result.describe())
    result = ctx.ok("convert", "w.dcsr", "w32.dcsr", "--precision", "f32")
    check("(values f32)" in result.stdout, "dcsr -> dcsr summary: " + result.describe())
    result = ctx.run("convert", "w.dcsr", "w32.mtx", "--precision", "f32")
    check(result.rc == 2 and "--precision f32: it sets the value type of a .dcsr output" in result.stderr
          and not os.path.exists(ctx.path("w32.mtx")), result.describe())
    ctx.ok("convert", "w.dcsr", "w.mtx")
    with open(ctx.path("w.mtx")) as f:
        values = sorted(float(line.split()[2]) for line in f.read().splitlines()[2:])
    check(values == [0.1, 0.2, 0.3, 1.0], "values written: %r" % values)


@case
def runs_beside_each_other(ctx):
    """A helper session's concurrency findings: dnmf factor into the folder of a running nmfk replaced it and
    deleted its checkpoints (the nmfk then failed); a relative -o after the working directory was deleted was
    "filesystem error: cannot make absolute path" (exit 1); nmfk -o a dangling link failed creating
    lnk/checkpoints and -o sub/../x left an empty sub/; a neighbour named like convert's temporaries but with a
    20-digit number ended convert with "stoll" (exit 1)."""
    import signal
    import time

    ctx.gen(300, 200, 5, "B.npy", "--noise", 0.02)
    small_dense(ctx)
    nmfk = subprocess.Popen([ctx.dnmf, "nmfk", "B.npy", "--k", "3:8", "--perturbations", "20", "--iters", "100000",
                             "--tol", "0", "--threads", "1", "-q", "-o", "nb"], cwd=ctx.work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if os.path.exists(ctx.path("nb", "checkpoints", "lock")):
                break
            time.sleep(0.05)
        check(os.path.exists(ctx.path("nb", "checkpoints", "lock")), "the nmfk never took its lock")
        for command in (["factor", "A.npy", "-k", 2], ["cv", "A.npy", "--k", 2]):
            ctx.expect_error(command + ["-q", "-o", "nb"], ["nb: holds the checkpoints of an NMFk run in progress"],
                             out_dir=None, code=2)
        check(os.path.isdir(ctx.path("nb", "checkpoints")) and nmfk.poll() is None,
              "the running nmfk's checkpoints were touched")
    finally:
        nmfk.send_signal(signal.SIGTERM)
        nmfk.wait(timeout=120)
    ctx.ok("factor", "A.npy", "-k", 2, "-q", "-o", "nb")  # once it has ended, the set may be replaced

    os.mkdir(ctx.path("gone"))
    result = subprocess.run([ctx.dnmf, "factor", ctx.path("A.npy"), "-k", "2", "-q", "-o", "out"],
                            cwd=ctx.path("gone"), capture_output=True, text=True,
                            preexec_fn=lambda: os.rmdir(ctx.path("gone")))
    check(result.returncode == 4 and "the working directory no longer exists" in result.stderr,
          "deleted working directory: rc %d, %s" % (result.returncode, result.stderr))

    os.symlink("made_by_nmfk", ctx.path("lnk"))
    ctx.ok("nmfk", "A.npy", "--k", "2:3", "--perturbations", 2, "--iters", 20, "-q", "-o", "lnk")
    check(os.path.isfile(ctx.path("made_by_nmfk", "nmfk.json")), "nmfk -o a dangling link")
    ctx.ok("nmfk", "A.npy", "--k", "2:3", "--perturbations", 2, "--iters", 20, "-q", "-o", "sub/../nq")
    check(os.path.isfile(ctx.path("nq", "nmfk.json")) and not os.path.exists(ctx.path("sub")),
          "nmfk -o sub/../nq left sub/ behind")
    # A link followed by "..": the results went beside the link's target, the checkpoints to ./res.
    os.makedirs(ctx.path("far", "d"))
    os.symlink(os.path.join("far", "d"), ctx.path("to_d"))
    ctx.ok("nmfk", "A.npy", "--k", "2:3", "--perturbations", 2, "--iters", 20, "-q", "-o", "to_d/../res")
    check(os.path.isdir(ctx.path("far", "res", "checkpoints")) and not os.path.exists(ctx.path("res")),
          "nmfk -o to_d/../res: checkpoints away from the results: %s" % os.listdir(ctx.work))

    write_bytes(ctx.path("X.dcsr.tmp.99999999999999999999.1"), b"")
    ctx.ok("convert", "A.npy", "X.dcsr")
    check(os.path.exists(ctx.path("X.dcsr.tmp.99999999999999999999.1")), "a file not ours was removed")


@case
def gen_leaves_no_temporaries(ctx):
    """A gen ended by SIGTERM left its staged set (.G.npy.gen.<pid>, ...) and the temporary being written, and a
    later gen left them in place; SIGKILL's leftovers too (a helper session's finding)."""
    import signal
    import time

    dead = subprocess.Popen(["true"])
    dead.wait()
    for name in (".G.npy.gen.%d" % dead.pid, ".G.W.npy.gen.%d" % dead.pid,
                 ".G.npy.gen.%d.tmp.%d.0" % (dead.pid, dead.pid), ".G.npy.gen.notapid"):
        write_bytes(ctx.path(name), b"x")
    ctx.gen(30, 20, 2, "G.npy")
    left = sorted(n for n in os.listdir(ctx.work) if n.startswith(".G"))
    check(left == [".G.npy.gen.notapid"], "after gen: %s" % left)
    gen = subprocess.Popen([ctx.dnmf, "gen", "--rows", "6000", "--cols", "5000", "--rank", "10", "-o", "G.npy"],
                           cwd=ctx.work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    gen.send_signal(signal.SIGTERM)
    _, err = gen.communicate(timeout=120)
    if gen.returncode == 143:  # (a fast machine may have finished first)
        check("interrupted; G.npy is as it was" in err, err)
        left = sorted(n for n in os.listdir(ctx.work) if n.startswith(".G") and "notapid" not in n)
        check(left == [], "after SIGTERM: %s" % left)
        check(Npy(ctx.path("G.npy")).shape == (30, 20), "the previous G.npy was replaced")


@case
def float_scale_edges(ctx):
    # Entries float32 holds but whose products it may not: KL's final error was computed after normalising, where
    # H's rows carry all the scale and HHᵀ overflowed float (a finite fit reported rel_error inf with exit 0);
    # BPP's overflowed products ended as an internal error (exit 1) where the other solvers report a numerical
    # breakdown (exit 5).
    def scaled(scale):
        return [[scale * (1 + (i * 7919 + j * 104729) % 997) / 997.0 for j in range(20)] for i in range(30)]
    write_bytes(ctx.path("e18.npy"), npy_bytes(scaled(1e18)))
    errors = {}
    for precision in ("f32", "f64"):
        out = "kl_" + precision
        ctx.ok("factor", "e18.npy", "-k", 4, "--algo", "kl", "--precision", precision, "--threads", 1, "--iters", 30,
               "-q", "-o", out)
        errors[precision] = ctx.report(out)["rel_error"]
    check(errors["f64"] is not None and 0 < errors["f64"] < 1, "f64 KL error %r" % errors["f64"])
    check(errors["f32"] is not None and abs(errors["f32"] - errors["f64"]) < 1e-3,
          "f32 KL error %r against f64's %r" % (errors["f32"], errors["f64"]))
    # Data whose products overflow float32 (1e30) is refused before any iteration, with the remedy (exit 3; it
    # was a breakdown, exit 5, and at 1e38 zero factors "converged").
    write_bytes(ctx.path("e30.npy"), npy_bytes(scaled(1e30)))
    ctx.expect_error(["factor", "e30.npy", "-k", 4, "--algo", "bpp", "--precision", "f32", "--threads", 1, "-o", "b"],
                     ["e30.npy", "too large for float32", "--precision f64"], out_dir="b", code=3)
    # A hold-out fraction that hides every observed entry is the option's fault (exit 2), not the data's.
    ctx.gen(60, 40, 3, "C.npy")
    ctx.expect_error(["cv", "C.npy", "--k", "2:4", "--holdout", 0.9999, "--folds", 1, "--threads", 1, "-o", "cv"],
                     ["C.npy", "hides every one of the 2400 observed entries"], out_dir="cv", code=2)


@case
def truncated_during_run(ctx):
    # A streamed run whose input shrinks under it: a mapped .npy (SIGBUS caught), a .npy read by pread (an f8
    # file computed in f32 is converted on the way) and a .dcsr. Each must end with exit 4 and a message naming
    # the file, never a crash.
    import time
    fortran_npy(ctx.path("F.npy"), 4000, 1500)
    fortran_npy(ctx.path("G.npy"), 4000, 1500)
    ctx.gen(3000, 2000, 8, "C.npy")
    ctx.ok("convert", "C.npy", "C.dcsr")
    for name, precision, access in (("F.npy", "f64", "mapped"), ("G.npy", "f32", "pread"), ("C.dcsr", "f64", "pread")):
        # A budget just above the minimum (a sanitizer build's baseline is larger than a release build's).
        budget = "40M"
        probe = ctx.run("factor", name, "-k", 4, "--precision", precision, "--iters", 1, "-q", "--memory-budget",
                        budget, "-o", "plan")
        needed = re.search(r"needs at least (\d+) bytes", probe.stderr)
        if probe.rc != 0 and needed:
            budget = str(int(needed.group(1)) + (4 << 20))
        common = ["factor", name, "-k", 4, "--precision", precision, "--tol", 0, "--memory-budget", budget]
        args = common + ["--iters", 100000, "-o", "out"]
        # The plan: streamed, and the mapped file really mapped (else the case would not test SIGBUS).
        if os.path.exists(ctx.path("plan")):
            shutil.rmtree(ctx.path("plan"))
        ctx.ok(*common, "--iters", 1, "-q", "-o", "plan")
        memory = ctx.report("plan")["memory"]
        check(memory["mode"] == "streamed" and memory["stream"]["access"] == access, "%s: plan %s" % (name, memory))
        shutil.rmtree(ctx.path("plan"))
        process = subprocess.Popen([ctx.dnmf] + [str(a) for a in args], cwd=ctx.work, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        process.stderr.readline()  # the first progress line: the solver is iterating
        time.sleep(0.3)
        os.truncate(ctx.path(name), os.path.getsize(ctx.path(name)) // 3)
        stdout, stderr = process.communicate(timeout=120)
        check(process.returncode == 4, "%s: expected exit 4 (I/O), got %d: %s" % (name, process.returncode, stderr))
        check("dnmf: error: %s: the file shrank while it was being read" % name in stderr,
              "no clear message: " + stderr)
        check(leftovers(ctx) == [] and not os.path.exists(ctx.path("out")), "a failed run left files behind")


# ------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dnmf", help="path of the dnmf executable")
    parser.add_argument("--work", help="scratch directory (emptied first)")
    parser.add_argument("--registered", help="comma-separated cases CMake registered: check none is missing")
    parser.add_argument("case", nargs="?", choices=sorted(CASES))
    args = parser.parse_args()

    if args.registered is not None:
        registered = set(filter(None, args.registered.split(",")))
        missing, unknown = sorted(set(CASES) - registered), sorted(registered - set(CASES))
        if missing or unknown:
            print("not registered in CMakeLists.txt: %s; registered but unknown: %s" % (missing, unknown))
            return 1
        return 0
    if not (args.dnmf and args.work and args.case):
        parser.error("--dnmf, --work and a case are required")

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        CASES[args.case](Context(os.path.abspath(args.dnmf), args.work))
    except Failure as failure:
        print("FAIL %s: %s" % (args.case, failure))
        return 1
    except Exception:  # a missing or unparsable output file is a failure of dnmf, not of this script
        traceback.print_exc(file=sys.stdout)
        print("FAIL %s: unexpected exception (see above)" % args.case)
        return 1
    print("PASS %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
