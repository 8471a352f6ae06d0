#!/usr/bin/env python3
"""End-to-end tests of `dnmf nmfk`.

Run one case:   nmfk_cli_test.py --dnmf path/to/dnmf --work scratch/dir CASE
MPI case:       nmfk_cli_test.py --dnmf ... --work ... --mpirun "mpirun --oversubscribe -np" groups_equal_one_process
Check wiring:   nmfk_cli_test.py --registered case1,case2,...

Standard library only. Matrices come from `dnmf gen` (planted rank, so the right answer is known).
"""

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

CASES = {}


def case(function):
    CASES[function.__name__] = function
    return function


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Context:
    def __init__(self, dnmf, work, mpirun):
        self.dnmf = dnmf
        self.work = work
        self.mpirun = mpirun

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, args, env=None, expect=0, launcher=None):
        cmd = (launcher or []) + [self.dnmf] + [str(a) for a in args]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if expect is not None and r.returncode != expect:
            raise Failure("%s: exit %d (expected %d)\nstdout: %s\nstderr: %s" % (
                " ".join(cmd), r.returncode, expect, r.stdout, r.stderr))
        return r

    def gen(self, name, rows=120, cols=90, rank=4, noise=0.02, seed=1, density=None):
        args = ["gen", "--rows", rows, "--cols", cols, "--rank", rank, "--noise", noise, "--seed", seed,
                "-o", self.path(name)]
        if density is not None:
            args += ["--density", density]
        self.run(args)
        return self.path(name)


def npy_shape(path):
    with open(path, "rb") as f:
        raw = f.read(512)
    check(raw[:6] == b"\x93NUMPY", "%s: not a .npy file" % path)
    length = int.from_bytes(raw[8:10], "little")
    header = ast.literal_eval(raw[10:10 + length].decode("latin1"))
    return tuple(header["shape"])


def load(path):
    with open(path) as f:
        return json.load(f)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("dnmf: error:")]


# ------------------------------------------------------------------------------------------------
# Cases


@case
def outputs(ctx):
    """The must-have outputs: nmfk.json fields, nmfk.csv, per-k W/H/column errors, the plot."""
    a = ctx.gen("A.npy", rank=4, seed=2)
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "2:6", "--perturbations", 6, "-o", out])
    check("selected k=4" in r.stdout, "stdout names the selected k: %r" % r.stdout)
    check("nmfk: k=" in r.stderr, "progress lines on stderr without --quiet")
    j = load(os.path.join(out, "nmfk.json"))
    s = j["selection"]
    check(s["selected_k"] == 4 and s["passed"] is True, "selected_k: %r" % s)
    check(s["decided_by"] == "silhouette" and s["silhouette_rule_k"] == 4, "rule fields: %r" % s)
    check(s["wilcoxon_rule_k"] == 4 and len(s["wilcoxon_steps"]) >= 1, "Wilcoxon rule reported: %r" % s)
    check([e["k"] for e in j["per_k"]] == [2, 3, 4, 5, 6], "one entry per k")
    for e in j["per_k"]:
        for key in ("silhouettes", "min_silhouette", "mean_silhouette", "rel_error", "perturbation_errors",
                    "seconds", "accepted", "cluster_iterations"):
            check(key in e, "per_k entry lacks %s" % key)
        check(len(e["silhouettes"]) == e["k"], "one silhouette per cluster")
        check(abs(min(e["silhouettes"]) - e["min_silhouette"]) < 1e-12, "minimum is the minimum")
        check(len(e["perturbation_errors"]) == 6, "one error per perturbation")
        k = e["k"]
        check(npy_shape(os.path.join(out, "k_%d" % k, "W.npy")) == (120, k), "W.npy shape")
        check(npy_shape(os.path.join(out, "k_%d" % k, "H.npy")) == (k, 90), "H.npy shape")
        check(npy_shape(os.path.join(out, "k_%d" % k, "column_errors.npy")) == (90, 1), "column errors shape")
    check(j["jobs"] == {"total": 30, "run": 30, "from_checkpoints": 0}, "jobs: %r" % j["jobs"])
    with open(os.path.join(out, "nmfk.csv")) as f:
        lines = f.read().splitlines()
    check(lines[0].startswith("k,min_silhouette,mean_silhouette,rel_error"), "csv header: %r" % lines[0])
    check(len(lines) == 6 and lines[3].startswith("4,"), "csv rows")
    if shutil.which("gnuplot"):
        for name in ("nmfk.svg", "nmfk.png"):
            check(os.path.getsize(os.path.join(out, name)) > 1000, "%s drawn" % name)
        with open(os.path.join(out, "nmfk.svg")) as f:
            check("selected k = 4" in f.read(), "the plot marks the selected k")
        with open(os.path.join(out, "nmfk.png"), "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", "png signature")
        check("plot: " in r.stdout and "nmfk.svg" in r.stdout, "stdout names the plot")
        check(j["plot"]["svg"] == "nmfk.svg" and j["plot"]["warning"] == "", "plot fields: %r" % j["plot"])


@case
def without_gnuplot(ctx):
    """No gnuplot: a warning naming what is missing, everything else still written, exit 0."""
    a = ctx.gen("A.npy", rank=3, seed=3)
    out = ctx.path("out")
    env = dict(os.environ, PATH="/nonexistent")
    r = ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 4, "--quiet", "-o", out], env=env)
    check("dnmf: warning: gnuplot was not found" in r.stderr, "warning: %r" % r.stderr)
    check("gnuplot-nox" in r.stderr, "the warning says what to install")
    for name in ("nmfk.json", "nmfk.csv", "nmfk.gp", "k_3/W.npy"):
        check(os.path.exists(os.path.join(out, name)), "%s still written" % name)
    check(not os.path.exists(os.path.join(out, "nmfk.svg")), "no svg")
    j = load(os.path.join(out, "nmfk.json"))
    check(j["plot"]["svg"] is None and "gnuplot" in j["plot"]["warning"], "plot fields: %r" % j["plot"])
    # The folder to run gnuplot in is the output folder, not the staging one it was written in (gone by now).
    folder = os.path.abspath(out)
    for where, text in (("stderr", r.stderr), ("nmfk.json", j["plot"]["warning"])):
        check(text.rstrip().endswith("in %s)" % folder) and ".tmp." not in text, "%s names %s: %r" % (where, folder, text))
    check(j["selection"]["selected_k"] == 3, "selection still made")


@case
def hanging_gnuplot(ctx):
    """A gnuplot that never finishes is stopped after DNMF_GNUPLOT_SECONDS (60 by default): the run ends with its
    results and a warning saying so, instead of waiting forever."""
    a = ctx.gen("A.npy", rank=3, seed=3)
    fake = ctx.path("fakebin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "gnuplot"), "w") as f:
        f.write("#!/bin/sh\nexec sleep 600\n")
    os.chmod(os.path.join(fake, "gnuplot"), 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""), DNMF_GNUPLOT_SECONDS="2")
    out = ctx.path("out")
    start = time.monotonic()
    r = ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", out], env=env)
    check(time.monotonic() - start < 60, "the run waited for gnuplot")
    check("did not finish within 2 s and was stopped" in r.stderr, "warning: %r" % r.stderr)
    j = load(os.path.join(out, "nmfk.json"))
    check(j["plot"]["svg"] is None and "was stopped" in j["plot"]["warning"], "plot fields: %r" % j["plot"])
    check(j["selection"]["selected_k"] == 3, "selection still made")
    # A gnuplot that is a wrapper: killing the wrapper alone left its child running (re-parented to init).
    marker = "37.%d" % os.getpid()
    with open(os.path.join(fake, "gnuplot"), "w") as f:
        f.write("#!/bin/sh\nsleep %s\n" % marker)
    ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", ctx.path("out2")], env=env)
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", "sleep " + marker], capture_output=True, text=True).stdout.split()
    for pid in left:
        os.kill(int(pid), 9)
    check(left == [], "the wrapper's child outlived the timeout: %r" % left)


@case
def gnuplot_interrupted(ctx):
    """SIGINT while gnuplot draws: the run stops at once (exit 130, nothing committed) and gnuplot's group is
    stopped. The first signal had been ignored until gnuplot finished (up to 60 s), and a second left it running."""
    a = ctx.gen("A.npy", rank=3, seed=3)
    fake = ctx.path("fakebin")
    os.makedirs(fake, exist_ok=True)
    started = ctx.path("gnuplot_started")
    marker = "41.%d" % os.getpid()
    with open(os.path.join(fake, "gnuplot"), "w") as f:
        f.write("#!/bin/sh\ntouch '%s'\nsleep %s\n" % (started, marker))
    os.chmod(os.path.join(fake, "gnuplot"), 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""))
    out = ctx.path("out")
    process = subprocess.Popen([ctx.dnmf, "nmfk", a, "--k", "2:4", "--perturbations", "3", "--quiet", "-o", out],
                               cwd=ctx.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(started) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    check(os.path.exists(started), "gnuplot never started")
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    waited = time.monotonic() - sent
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", "sleep " + marker], capture_output=True, text=True).stdout.split()
    for pid in left:
        os.kill(int(pid), 9)
    check(process.returncode == 130 and "interrupted" in stderr, "exit %d: %r" % (process.returncode, stderr))
    check(waited < 10, "the run waited %.1f s for gnuplot after SIGINT" % waited)
    check(left == [], "gnuplot's child outlived the interrupted run: %r" % left)
    check(not os.path.exists(os.path.join(out, "nmfk.json")), "an interrupted run committed its results")


@case
def near_exact_errors(ctx):
    """An exact rank-3 matrix fitted at k = 3: the regression's relative error is the fit's (about 1e-12), not the
    Gram identity's rounding floor (~1e-8, at which --err-threshold 1e-9 passed no k)."""
    a = ctx.gen("A.npy", rows=120, cols=90, rank=3, noise=0, seed=3)
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "2:4", "--epsilon", 0, "--perturbations", 3, "--tol", 0, "--iters", 3000,
                 "--err-threshold", "1e-9", "--quiet", "-o", out])
    check(r.returncode == 0, "nmfk failed: %r" % r.stderr)
    j = load(os.path.join(out, "nmfk.json"))
    errors = {row["k"]: row["rel_error"] for row in j["per_k"]}
    check(errors[3] < 1e-10, "k = 3 of an exact rank-3 matrix: rel_error %r" % errors[3])
    check(j["selection"]["selected_k"] == 3, "selection: %r" % j["selection"])


@case
def failing_gnuplot(ctx):
    """A gnuplot that fails half way (a full disk: it wrote part of nmfk.png, then stopped) leaves no image and no
    log in the results, only the warning and nmfk.gp (a truncated nmfk.png and nmfk.gp.log were kept)."""
    a = ctx.gen("A.npy", rank=3, seed=3)
    fake = ctx.path("fakebin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "gnuplot"), "w") as f:
        # Called as: gnuplot -e "cd '<dir>'" <dir>/nmfk.gp
        f.write("#!/bin/sh\ncd \"$(dirname \"$3\")\" || exit 2\nprintf '<svg' > nmfk.svg\nprintf 'PNG' > nmfk.png\n"
                "echo 'write error: File too large' >&2\nexit 1\n")
    os.chmod(os.path.join(fake, "gnuplot"), 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""))
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", out], env=env)
    check("failed to draw the plot: write error: File too large" in r.stderr, "warning: %r" % r.stderr)
    check("were not kept" in r.stderr, "warning: %r" % r.stderr)
    left = sorted(os.listdir(out))
    check(not any(n in left for n in ("nmfk.svg", "nmfk.png", "nmfk.gp.log")), "left in the results: %r" % left)
    check("nmfk.gp" in left, "the script is kept: %r" % left)
    j = load(os.path.join(out, "nmfk.json"))
    check(j["plot"]["svg"] is None and j["plot"]["png"] is None, "plot fields: %r" % j["plot"])


@case
def sparse_wilcoxon_h(ctx):
    """Matrix Market input, the Wilcoxon rule deciding, H silhouettes, float precision."""
    a = ctx.gen("S.mtx", rows=150, cols=100, rank=5, density=0.4, noise=0.03, seed=4)
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "3:7", "--perturbations", 6, "--rule", "wilcoxon", "--h-silhouettes",
                 "--precision", "f32", "--quiet", "-o", out])
    j = load(os.path.join(out, "nmfk.json"))
    s = j["selection"]
    check(s["decided_by"] == "wilcoxon" and s["selected_k"] == 5, "selection: %r" % s)
    check("decided by the wilcoxon rule" in r.stdout, "stdout: %r" % r.stdout)
    e = [x for x in j["per_k"] if x["k"] == 5][0]
    check(len(e["h_silhouettes"]) == 5 and e["h_min_silhouette"] > 0.5, "H silhouettes: %r" % e.get("h_silhouettes"))
    check(j["input"]["format"] == "mtx" and j["options"]["precision"] == "f32", "input/options recorded")
    with open(os.path.join(out, "nmfk.csv")) as f:
        check("h_min_silhouette" in f.readline(), "csv has the H columns")


@case
def no_k_passes(ctx):
    """Nothing qualifies: said so, best candidate named, outputs written, exit 0."""
    a = ctx.gen("A.npy", rank=3, seed=5)
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 4, "--err-threshold", "1e-9", "--quiet", "-o", out])
    check("no k passed" in r.stdout and "best candidate k=" in r.stdout, "stdout: %r" % r.stdout)
    j = load(os.path.join(out, "nmfk.json"))
    check(j["selection"]["selected_k"] is None and j["selection"]["passed"] is False, "selection: %r" % j["selection"])
    check(j["selection"]["best_candidate"] in (2, 3, 4), "best candidate")
    check(os.path.exists(os.path.join(out, "nmfk.csv")), "csv written")


@case
def kill_and_resume(ctx):
    """A sweep killed midway loses at most the jobs in flight; the rerun resumes and matches an uninterrupted run."""
    a = ctx.gen("A.npy", rows=200, cols=150, rank=5, noise=0.02, seed=6)
    args = ["nmfk", a, "--k", "2:9", "--perturbations", 10, "--quiet"]
    out = ctx.path("killed")
    checkpoints = os.path.join(out, "checkpoints")
    proc = subprocess.Popen([ctx.dnmf] + [str(x) for x in args] + ["-o", out], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    done_at_kill = []
    while time.time() < deadline and proc.poll() is None:
        if os.path.isdir(checkpoints):
            done_at_kill = [f for f in os.listdir(checkpoints) if f.endswith(".job")]
            if len(done_at_kill) >= 2:
                break
        time.sleep(0.005)
    check(proc.poll() is None, "the sweep finished before it could be killed; make it longer")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_after_kill = [f for f in os.listdir(checkpoints) if f.endswith(".job")]
    check(len(done_after_kill) >= 2 and len(done_after_kill) < 80, "killed midway: %d jobs" % len(done_after_kill))
    check(not os.path.exists(os.path.join(out, "nmfk.json")), "no nmfk.json from the killed run")

    r = ctx.run(args + ["-o", out])
    said = re.search(r"resuming from .*: (\d+) of 80 jobs already finished", r.stderr)
    check(said, "the rerun says it resumed: %r" % r.stderr)
    resumed = int(said.group(1))
    check(resumed >= len(done_at_kill), "resumed %d jobs, %d were done at the kill" % (resumed, len(done_at_kill)))
    check(resumed == len(done_after_kill), "every finished job file was reused")
    j = load(os.path.join(out, "nmfk.json"))
    check(j["jobs"]["from_checkpoints"] == resumed and j["jobs"]["run"] == 80 - resumed, "jobs: %r" % j["jobs"])

    ctx.run(args + ["-o", ctx.path("clean")])
    c = load(ctx.path("clean/nmfk.json"))
    check(j["selection"] == c["selection"], "same selection as an uninterrupted run")
    check(c["selection"]["selected_k"] == 5, "the uninterrupted run finds k=5")
    for x, y in zip(j["per_k"], c["per_k"]):
        check(x["silhouettes"] == y["silhouettes"] and x["rel_error"] == y["rel_error"],
              "k=%d: the same silhouettes and error" % x["k"])

    # Rerunning a finished sweep runs nothing.
    r = ctx.run(args + ["-o", out])
    check("80 of 80 jobs already finished, 0 to run" in r.stderr, "finished sweep: %r" % r.stderr)


@case
def refuses_other_options(ctx):
    """Checkpoints made with other options are refused (naming what differs) unless --restart."""
    a = ctx.gen("A.npy", rank=3, seed=7)
    out = ctx.path("out")
    base = ["nmfk", a, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", out]
    ctx.run(base)
    r = ctx.run(base + ["--epsilon", "0.05"], expect=2)  # usage: --restart or another -o
    lines = error_lines(r.stderr)
    check(len(lines) == 1, "one error line: %r" % r.stderr)
    check("epsilon 0.03 -> 0.05" in lines[0] and "--restart" in lines[0], "message: %r" % lines[0])
    r = ctx.run(base + ["--algo", "mu"], expect=2)
    check("algo hals -> mu" in r.stderr, "algo difference named: %r" % r.stderr)
    # Other data under the same folder.
    b = ctx.gen("B.npy", rank=3, seed=8)
    r = ctx.run(["nmfk", b, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", out], expect=2)
    check("data_sum" in r.stderr, "data difference named: %r" % r.stderr)
    r = ctx.run(base + ["--epsilon", "0.05", "--restart"])
    check("discarded the checkpoints" in r.stderr, "restart said so: %r" % r.stderr)
    check(load(os.path.join(out, "nmfk.json"))["options"]["epsilon"] == 0.05, "the new run's options")
    # A wider k range and another threshold reuse the jobs (they do not change them).
    r = ctx.run(["nmfk", a, "--k", "2:5", "--perturbations", 3, "--epsilon", "0.05", "--sil-threshold", "0.8",
                 "--quiet", "-o", out])
    check("9 of 12 jobs already finished" in r.stderr, "reuse across a wider range: %r" % r.stderr)


@case
def permuted_input_and_damaged_checkpoints(ctx):
    """Checkpoints are reused only for the same data (a row-permuted copy with the same shape, size, sum and sum
    of squares is refused), and a damaged job file is rerun with a warning instead of being trusted."""
    a = ctx.gen("A.npy", rank=3, seed=11)
    out = ctx.path("out")
    args = ["nmfk", a, "--k", "2:4", "--perturbations", 3, "--quiet", "-o", out]
    ctx.run(args)
    first = load(os.path.join(out, "nmfk.json"))
    with open(a, "rb") as f:
        original = f.read()
    # Swap rows 0 and 7 of the C-order f8 matrix (120 x 90): same bytes overall, so the same statistics.
    start = len(original) - 120 * 90 * 8
    row = 90 * 8
    data = bytearray(original)
    r0, r7 = data[start:start + row], data[start + 7 * row:start + 8 * row]
    data[start:start + row], data[start + 7 * row:start + 8 * row] = r7, r0
    with open(a, "wb") as f:
        f.write(bytes(data))
    r = ctx.run(args, expect=2)
    lines = error_lines(r.stderr)
    check(len(lines) == 1 and "content_hash" in lines[0] and "--restart" in lines[0], "refusal: %r" % r.stderr)
    check("data_sum " not in lines[0], "the sums are equal, only the hash differs: %r" % lines[0])
    with open(a, "wb") as f:
        f.write(original)
    r = ctx.run(args)
    check("9 of 9 jobs already finished" in r.stderr, "the original data resumes: %r" % r.stderr)
    # One flipped bit in a job's stored error, one in its W: both rerun, the result is unchanged.
    checkpoints = os.path.join(out, "checkpoints")
    header = 8 + 4 + 4 + 5 * 8
    for name, offset in (("k3_p0.job", header), ("k4_p2.job", header + 16 + 8 * 10 + 2)):
        path = os.path.join(checkpoints, name)
        with open(path, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ 0x01]))
    r = ctx.run(args)
    for name in ("k3_p0.job", "k4_p2.job"):
        check("%s: checksum mismatch (the file is damaged); the job runs again" % name in r.stderr,
              "%s: no warning: %r" % (name, r.stderr))
    check("7 of 9 jobs already finished, 2 to run" in r.stderr, "two jobs rerun: %r" % r.stderr)
    again = load(os.path.join(out, "nmfk.json"))
    check(again["selection"] == first["selection"], "the same selection after the rerun")
    check([e["rel_error"] for e in again["per_k"]] == [e["rel_error"] for e in first["per_k"]], "the same errors")
    # A damaged manifest is said to be damaged (it was "made with different data or options").
    with open(os.path.join(checkpoints, "manifest.json"), "w") as f:
        f.write("{bad")
    r = ctx.run(args, expect=2)
    lines = error_lines(r.stderr)
    check(len(lines) == 1 and "the manifest is damaged" in lines[0] and "different data" not in lines[0],
          "damaged manifest: %r" % r.stderr)


@case
def bad_options(ctx):
    a = ctx.gen("A.npy", rank=3, seed=9)
    for args, text in ((["--k", "5:2"], "empty"), (["--k", "0:3"], "k must be >= 1"),
                       (["--k", "2:200"], "does not fit"),
                       (["--k", "2:4", "--groups", "2"], "--groups 2"),
                       (["--k", "2:4", "--memory-budget", "1G"], "--memory-budget"),
                       (["--k", "2:4", "--perturbation", "gauss"], "--perturbation"),
                       (["--k", "2:4", "--epsilon", "1.5"], "--epsilon"),
                       # Below every silhouette: it accepted every k without a word.
                       (["--k", "2:4", "--sil-threshold", "-2"], "--sil-threshold must be in [-1, 1]"),
                       # A fraction outside (0, 1), said as given (was "value 1 not in range 0 to 1"; help "[0 - 1]").
                       (["--k", "2:4", "--cv", "--cv-holdout", "1"], "--cv-holdout: must be a fraction in (0, 1), got 1"),
                       (["--k", "2:4", "--cv", "--cv-holdout", "0"], "must be a fraction in (0, 1), got 0")):
        r = ctx.run(["nmfk", a] + args + ["-o", ctx.path("bad")], expect=None)
        check(r.returncode != 0, "%s accepted" % args)
        lines = error_lines(r.stderr)
        check(len(lines) == 1 and text in lines[0], "%s: %r" % (args, r.stderr))
    # A hold-out that hides none of a small matrix's 20 entries is refused before the sweep, not after it.
    small = ctx.gen("small.npy", rows=5, cols=4, rank=1, seed=3)
    r = ctx.run(["nmfk", small, "--k", "1:4", "--cv", "--cv-holdout", "0.001", "-o", ctx.path("small_out")], expect=2)
    lines = error_lines(r.stderr)
    check(len(lines) == 1 and "hides no entry of 20" in lines[0], "cv hold-out: %r" % r.stderr)
    check("fraction 0.001 (" in lines[0], "the fraction as given, not 0.001000: %r" % lines[0])
    check(not os.path.exists(ctx.path("small_out")), "refused before the sweep: nothing written")
    check("nmfk: k=" not in r.stderr, "no job ran: %r" % r.stderr)


@case
def data_problems_name_the_file(ctx):
    """Failures of the data, in the sweep or in one perturbed copy, name the file and say what is wrong: a Poisson
    copy of small entries that came out all zeros was "the matrix is all zeros" with no file, tiny entries whose
    squares underflow were "all zeros", and an overflow inside a job named no file."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    from cli_test import npy_bytes, planted_rows
    rows = planted_rows(30, 20)
    small = [[0.0] * 15 for _ in range(20)]
    small[3][4], small[5][6] = 0.02, 0.01
    for name, data in (("small.npy", small), ("tiny.npy", [[v * 1e-200 for v in r] for r in rows]),
                       ("huge.npy", [[v * 1e153 for v in r] for r in rows])):
        with open(ctx.path(name), "wb") as f:
            f.write(npy_bytes(data))
    for args, code, needles in (
            (["small.npy", "--k", "1", "--perturbation", "poisson"], 3, ["small.npy: perturbed copy", "Poisson"]),
            (["tiny.npy", "--k", "2:3"], 3, ["tiny.npy: ", "too small to factorise"]),
            (["huge.npy", "--k", "2:3"], 5, ["huge.npy: ", "overflows"])):
        out = ctx.path("o_" + args[0])
        r = ctx.run(["nmfk", ctx.path(args[0])] + args[1:] + ["--perturbations", 2, "-o", out], expect=code)
        lines = error_lines(r.stderr)
        check(len(lines) == 1 and all(n in lines[0] for n in needles), "%s: %r" % (args, r.stderr))
        check(not os.path.exists(os.path.join(out, "nmfk.json")), "%s: no result may be written" % args)
    r = ctx.run(["cv", ctx.path("tiny.npy"), "--k", "2:3", "-o", ctx.path("o_cv")], expect=3)
    check("too small to factorise" in r.stderr, "cv on tiny entries: %r" % r.stderr)


@case
def cross_validation(ctx):
    """--cv: both choices printed, the held-out error in nmfk.csv/nmfk.json and drawn in a second panel;
    refused under mpirun-like misuse (--cv-folds 0) with one clear error."""
    a = ctx.gen("A.npy", rows=60, cols=50, rank=3, noise=0.02, seed=5)
    out = ctx.path("out")
    r = ctx.run(["nmfk", a, "--k", "2:5", "--perturbations", 4, "--cv", "--cv-folds", 3, "--cv-holdout", 0.1,
                 "--quiet", "-o", out])
    check("selected k=3" in r.stdout, "NMFk's choice printed: %r" % r.stdout)
    check("cross-validation: k=3" in r.stdout, "the CV choice printed: %r" % r.stdout)
    check(r.stdout.count("<- cross-validation") == 1, "the CV table marks one k: %r" % r.stdout)
    j = load(os.path.join(out, "nmfk.json"))
    check(j["selection"]["selected_k"] == 3 and j["selection"]["cv_rule_k"] == 3, "selection: %r" % j["selection"])
    cv = j["cross_validation"]
    check(cv["folds"] == 3 and cv["holdout"] == 0.1 and len(cv["held_out_per_fold"]) == 3, "cv section: %r" % cv)
    check(cv["observed"] == 60 * 50, "observed: %r" % cv["observed"])
    means = [e["cv_mean_heldout_error"] for e in j["per_k"]]
    check(means[0] > 3 * means[1], "held-out error drops at the true k: %r" % means)
    with open(os.path.join(out, "nmfk.csv")) as f:
        lines = f.read().splitlines()
    check(lines[0].endswith(",cv_mean_heldout_error,cv_standard_error,cv_selected"), "csv header: %r" % lines[0])
    check([line.rsplit(",", 1)[1] for line in lines[1:]] == ["0", "1", "0", "0"], "cv_selected column: %r" % lines)
    if shutil.which("gnuplot"):
        with open(os.path.join(out, "nmfk.svg")) as f:
            svg = f.read()
        check("CV k = 3" in svg and "held-out error" in svg and "selected k = 3" in svg,
              "the plot draws both choices")
    r = ctx.run(["nmfk", a, "--k", "2:4", "--cv", "--cv-folds", 0, "-o", ctx.path("bad")], expect=None)
    check(r.returncode != 0 and len(error_lines(r.stderr)) == 1 and "--cv-folds" in r.stderr,
          "--cv-folds 0: %r" % r.stderr)
    # The fold options without --cv would be ignored: a run the user believes cross-validated.
    for option, value in (("--cv-folds", 3), ("--cv-holdout", 0.1)):
        r = ctx.run(["nmfk", a, "--k", "2:4", option, value, "-o", ctx.path("bad")], expect=None)
        check(r.returncode == 2 and len(error_lines(r.stderr)) == 1 and "requires --cv" in r.stderr,
              "%s without --cv: rc %d, %r" % (option, r.returncode, r.stderr))
    # A hold-out that hides every observed entry leaves nothing to fit: the option's fault (exit 2).
    r = ctx.run(["nmfk", a, "--k", "2:4", "--perturbations", 3, "--cv", "--cv-folds", 1, "--cv-holdout", 0.99999,
                 "-o", ctx.path("bad")], expect=None)
    check(r.returncode == 2 and "hides every one of the 3000 observed entries" in r.stderr,
          "--cv-holdout 0.99999: rc %d, %r" % (r.returncode, r.stderr))


@case
def groups_equal_one_process(ctx):
    """4 processes in 2 groups: the same selected k and silhouettes (within 1e-6) as 1 process."""
    check(ctx.mpirun, "needs --mpirun")
    launcher = ctx.mpirun.split() + ["4"]
    for name, extra in (("A.npy", {}), ("S.mtx", {"density": 0.4})):
        a = ctx.gen(name, rows=120, cols=90, rank=4, noise=0.02, seed=10, **extra)
        common = ["nmfk", a, "--k", "2:6", "--perturbations", 6, "--quiet"]
        ctx.run(common + ["-o", ctx.path(name + ".one")])
        r = ctx.run(common + ["--groups", "2", "-o", ctx.path(name + ".four")], launcher=launcher)
        one = load(ctx.path(name + ".one/nmfk.json"))
        four = load(ctx.path(name + ".four/nmfk.json"))
        check(four["processes"] == 4 and four["groups"] == 2, "ran on 4 processes in 2 groups: %r" % four["processes"])
        check(four["selection"]["selected_k"] == one["selection"]["selected_k"] == 4,
              "%s: selected %r vs %r" % (name, four["selection"]["selected_k"], one["selection"]["selected_k"]))
        check(four["selection"]["wilcoxon_rule_k"] == one["selection"]["wilcoxon_rule_k"], "same Wilcoxon k")
        for x, y in zip(one["per_k"], four["per_k"]):
            diff = max(abs(p - q) for p, q in zip(x["silhouettes"], y["silhouettes"]))
            check(diff <= 1e-6, "%s k=%d: silhouettes differ by %g" % (name, x["k"], diff))
            check(abs(x["min_silhouette"] - y["min_silhouette"]) <= 1e-6, "minimum silhouette")
            check(abs(x["rel_error"] - y["rel_error"]) <= 1e-6, "relative error")
        check(r.stdout.count("jobs: ") == 1, "one process reports: %r" % r.stdout)


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dnmf")
    ap.add_argument("--work")
    ap.add_argument("--mpirun", default="")
    ap.add_argument("--registered")
    ap.add_argument("case", nargs="?")
    args = ap.parse_args()
    if args.registered is not None:
        registered = set(args.registered.split(","))
        missing = sorted(set(CASES) - registered)
        if missing:
            print("cases not registered in tests/nmfk/CMakeLists.txt: %s" % ", ".join(missing))
            return 1
        return 0
    if args.case not in CASES:
        print("unknown case %r; known: %s" % (args.case, ", ".join(sorted(CASES))))
        return 2
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        CASES[args.case](Context(os.path.abspath(args.dnmf), args.work, args.mpirun))
    except Failure as e:
        print("FAIL %s: %s" % (args.case, e))
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    print("ok %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
