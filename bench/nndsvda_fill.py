"""NNDSVDA's start at several data scales: the reconstruction error of dnmf.NMF (default init) on c·X divided by c, for
three planted matrices, 50 and 300 iterations, c = 1, 1e-6, 1e6. With a scale-free start every row repeats its
first pair of figures (docs/algorithms.md, "nndsvda"; docs/measurements/2026-12-05-session27.txt).

    PYTHONPATH=build/release/python build/venv/bin/python bench/nndsvda_fill.py
"""
import warnings

import numpy as np

import dnmf


def planted(m, n, k, seed, noise):
    """W·H with multiplicative noise, as python/tests/conftest.py plants it."""
    rng = np.random.default_rng(seed)
    x = rng.random((m, k)) @ rng.random((k, n))
    return x * (1 + noise * rng.standard_normal(x.shape)).clip(0)


def main():
    warnings.simplefilter("ignore")  # ConvergenceWarning at the iteration caps, which are the point here
    print("columns: c=1 50 it, c=1 300 it, c=1e-6 50 it, c=1e-6 300 it, c=1e6 50 it, c=1e6 300 it")
    for seed, (m, n, k, noise) in enumerate([(40, 30, 3, 0.01), (200, 150, 8, 0.05), (100, 80, 5, 0.2)]):
        x = planted(m, n, k, seed, noise)
        for solver in ("mu", "cd", "bpp"):
            row = []
            for c in (1.0, 1e-6, 1e6):
                for iterations in (50, 300):
                    model = dnmf.NMF(k, solver=solver, random_state=0, max_iter=iterations, tol=0).fit(c * x)
                    row.append(model.reconstruction_err_ / c)
            print(f"{m}x{n} k={k} {solver:4}", " ".join(f"{v:.5g}" for v in row))


if __name__ == "__main__":
    main()
