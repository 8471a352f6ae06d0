"""NMF.transform with missing values: each row fitted on its observed entries, against scipy's NNLS."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls

import dnmf
from conftest import planted


def reference_transform(X, M, C):
    """Per row: min Σ_j m_j (x_j − (w C)_j)², w ≥ 0, by scipy's NNLS on the rows scaled by sqrt(m)."""
    W = np.zeros((X.shape[0], C.shape[0]))
    for i in range(X.shape[0]):
        s = np.sqrt(M[i])
        if np.any(s > 0):
            W[i], _ = nnls(s[:, None] * C.T, s * np.where(M[i] > 0, X[i], 0.0))
    return W


@pytest.fixture(scope="module")
def model():
    return dnmf.NMF(4, solver="bpp", max_iter=200, random_state=0).fit(planted(80, 30, 4, seed=1, noise=0.02))


def test_mask_against_scipy_nnls(model):
    X = planted(25, 30, 4, seed=2, noise=0.05)
    rng = np.random.default_rng(3)
    M = np.where(rng.random(X.shape) < 0.3, 0.0, np.where(rng.random(X.shape) < 0.2, 2.0, 1.0))
    W = model.transform(X, mask=M)
    np.testing.assert_allclose(W, reference_transform(X, M, model.components_), rtol=1e-8, atol=1e-10)
    # A hidden entry may hold anything.
    wild = np.where(M > 0, X, 1e300)
    np.testing.assert_array_equal(model.transform(wild, mask=M), W)


def test_nan_missing_and_an_empty_row(model):
    X = planted(12, 30, 4, seed=4)
    rng = np.random.default_rng(5)
    hidden = rng.random(X.shape) < 0.25
    hidden[7] = True  # row 7 has no observed entry: its coefficients are zero
    Xn = np.where(hidden, np.nan, X)
    W = model.transform(Xn, missing="nan")
    np.testing.assert_allclose(W, reference_transform(X, (~hidden).astype(float), model.components_), rtol=1e-8,
                               atol=1e-10)
    assert np.all(W[7] == 0)
    np.testing.assert_allclose(model.transform(X, mask=(~hidden).astype(float)), W, rtol=1e-12, atol=1e-14)


def test_sparse_unstored_missing(model):
    X = planted(15, 30, 4, seed=6)
    rng = np.random.default_rng(7)
    stored = rng.random(X.shape) < 0.6
    S = sp.csr_matrix(np.where(stored, X, 0.0))
    W = model.transform(S, unstored="missing")
    np.testing.assert_allclose(W, reference_transform(X, stored.astype(float), model.components_), rtol=1e-8,
                               atol=1e-10)


def test_float32(model):
    X = planted(10, 30, 4, seed=8).astype(np.float32)
    M = (np.random.default_rng(9).random(X.shape) > 0.2).astype(np.float32)
    W = model.transform(X, mask=M)
    assert W.dtype == np.float32
    np.testing.assert_allclose(W, reference_transform(X.astype(float), M.astype(float), model.components_),
                               rtol=2e-3, atol=2e-4)


def test_bad_masks(model):
    X = planted(5, 30, 4, seed=10)
    with pytest.raises(ValueError, match="mask has shape"):
        model.transform(X, mask=np.ones((5, 29)))
    M = np.ones(X.shape)
    M[2, 3] = -1
    with pytest.raises(dnmf.DataError, match="weight at row 2, column 3"):
        model.transform(X, mask=M)
    # Places are X's (the library solves on Xᵀ): an observed negative entry, a NaN without missing='nan'.
    Xbad = X.copy()
    Xbad[4, 1] = -2.0
    with pytest.raises(dnmf.DataError, match="observed entry at row 4, column 1"):
        model.transform(Xbad, mask=np.ones(X.shape))
    Xbad[4, 1] = np.nan
    with pytest.raises(dnmf.DataError, match="row 4, column 1.*missing='nan'"):
        model.transform(Xbad, mask=np.ones(X.shape))
    M = np.ones(X.shape)
    M[4, 1] = 0
    assert np.all(np.isfinite(model.transform(Xbad, mask=M)))  # hidden: not read
    with pytest.raises(ValueError, match="missing must be"):
        model.transform(X, missing="zero")


def test_float32_model_ignores_what_hidden_entries_hold():
    """A hidden entry is never read, in transform as in fit: in float32 a value float32 cannot hold there (1e300,
    1e-300) was refused by the narrowing of X before the mask was looked at."""
    X = planted(30, 20, 3, seed=23, noise=0.02)
    M = (np.random.default_rng(23).random(X.shape) > 0.2).astype(float)
    f32 = dnmf.NMF(3, precision="f32", init="random", random_state=0, max_iter=10).fit(X, mask=M)
    W = f32.transform(X, mask=M)
    for wild in (1e300, 1e-300):
        Xh = np.where(M == 0, wild, X)
        np.testing.assert_array_equal(f32.transform(Xh, mask=M), W)
        # Sparse X too (it was refused: only a dense X had its hidden entries zeroed), with a dense or sparse mask.
        for mask in (M, sp.csr_matrix(M)):
            np.testing.assert_allclose(f32.transform(sp.csr_matrix(Xh), mask=mask), W, rtol=1e-6, atol=1e-7)
