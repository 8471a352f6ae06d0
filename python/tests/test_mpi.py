"""The Python package under mpirun: the same calls on a 2-D grid of 2 and 4 processes (each reading its block)
equal the one-process run within 1e-8 (float64)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import planted

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from mpi4py import MPI
    import dnmf

    path, out = sys.argv[1], sys.argv[2]
    comm = MPI.COMM_WORLD
    # The file, each rank reading its block; the default communicator is the launcher's world.
    run = dnmf.factor_file(path, 4, algorithm="hals", max_iter=40, seed=7)
    # An in-memory matrix with mpi4py's communicator passed explicitly; each rank slices its block.
    X = np.load(path)
    model = dnmf.NMF(4, solver="mu", init="random", random_state=7, max_iter=40, tol=0, comm=comm).fit(X)
    # The default init (NNDSVDa on one process) on a grid: it starts at random instead (it was refused).
    default = dnmf.NMF(4, random_state=7, max_iter=15, tol=0, comm=comm).fit(X)
    # NMFk of the file: the jobs on the grid (one group), rank 0 holds the outcome.
    sweep = dnmf.nmfk_file(path, "2:5", perturbations=4, max_iter=500, seed=3)
    if comm.rank == 0:
        np.savez(out, W=run.W, H=run.H, components=model.components_, default=default.components_, grid=run.grid,
                 nmfk_k=-1 if sweep.k is None else sweep.k, nmfk_sil=sweep.table["min_silhouette"],
                 nmfk_err=sweep.table["rel_error"])
    else:
        assert run.W is None
    # Every rank holds the fitted estimator.
    assert model.components_.shape == (4, X.shape[1])
""")


@pytest.mark.parametrize("processes", [2, 4])
def test_mpirun_equals_one_process(tmp_path, mpiexec, processes):
    import dnmf

    A = planted(120, 90, 4, seed=1, noise=0.05)
    np.save(tmp_path / "A.npy", A)
    (tmp_path / "script.py").write_text(SCRIPT)
    done = subprocess.run([mpiexec, "--oversubscribe", "-np", str(processes), sys.executable,
                           str(tmp_path / "script.py"), str(tmp_path / "A.npy"), str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
                               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    out = np.load(tmp_path / "out.npz")
    assert str(out["grid"]) != "1x1"
    one = dnmf.factor_file(tmp_path / "A.npy", 4, algorithm="hals", max_iter=40, seed=7, comm=False)
    np.testing.assert_allclose(out["W"], one.W, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(out["H"], one.H, rtol=1e-8, atol=1e-12)
    model = dnmf.NMF(4, solver="mu", init="random", random_state=7, max_iter=40, tol=0).fit(A)
    np.testing.assert_allclose(out["components"], model.components_, rtol=1e-8, atol=1e-12)
    default = dnmf.NMF(4, init="random", random_state=7, max_iter=15, tol=0).fit(A)
    np.testing.assert_allclose(out["default"], default.components_, rtol=1e-8, atol=1e-12)
    sweep = dnmf.nmfk_file(tmp_path / "A.npy", "2:5", perturbations=4, max_iter=500, seed=3, comm=False)
    assert sweep.k == 4 and int(out["nmfk_k"]) == sweep.k
    np.testing.assert_allclose(out["nmfk_sil"], sweep.table["min_silhouette"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(out["nmfk_err"], sweep.table["rel_error"], rtol=1e-8)
