"""Fitting what genomics and text pipelines hold: AnnData's X (dense or CSR, not densified), .h5ad files and their
layers, .npz files written by scipy.sparse.save_npz and numpy.savez."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import dnmf
from conftest import planted


def sparse_planted(seed=0):
    X = planted(300, 200, 4, seed=seed)
    X[X < np.quantile(X, 0.6)] = 0
    return sp.csr_matrix(X)


def test_anndata_x_is_fitted_without_densifying():
    anndata = pytest.importorskip("anndata")
    adata = anndata.AnnData(X=sparse_planted(1))
    model = dnmf.NMF(4, solver="hals", init="random", random_state=0, max_iter=5)
    tracemalloc.start()
    try:
        W = model.fit_transform(adata.X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < adata.X.data.nbytes / 2  # neither densified nor copied
    assert W.shape == (300, 4)


def test_h5ad_file_and_layer(tmp_path):
    anndata = pytest.importorskip("anndata")
    X = sparse_planted(2)
    adata = anndata.AnnData(X=X, layers={"dense": X.toarray() * 2})
    adata.write_h5ad(tmp_path / "cells.h5ad")
    from_file = dnmf.factor_file(tmp_path / "cells.h5ad", 4, seed=3, max_iter=30)
    in_memory = dnmf.factor(X, 4, seed=3, max_iter=30)
    np.testing.assert_allclose(from_file.W, in_memory.W, rtol=1e-10, atol=1e-14)
    layer = dnmf.factor_file(f"{tmp_path / 'cells.h5ad'}:/layers/dense", 4, seed=3, max_iter=30)
    assert layer.shape == (300, 200)
    np.testing.assert_allclose(layer.W, in_memory.W, rtol=1e-8, atol=1e-12)  # 2X: the same W, H doubled


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("compressed", [True, False])
def test_scipy_save_npz(tmp_path, fmt, compressed):
    X = sparse_planted(4).asformat(fmt)
    sp.save_npz(tmp_path / "X.npz", X, compressed=compressed)
    from_file = dnmf.factor_file(tmp_path / "X.npz", 3, seed=1, max_iter=20)
    in_memory = dnmf.factor(X.tocsr(), 3, seed=1, max_iter=20)
    np.testing.assert_allclose(from_file.W, in_memory.W, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(from_file.H, in_memory.H, rtol=1e-10, atol=1e-14)


def test_numpy_savez_one_array_and_named(tmp_path):
    X = planted(40, 30, 3, seed=5)
    np.savez_compressed(tmp_path / "one.npz", data=X)
    np.savez(tmp_path / "two.npz", A=X, B=2 * X)
    reference = dnmf.factor(np.asfortranarray(X), 3, seed=1, max_iter=20)  # column-major, as the file is read
    np.testing.assert_allclose(dnmf.factor_file(tmp_path / "one.npz", 3, seed=1, max_iter=20).W, reference.W,
                               rtol=1e-10, atol=1e-14)
    with pytest.raises(dnmf.Error, match="two.npz"):
        dnmf.factor_file(tmp_path / "two.npz", 3)
    named = dnmf.factor_file(f"{tmp_path / 'two.npz'}:A", 3, seed=1, max_iter=20)
    np.testing.assert_allclose(named.W, reference.W, rtol=1e-10, atol=1e-14)


def _fit_in_worker(seed):
    X = planted(400, 300, 5, seed=7)
    return dnmf.NMF(5, solver="cd", init="random", random_state=seed, max_iter=30, n_threads=2).fit(X).components_


def test_fits_in_processes_forked_after_a_fit():
    """GNU OpenMP's threads do not survive fork(): after a fit in the parent, a child made by multiprocessing's
    'fork' start method (Python 3.11's default on Linux) hung for good in its first fit. Such a child now runs on
    one thread, with the same results (they do not depend on the thread count)."""
    import multiprocessing

    X = planted(400, 300, 5, seed=7)  # large enough for the fit to start its threads (small ones run on one)
    expected = [dnmf.NMF(5, solver="cd", init="random", random_state=s, max_iter=30, n_threads=2).fit(X).components_
                for s in (0, 1)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map_async(_fit_in_worker, (0, 1)).get(timeout=60)  # TimeoutError where a child hangs
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)


def test_an_hdf5_file_locked_by_a_writer_is_an_io_error_with_the_remedy(tmp_path, cli):
    """A file another program held open for writing was "bad data" (exit 3) though nothing was wrong with it."""
    import os
    import subprocess

    h5py = pytest.importorskip("h5py")
    path = tmp_path / "L.h5"
    with h5py.File(path, "w") as f:
        f["X"] = planted(30, 20, 2, seed=1)
    env = {k: v for k, v in os.environ.items() if k != "HDF5_USE_FILE_LOCKING"}
    with h5py.File(path, "a"):
        run = subprocess.run([cli, "factor", str(path), "-k", "2", "-q", "-o", str(tmp_path / "out")],
                             capture_output=True, text=True, env=env)
    if run.returncode == 0:
        pytest.skip("this HDF5 build does not lock files")
    assert run.returncode == 4, run.stderr
    assert "HDF5_USE_FILE_LOCKING=FALSE" in run.stderr and "L.h5: cannot open as HDF5" in run.stderr


def _threads_after_a_fit(queue):
    import os

    X = planted(1000, 800, 5, seed=3)
    dnmf.NMF(5, solver="cd", init="random", random_state=0, max_iter=20, tol=0, n_threads=2).fit(X)
    queue.put(len(os.listdir("/proc/self/task")))


def test_a_child_of_a_parent_that_ran_one_thread_keeps_its_threads():
    """The fork guard is for children of a process whose OpenMP pool exists: a parent that only ran n_threads=1
    started none, and its children may run threads (they ran on one)."""
    import multiprocessing

    dnmf.NMF(3, solver="cd", init="random", random_state=0, max_iter=5, n_threads=1).fit(planted(200, 150, 3, seed=1))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_threads_after_a_fit, args=(queue,))
    child.start()
    tasks = queue.get(timeout=120)
    child.join(timeout=60)
    assert tasks >= 2, f"the child ran on {tasks} thread(s)"


def test_hdf5_files_read_from_threads_at_once(tmp_path):
    # The binding releases the GIL during a fit, and Debian's HDF5 is not thread-safe: two threads reading HDF5
    # files at once crashed (SIGSEGV in H5Pclose, "double free") or read valid files as empty. The library now
    # takes one lock around its HDF5 work.
    import concurrent.futures
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(0)
    paths = []
    for i in range(2):
        paths.append(str(tmp_path / f"m{i}.h5"))
        with h5py.File(paths[-1], "w") as f:
            f.create_dataset("X", data=rng.random((300, 200)), chunks=(50, 50), compression="gzip")
    expected = [dnmf.factor(f"{p}:/X", 3, max_iter=2, n_threads=1).W for p in paths]

    def work(i):
        return [dnmf.factor(f"{paths[i]}:/X", 3, max_iter=2, n_threads=1).W for _ in range(25)]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(work, range(2)))
    for i in range(2):
        assert all(np.array_equal(w, expected[i]) for w in results[i])

