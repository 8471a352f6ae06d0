"""Time to solution (issue 14, item 6): the seconds each solver needs to reach a common error, in one run.

For each workload every solver starts from the same W0, H0 (random, scaled as scikit-learn's 'random' init) and
runs --iters iterations (default 2000, tol 0): dnmf.NMF mu, hals, bpp, hals+x, bpp+x and, when scikit-learn is
installed, sklearn.decomposition.NMF mu and cd. The target is 1.01x the lowest relative error any of them reached; each
solver's time to solution is the first moment its error is <= the target:
  - dnmf: its per-iteration callback gives the error curve and so the iteration count; its time is that of one
    uninterrupted fit of exactly that many iterations without the callback (the best of 3 or more: repeats go
    on for a second, up to 30), as for scikit-learn;
    "+x" marks dnmf's extrapolated iteration (extrapolate=True, hals and bpp);
  - scikit-learn: it has no callback, so its error curve comes from warm-started chunks of --chunk iterations
    (init='custom' with the previous W, H: mu and cd keep no other state, so the iterates are those of one
    fit); the chunk in which it first reaches the target is then rerun one iteration at a time, so the count
    is exact, and its time is that of one uninterrupted fit of exactly that many iterations (best as dnmf's), its
    setup included as dnmf's is. Solvers that never reach it print "-".
Workloads: dense 4000x3000 (rank 16 + 1% noise), sparse 20000x10000 with 1e6 non-zeros (uniform), and a
text-like sparse matrix (power-law row and column sums, Zipf-like counts) of the same size; k = 16, float64;
--scale divides the sides for a quick run.

Run with the venv's Python and the build's package, without the OpenBLAS pins (DEVELOPERS.md):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=build/release/python build/venv/bin/python \
      bench/time_to_solution.py
"""

import argparse
import math
import platform
import time

import numpy as np
import scipy.sparse as sp

import dnmf

try:
    from sklearn.decomposition import NMF as SkNMF
except ImportError:  # the comparison columns are left out
    SkNMF = None

K = 16


def dense_workload(scale, rng):
    m, n = 4000 // scale, 3000 // scale
    return rng.random((m, K)) @ rng.random((K, n)) + 0.01 * rng.random((m, n))


def sparse_workload(scale, rng):
    m, n = 20000 // scale, 10000 // scale
    return sp.random(m, n, density=1e6 / 2e8, format="csr", random_state=rng, dtype=np.float64)


def text_workload(scale, rng):
    """Counts with power-law row (document length) and column (word frequency) sums, as a term matrix has."""
    m, n = 20000 // scale, 10000 // scale
    nnz = int(1e6 / scale ** 2)
    row_weight = 1.0 / np.arange(1, m + 1) ** 0.8
    col_weight = 1.0 / np.arange(1, n + 1) ** 1.1
    rows = rng.choice(m, size=nnz, p=row_weight / row_weight.sum())
    cols = rng.choice(n, size=nnz, p=col_weight / col_weight.sum())
    counts = rng.zipf(2.0, size=nnz).clip(max=1000).astype(np.float64)
    a = sp.csr_matrix((counts, (rows, cols)), shape=(m, n))
    a.sum_duplicates()
    return a


def squared_norm(x):
    return float(x.multiply(x).sum()) if sp.issparse(x) else float(np.vdot(x, x))


def relative_error(x, w, h, x_norm2):
    """||X - WH|| / ||X|| from k x k products (no m x n temporary): ||X||² - 2 tr(Hᵀ Wᵀ X) + tr(WᵀW HHᵀ)."""
    cross = float(np.sum((x.T @ w).T * h)) if sp.issparse(x) else float(np.sum((w.T @ x) * h))
    gram = float(np.sum((w.T @ w) * (h @ h.T)))
    return math.sqrt(max(x_norm2 - 2.0 * cross + gram, 0.0) / x_norm2)


# dnmf's solvers, and the extrapolated variants of those it applies to (FactorOptions::extrapolate; "+x").
DNMF_VARIANTS = (("mu", False), ("hals", False), ("bpp", False), ("hals", True), ("bpp", True))


def run_dnmf(x, solver, iters, threads, w0, h0, extrapolate=False):
    stamps = []
    start = [0.0]

    def callback(iteration, rel_error):
        stamps.append((time.perf_counter() - start[0], rel_error))

    model = dnmf.NMF(K, solver=solver, init="custom", max_iter=iters, tol=0, n_threads=threads, callback=callback,
                     extrapolate=extrapolate)
    w, h = w0.copy(), h0.copy()
    start[0] = time.perf_counter()
    model.fit(x, W=w, H=h)
    return stamps


def repetitions(budget=1.0, least=3, most=30):
    """Indices of the timed repeats: at least `least`, then more while `budget` seconds have not passed (at most
    `most`). A fit of a few milliseconds timed three times on a shared machine was the noise's, not the fit's."""
    start = time.perf_counter()
    for r in range(most):
        if r >= least and time.perf_counter() - start > budget:
            return
        yield r


def dnmf_fit_seconds(x, solver, extrapolate, iterations, threads, w0, h0):
    """Wall seconds of one uninterrupted fit of `iterations` iterations (no callback), the best of repetitions():
    timed as scikit-learn's fits are."""
    best = math.inf
    for _ in repetitions():
        model = dnmf.NMF(K, solver=solver, init="custom", max_iter=iterations, tol=0, n_threads=threads,
                         extrapolate=extrapolate)
        w, h = w0.copy(), h0.copy()
        start = time.perf_counter()
        model.fit(x, W=w, H=h)
        best = min(best, time.perf_counter() - start)
    return best


def run_sklearn(x, solver, iters, chunk, w0, h0, x_norm2):
    """Error after every `chunk` iterations (warm-started chunks) and the uninterrupted per-iteration time."""
    w, h = w0.copy(), h0.copy()
    curve = []
    done = 0
    while done < iters:
        step = min(chunk, iters - done)  # --iters for scikit-learn too (whole chunks ran past it)
        model = SkNMF(K, solver=solver, init="custom", max_iter=step, tol=0)
        w = model.fit_transform(x, W=w, H=h)
        h = model.components_
        done += step
        curve.append((done, relative_error(x, w, h, x_norm2)))
    timing = SkNMF(K, solver=solver, init="custom", max_iter=5 * chunk, tol=0)
    start = time.perf_counter()
    timing.fit(x, W=w0.copy(), H=h0.copy())
    per_iter = (time.perf_counter() - start) / timing.n_iter_
    return curve, per_iter


def sklearn_exact_iterations(x, solver, chunk, w0, h0, x_norm2, curve, target):
    """The first iteration count whose error is <= target: the chunked curve brackets it, and the bracketing
    chunk is rerun from its start one iteration at a time (None when the curve never reaches the target)."""
    at = next((i for i, (_, rel) in enumerate(curve) if rel <= target), None)
    if at is None:
        return None
    done = curve[at][0]
    w, h = w0.copy(), h0.copy()
    start = curve[at - 1][0] if at > 0 else 0  # the chunk before it ended there (the last chunk may be shorter)
    if start > 0:
        model = SkNMF(K, solver=solver, init="custom", max_iter=start, tol=0)
        w = model.fit_transform(x, W=w, H=h)
        h = model.components_
    for it in range(start + 1, done + 1):
        model = SkNMF(K, solver=solver, init="custom", max_iter=1, tol=0)
        w = model.fit_transform(x, W=w, H=h)
        h = model.components_
        if relative_error(x, w, h, x_norm2) <= target:
            return it
    return done


def sklearn_fit_seconds(x, solver, iterations, w0, h0):
    """Wall seconds of one uninterrupted fit of `iterations` iterations from (w0, h0), the best of repetitions()."""
    best = math.inf
    for _ in repetitions():
        model = SkNMF(K, solver=solver, init="custom", max_iter=iterations, tol=0)
        w, h = w0.copy(), h0.copy()
        start = time.perf_counter()
        model.fit(x, W=w, H=h)
        best = min(best, time.perf_counter() - start)
    return best


def first_time(points, target):
    for seconds, rel in points:
        if rel <= target:
            return seconds
    return float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--chunk", type=int, default=10)
    parser.add_argument("--scale", type=int, default=1, help="divide the matrices' sides by this")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workloads", default="dense,sparse,text")
    args = parser.parse_args()
    makers = {"dense": dense_workload, "sparse": sparse_workload, "text": text_workload}
    print(f"time to solution: k={K}, {args.iters} iterations, {args.threads} threads, {platform.processor() or ''}"
          f" dnmf {dnmf.__version__}" + ("" if SkNMF else "; scikit-learn not installed"))
    verdicts = []
    for name in args.workloads.split(","):
        rng = np.random.default_rng(0)
        x = makers[name](args.scale, rng)
        x_norm2 = squared_norm(x)
        m, n = x.shape
        scale = math.sqrt((x.sum() / (m * n)) / K)  # scikit-learn's random init scale
        w0 = scale * rng.random((m, K))
        h0 = scale * rng.random((K, n))
        curves = {}
        for solver, extrapolate in DNMF_VARIANTS:
            label = "dnmf " + solver + ("+x" if extrapolate else "")
            curves[label] = run_dnmf(x, solver, args.iters, args.threads, w0, h0, extrapolate)
        sklearn_runs = {}
        if SkNMF is not None:
            for solver in ("mu", "cd"):
                curve, per_iter = run_sklearn(x, solver, args.iters, args.chunk, w0, h0, x_norm2)
                sklearn_runs[solver] = (curve, per_iter)
                curves["sklearn " + solver] = [(it * per_iter, rel) for it, rel in curve]
        best = min(min(rel for _, rel in c) for c in curves.values())
        target = 1.01 * best
        times = {label: first_time(c, target) for label, c in curves.items()}
        iterations = {label: next((i + 1 for i, (_, rel) in enumerate(c) if rel <= target), None)
                      for label, c in curves.items() if label.startswith("dnmf")}
        for solver, extrapolate in DNMF_VARIANTS:
            label = "dnmf " + solver + ("+x" if extrapolate else "")
            if iterations[label] is not None:
                times[label] = dnmf_fit_seconds(x, solver, extrapolate, iterations[label], args.threads, w0, h0)
        for solver, (curve, _) in sklearn_runs.items():
            exact = sklearn_exact_iterations(x, solver, args.chunk, w0, h0, x_norm2, curve, target)
            iterations["sklearn " + solver] = exact
            if exact is not None:
                times["sklearn " + solver] = sklearn_fit_seconds(x, solver, exact, w0, h0)
        kind = "sparse" if sp.issparse(x) else "dense"
        print(f"\n{name} ({kind} {m}x{n}" + (f", nnz {x.nnz}" if sp.issparse(x) else "") +
              f"): best rel. error {best:.6g}, target {target:.6g}")
        print(f"  {'solver':<14} {'final error':>12} {'s to target':>12} {'iterations':>11}")
        for label, c in curves.items():
            t = times[label]
            its = iterations.get(label)
            print(f"  {label:<14} {c[-1][1]:12.6g} {('-' if math.isnan(t) else f'{t:.3f}'):>12}"
                  f" {('-' if its is None else str(its)):>11}")
        ours = min((t for label, t in times.items() if label.startswith("dnmf") and not math.isnan(t)),
                   default=float("nan"))
        theirs = min((t for label, t in times.items() if label.startswith("sklearn") and not math.isnan(t)),
                     default=float("nan"))
        if SkNMF is not None:
            ratio = theirs / ours if ours > 0 else float("nan")
            # Which side never reached it, as the line above says: the summary blamed scikit-learn whenever the
            # ratio was NaN, also where dnmf was the one that never reached the target.
            verdict = (f"{ratio:.1f}x" if not math.isnan(ratio) else "scikit-learn never reached the target"
                       if math.isnan(theirs) and not math.isnan(ours) else "dnmf never reached the target"
                       if math.isnan(ours) and not math.isnan(theirs) else "neither reached the target")
            print(f"  dnmf's best is {ratio:.1f}x faster than scikit-learn's best to the target"
                  if not math.isnan(ratio) else "  " + verdict)
            verdicts.append((name, verdict))
    if verdicts:
        print("\nsummary (issue 14 asks >= 5x): " + ", ".join(f"{n} {v}" for n, v in verdicts))


if __name__ == "__main__":
    main()
