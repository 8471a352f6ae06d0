"""Shared data and tools of the Python tests: planted matrices, the CLI and mpiexec of the build under test."""
import os

# scikit-learn's array-API estimator check (numpy namespace) runs only when scipy is imported with this set;
# without it the check skips, and a skip is not a pass.
os.environ.setdefault("SCIPY_ARRAY_API", "1")
import shutil

import numpy as np
import pytest


def planted(m, n, k, seed=0, noise=0.0, dtype=np.float64):
    """X = W H + noise with non-negative W, H: a matrix whose exact rank-k factorisation is known."""
    rng = np.random.default_rng(seed)
    X = rng.random((m, k)) @ rng.random((k, n))
    if noise:
        X *= (1 + noise * rng.standard_normal(X.shape)).clip(0)
    return X.astype(dtype)


@pytest.fixture
def cli():
    """Path of the dnmf executable built with this extension (CTest sets DNMF_CLI)."""
    path = os.environ.get("DNMF_CLI") or shutil.which("dnmf")
    if not path:
        pytest.fail("DNMF_CLI is not set and no dnmf on PATH: run the Python tests through ctest")
    return path


@pytest.fixture
def mpiexec():
    path = os.environ.get("DNMF_MPIEXEC") or shutil.which("mpiexec")
    if not path:
        pytest.fail("no mpiexec: the MPI tests need Open MPI (scripts/install-deps.sh)")
    return path
