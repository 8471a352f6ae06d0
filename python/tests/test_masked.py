"""dnmf.NMF with missing values: a mask, NaN as missing, unstored entries of a sparse X as missing."""
import numpy as np
import pytest
import scipy.sparse as sp

import dnmf
from conftest import planted


def weighted_mu_reference(X, M, W, H, iters, eps=1e-16):
    """Weighted multiplicative updates written from the objective: only entries with M > 0 count. W first, then
    H, in each iteration: the estimator's (scikit-learn's) order."""
    A = np.where(M > 0, X, 0.0)
    for _ in range(iters):
        W = W * ((M * A) @ H.T) / ((M * (W @ H)) @ H.T + eps)
        H = H * (W.T @ (M * A)) / (W.T @ (M * (W @ H)) + eps)
    return W, H


def test_mask_matches_a_weighted_reference():
    X = planted(30, 20, 3, seed=1, noise=0.05)
    rng = np.random.default_rng(3)
    M = (rng.random(X.shape) > 0.25).astype(float)
    W0 = rng.random((30, 3)) + 0.1
    H0 = rng.random((3, 20)) + 0.1
    model = dnmf.NMF(3, init="custom", solver="mu", max_iter=20, tol=0)
    W = model.fit_transform(X, W=W0.copy(), H=H0.copy(), mask=M)
    W_ref, H_ref = weighted_mu_reference(X, M, W0, H0, 20)
    np.testing.assert_allclose(W @ model.components_, W_ref @ H_ref, rtol=1e-9, atol=1e-12)
    assert '"observed": %d' % int(M.sum()) in model.report_
    # scikit-learn's absolute convention over the observed entries: sqrt(Σ w (x - wh)²).
    observed_error = np.sqrt(np.sum(M * (X - W @ model.components_) ** 2))
    assert model.reconstruction_err_ == pytest.approx(observed_error, rel=1e-9)


def test_nan_as_missing_recovers_the_hidden_entries():
    X = planted(120, 80, 4, seed=2)
    rng = np.random.default_rng(4)
    hidden = rng.random(X.shape) < 0.2
    Xn = X.copy()
    Xn[hidden] = np.nan
    model = dnmf.NMF(4, solver="cd", max_iter=800, tol=1e-10, init="random", random_state=1)
    W = model.fit_transform(Xn, missing="nan")
    filled = (W @ model.components_)[hidden]
    assert np.linalg.norm(filled - X[hidden]) / np.linalg.norm(X[hidden]) < 0.02
    # Without missing="nan" a NaN is an error, as before.
    with pytest.raises(ValueError):
        dnmf.NMF(4, max_iter=5).fit(Xn)


def test_unstored_missing_fits_only_stored_entries():
    X = planted(40, 30, 3, seed=5)
    rng = np.random.default_rng(6)
    keep = rng.random(X.shape) < 0.7
    S = sp.csr_matrix(np.where(keep, X, 0.0))
    model = dnmf.NMF(3, solver="cd", max_iter=500, tol=1e-10, init="random", random_state=0)
    W = model.fit_transform(S, unstored="missing")
    WH = W @ model.components_
    # The unstored entries were never zeros to the fit: they are predicted near the truth.
    assert np.linalg.norm((WH - X)[~keep]) / np.linalg.norm(X[~keep]) < 0.05


@pytest.mark.parametrize("solver, beta_loss", [("mu", "frobenius"), ("mu", "kullback-leibler"), ("cd", "frobenius"),
                                               ("bpp", "frobenius")])
@pytest.mark.parametrize("dtype, scale", [(np.float64, 1e-200), (np.float64, 1e-30), (np.float32, 1e-30),
                                          (np.float32, 1e-16)])
def test_tiny_weights_leave_the_fit_unchanged(solver, beta_loss, dtype, scale):
    # The rules' division guard once grew as the square root of the weights while the divisors it guards grow
    # with them: weights of 1e-200 gave mu a zero W (rel_error 1.0), hals 0.907 at 1e-30 in f32, KL 0.9996 at 1e-20.
    rng = np.random.default_rng(3)
    X = (rng.random((40, 3)) @ rng.random((3, 30)) + 0.02 * rng.random((40, 30))).astype(dtype)
    mask = (rng.random(X.shape) > 0.2).astype(dtype)
    models = [dnmf.NMF(3, solver=solver, beta_loss=beta_loss, init="random", random_state=0, n_threads=1,
                       max_iter=60, tol=0) for _ in range(2)]
    Ws = [model.fit_transform(X, mask=(s * mask).astype(dtype)) for model, s in zip(models, (1.0, scale))]
    rtol = 1e-8 if dtype == np.float64 else 1e-3
    H = models[0].components_
    np.testing.assert_allclose(models[1].components_, H, rtol=rtol, atol=rtol * H.max())
    np.testing.assert_allclose(Ws[1], Ws[0], rtol=rtol, atol=rtol * Ws[0].max())
    WH = Ws[1] @ models[1].components_
    assert np.linalg.norm((WH - X)[mask > 0]) / np.linalg.norm(X[mask > 0]) < 0.1


def test_bad_masks_are_refused():
    X = planted(10, 8, 2, seed=7)
    with pytest.raises(ValueError, match="shape"):
        dnmf.NMF(2, max_iter=5).fit(X, mask=np.ones((8, 10)))
    M = np.ones_like(X)
    M[3, 2] = -1
    with pytest.raises(ValueError, match="row 3, column 2"):
        dnmf.NMF(2, max_iter=5).fit(X, mask=M)


def test_h5py_bool_mask_is_read_as_weights_of_zero_and_one(tmp_path):
    # h5py stores numpy's bool as an HDF5 enum (FALSE = 0, TRUE = 1); it was refused as "enum values", where a
    # bool .npy is read. Other enums stay refused: their values are labels.
    h5py = pytest.importorskip("h5py")
    X = planted(30, 20, 2, seed=3)
    M = np.random.default_rng(0).random(X.shape) > 0.2
    np.save(tmp_path / "X.npy", X)
    with h5py.File(tmp_path / "M.h5", "w") as f:
        f["X"] = M
        labels = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1")
        f.create_dataset("colours", data=np.zeros(X.shape, dtype="i1"), dtype=labels)
    from_h5 = dnmf.factor_file(tmp_path / "X.npy", 2, max_iter=20, mask=f"{tmp_path / 'M.h5'}:/X")
    from_array = dnmf.factor_file(tmp_path / "X.npy", 2, max_iter=20, mask=M.astype(np.float64))
    assert from_h5.report["observed"] == int(M.sum())
    np.testing.assert_array_equal(from_h5.W, from_array.W)
    with pytest.raises(dnmf.DataError, match="enum"):
        dnmf.factor_file(tmp_path / "X.npy", 2, max_iter=20, mask=f"{tmp_path / 'M.h5'}:/colours")


@pytest.mark.parametrize("init", ["nndsvda", "nndsvd", "random"])
def test_scaling_every_weight_leaves_the_fit_unchanged(init):
    # The weighted objective only scales with a common factor of the weights, and so must the whole fit: NNDSVD
    # once started from W∘X, so weights of 2 started near 2X (error 0.486 against 0.004 for a 0/1 mask).
    rng = np.random.default_rng(0)
    X = rng.random((40, 3)) @ rng.random((3, 25))
    mask = (rng.random(X.shape) > 0.2).astype(float)
    fits = [dnmf.NMF(3, init=init, random_state=0, n_threads=1, max_iter=100, tol=0).fit(X, mask=s * mask)
            for s in (1.0, 2.0, 10.0)]
    for fit in fits[1:]:
        np.testing.assert_allclose(fit.components_, fits[0].components_, rtol=1e-8, atol=1e-12)


def test_unobserved_row_warns():
    """docs/masked.md: a row with no observed entry gets a zero row of W and a warning; the estimator raised none
    (the warning was only in report_)."""
    X = planted(20, 15, 3, seed=5)
    M = np.ones_like(X)
    M[4] = 0
    with pytest.warns(UserWarning, match="1 rows and 0 columns have no observed entry"):
        model = dnmf.NMF(3, init="random", random_state=0, max_iter=20).fit(X, mask=M)
    assert np.all(model.transform(X, mask=M)[4] == 0)


def test_factor_warns_of_rows_without_an_observed_entry():
    """dnmf.factor left the warning in report['warnings'] unseen (the CLI prints it, NMF.fit raises it)."""
    X = planted(40, 30, 3, seed=3)
    mask = np.ones_like(X)
    mask[0] = 0
    with pytest.warns(UserWarning, match="dnmf.factor: 1 rows and 0 columns .* no observed entry"):
        r = dnmf.factor(X, 3, max_iter=5, mask=mask)
    assert np.all(r.W[0] == 0)
