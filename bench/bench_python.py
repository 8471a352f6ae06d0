"""dnmf.NMF against the dnmf CLI and scikit-learn's NMF, in one run on the same data.

Workloads (issue 13): dense 4000 x 3000 and sparse 20000 x 10000 with 1e6 non-zeros, k = 16, float64.
Printed per workload, best of --repeats:
  - seconds per iteration of dnmf.NMF (mu, hals), the CLI (`dnmf factor`, same file, same options) and
    sklearn.decomposition.NMF (mu, cd);
  - the Python overhead: the part of dnmf.NMF's fit spent outside the library call dnmf::factor() that the CLI
    makes too (validation, the source, conversions, the result's arrays), and the whole fit against the CLI's
    init + iterations from its report.json (the CLI's file read left out: Python's X is in memory), which also
    carries the machine's noise;
  - time to reach scikit-learn's error: from one common start (init='custom'), the error each sklearn solver
    ends with after --iters iterations, and the time dnmf.NMF's solvers need to reach it (from their
    per-iteration callback timestamps, running up to 3x the iterations).
The runs are interleaved (each once per round, --repeats rounds) so that the machine's noise falls on all alike.

Run with the venv's Python and the build's package, without the OpenBLAS pins (DEVELOPERS.md):
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=build/release/python build/venv/bin/python \
      bench/bench_python.py --cli build/release/bin/dnmf
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.decomposition import NMF as SkNMF
from threadpoolctl import threadpool_info, threadpool_limits

import dnmf


def dense_workload(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((4000, 16)) @ rng.random((16, 3000)) + 0.01 * rng.random((4000, 3000))


def sparse_workload(seed=0):
    rng = np.random.default_rng(seed)
    return sp.random(20000, 10000, density=1e6 / 2e8, format="csr", random_state=rng, dtype=np.float64)


def best_interleaved(runs, repeats):
    """Each run once per round, rounds repeated: the machine's noise falls on all of them alike; the best of the
    rounds is kept per run."""
    results = {}
    for _ in range(repeats):
        for label, fn in runs.items():
            r = fn()
            if label not in results or r["seconds"] < results[label]["seconds"]:
                results[label] = r
    return results


def run_dnmf(X, solver, iters, threads, W0=None, H0=None):
    stamps = []
    start = [0.0]

    def callback(iteration, rel_error):
        stamps.append((time.perf_counter() - start[0], rel_error))

    custom = W0 is not None
    model = dnmf.NMF(16, solver=solver, init="custom" if custom else "random", random_state=0, max_iter=iters,
                     tol=0, n_threads=threads, callback=callback if custom else None)
    start[0] = time.perf_counter()
    model.fit(X, W=W0, H=H0) if custom else model.fit(X)
    seconds = time.perf_counter() - start[0]
    report = json.loads(model.report_)
    return {"seconds": seconds, "per_iter": report["seconds"] / model.n_iter_, "stamps": stamps,
            "abs_error": model.reconstruction_err_, "outside": seconds - model._library_seconds}


def run_cli(cli, path, algo, iters, threads):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([cli, "factor", path, "-k", "16", "--algo", algo, "--iters", str(iters), "--tol", "0",
                        "--seed", "0", "--threads", str(threads), "--quiet", "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
    compute = report["seconds"] + report.get("init_seconds", 0.0)
    return {"seconds": compute, "per_iter": report["seconds"] / report["iterations"]}


def run_sklearn(X, solver, iters, W0, H0):
    model = SkNMF(16, solver=solver, init="custom", max_iter=iters, tol=0)
    start = time.perf_counter()
    model.fit(X, W=W0.copy(), H=H0.copy())
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "per_iter": seconds / model.n_iter_, "abs_error": model.reconstruction_err_}


def time_to_reach(stamps, norm, abs_error):
    target = abs_error / norm
    for seconds, rel in stamps:
        if rel <= target:
            return seconds
    return float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default="build/release/bin/dnmf")
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    blas = [(p["internal_api"], p.get("version"), p["num_threads"]) for p in threadpool_info()]
    print(f"python {sys.version.split()[0]}, dnmf {dnmf.__version__}, threadpools {blas}")
    figures = {}
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(limits=args.threads):
        for name, X in (("dense 4000x3000", dense_workload()), ("sparse 20000x10000 1e6 nnz", sparse_workload())):
            path = os.path.join(tmp, "A.npy" if name.startswith("dense") else "A.mtx")
            if sp.issparse(X):
                from scipy.io import mmwrite

                mmwrite(path, X)
                norm = float(np.sqrt((X.data ** 2).sum()))
            else:
                np.save(path, X)  # C order, as numpy writes it by default
                norm = float(np.linalg.norm(X))
            # One start for scikit-learn and dnmf.NMF in the time-to-error race (scikit-learn's own random init
            # at the scale it uses); dnmf runs up to 3x the iterations to find where it crosses sklearn's error.
            rng = np.random.default_rng(1)
            scale = np.sqrt((X.data.mean() * X.nnz / np.prod(X.shape) if sp.issparse(X) else X.mean()) / 16)
            W0 = np.abs(scale * rng.standard_normal((X.shape[0], 16)))
            H0 = np.abs(scale * rng.standard_normal((16, X.shape[1])))
            runs = {}
            for solver in ("mu", "hals"):
                runs[f"dnmf.NMF {solver}"] = partial(run_dnmf, X, solver, args.iters, args.threads)
                runs[f"CLI {solver}"] = partial(run_cli, args.cli, path, solver, args.iters, args.threads)
            for solver in ("mu", "cd"):
                runs[f"sklearn {solver}"] = partial(run_sklearn, X, solver, args.iters, W0, H0)
            for solver in ("mu", "hals"):
                runs[f"race {solver}"] = partial(run_dnmf, X, solver, 3 * args.iters, args.threads, W0, H0)
            rows = best_interleaved(runs, args.repeats)

            print(f"\n{name}, k=16, {args.iters} iterations, {args.threads} threads, best of {args.repeats} rounds")
            print(f"{'':22} {'ms/iter':>9} {'final rel. error':>17}")
            for label, r in rows.items():
                if label.startswith("race"):
                    continue
                err = r.get("abs_error")
                print(f"{label:22} {1e3 * r['per_iter']:9.2f} {'' if err is None else f'{err / norm:17.4e}'}")
            for solver in ("mu", "hals"):
                ours, cli = rows[f"dnmf.NMF {solver}"], rows[f"CLI {solver}"]
                print(f"python overhead ({solver}): {1e3 * ours['outside']:.1f} ms of the {ours['seconds']:.3f} s fit "
                      f"outside the library's factor() call ({100 * ours['outside'] / ours['seconds']:.1f}%); "
                      f"whole fit vs CLI init + iterations {cli['seconds']:.3f} s: "
                      f"{100 * (ours['seconds'] / cli['seconds'] - 1):+.1f}%, per iteration "
                      f"{100 * (ours['per_iter'] / cli['per_iter'] - 1):+.1f}%")
            for sk in ("mu", "cd"):
                ref = rows[f"sklearn {sk}"]
                for solver in ("mu", "hals"):
                    t = time_to_reach(rows[f"race {solver}"]["stamps"], norm, ref["abs_error"])
                    ours = (f"dnmf {solver} {t:.2f} s ({ref['seconds'] / t:.1f}x)" if t == t
                            else f"dnmf {solver} not within {3 * args.iters} iterations")
                    print(f"time to sklearn {sk}'s error {ref['abs_error'] / norm:.4e}: "
                          f"sklearn {ref['seconds']:.2f} s, {ours}")
            figures[name] = {label: {k: v for k, v in r.items() if k not in ("stamps", "report")}
                             for label, r in rows.items()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
