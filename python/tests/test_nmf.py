"""dnmf.NMF against scikit-learn, against itself under other layouts, and on bad input."""
import itertools
import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls
from sklearn.decomposition import NMF as SkNMF

import dnmf
from conftest import planted


def sklearn_loss(X, W, H):
    return 0.5 * np.linalg.norm(X - W @ H) ** 2


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("loss", ["frobenius", "kullback-leibler"])
def test_mu_matches_scikit_learn_from_the_same_start(loss, order):
    X = np.asarray(planted(120, 80, 6, seed=1, noise=0.05), order=order)
    k = 6
    rng = np.random.default_rng(2)
    W0 = rng.random((120, k)) + 0.1
    H0 = rng.random((k, 80)) + 0.1
    ours = dnmf.NMF(k, init="custom", solver="mu", beta_loss=loss, max_iter=200, tol=0)
    W = ours.fit_transform(X, W=W0.copy(), H=H0.copy())
    theirs = SkNMF(k, init="custom", solver="mu", beta_loss=loss, max_iter=200, tol=0)
    W_theirs = theirs.fit_transform(X, W=W0.copy(), H=H0.copy())
    assert ours.n_iter_ == 200
    # The estimator updates W first, as scikit-learn does: the same iterates, up to floating-point sums.
    np.testing.assert_allclose(W, W_theirs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.components_, theirs.components_, rtol=1e-9, atol=1e-12)
    # KL's error is dnmf's objective at the state its last ratio was formed (half an iteration back).
    tolerance = 1e-9 if loss == "frobenius" else 0.01
    assert ours.reconstruction_err_ == pytest.approx(theirs.reconstruction_err_, rel=tolerance)
    if loss == "frobenius":  # reconstruction_err_ in scikit-learn's absolute convention
        assert ours.reconstruction_err_ == pytest.approx(np.linalg.norm(X - W @ ours.components_), rel=1e-6)


@pytest.mark.parametrize("solver", ["cd", "hals", "bpp", "mu"])
def test_every_solver_recovers_a_planted_factorisation(solver):
    X = planted(90, 70, 5, seed=3)
    model = dnmf.NMF(5, solver=solver, max_iter=3000, tol=1e-12, random_state=0, init="nndsvda")
    W = model.fit_transform(X)
    rel = np.linalg.norm(X - W @ model.components_) / np.linalg.norm(X)
    assert rel < (2e-2 if solver == "mu" else 1e-4)
    assert W.shape == (90, 5) and model.components_.shape == (5, 70)
    assert model.n_components_ == 5 and model.n_features_in_ == 70
    assert (W >= 0).all() and (model.components_ >= 0).all()


@pytest.mark.parametrize("solver", ["cd", "bpp"])
def test_extrapolation_recovers_a_planted_factorisation_and_is_refused_for_mu(solver):
    X = planted(90, 70, 5, seed=3)
    model = dnmf.NMF(5, solver=solver, max_iter=3000, tol=1e-12, random_state=0, init="nndsvda", extrapolate=True)
    W = model.fit_transform(X)
    assert np.linalg.norm(X - W @ model.components_) / np.linalg.norm(X) < 1e-4
    assert (W >= 0).all() and (model.components_ >= 0).all()
    assert model.get_params()["extrapolate"] is True
    with pytest.raises(dnmf.UsageError, match="extrapolation applies to hals and bpp, not to mu"):
        dnmf.NMF(5, solver="mu", extrapolate=True, max_iter=5).fit(X)


def test_penalties_follow_scikit_learns_scaling():
    X = planted(60, 40, 4, seed=4, noise=0.1)
    rng = np.random.default_rng(5)
    W0, H0 = rng.random((60, 4)) + 0.1, rng.random((4, 40)) + 0.1
    kwargs = dict(init="custom", solver="mu", max_iter=300, tol=0, alpha_W=0.01, alpha_H=0.02, l1_ratio=0.5)
    ours = dnmf.NMF(4, **kwargs)
    W = ours.fit_transform(X, W=W0.copy(), H=H0.copy())
    theirs = SkNMF(4, **kwargs)
    Ws = theirs.fit_transform(X, W=W0.copy(), H=H0.copy())

    def objective(W, H):
        n_samples, n_features = X.shape
        return (sklearn_loss(X, W, H) + 0.01 * n_features * (0.5 * W.sum() + 0.25 * (W ** 2).sum())
                + 0.02 * n_samples * (0.5 * H.sum() + 0.25 * (H ** 2).sum()))

    assert objective(W, ours.components_) == pytest.approx(objective(Ws, theirs.components_), rel=0.01)
    plain = dnmf.NMF(4, init="custom", solver="mu", max_iter=300, tol=0).fit(X, W=W0.copy(), H=H0.copy())
    assert ours.components_.sum() < plain.components_.sum()  # the penalty shrinks the factors


@pytest.mark.parametrize(
    "solver_kwargs",
    [dict(solver="hals"), dict(solver="mu"), dict(solver="mu", beta_loss="kullback-leibler"), dict(solver="bpp"),
     dict(solver="hals", extrapolate=True), dict(solver="bpp", extrapolate=True)],
    ids=["hals", "mu", "kl", "bpp", "hals-extrapolated", "bpp-extrapolated"],
)
def test_storage_orders_give_the_same_factors(solver_kwargs):
    X = planted(50, 30, 3, seed=6)
    X[X < np.quantile(X, 0.3)] = 0  # some zeros, so the sparse forms differ from the dense one in storage
    kwargs = dict(n_components=3, init="random", random_state=7, max_iter=100, tol=0, alpha_W=0.01, alpha_H=0.0,
                  **solver_kwargs)

    def fit(form):
        return dnmf.NMF(**kwargs).fit(form)

    # Column-major storage of X, and storage of Xᵀ (C order, CSC) that the library iterates on as X: the same
    # computation from the same W and H, up to the order of floating-point sums.
    forms = (np.asfortranarray(X), sp.csr_matrix(X), sp.csr_array(X), np.ascontiguousarray(X), sp.csc_matrix(X))
    models = [dnmf.NMF(**kwargs) for _ in forms]
    Ws = [model.fit_transform(f) for model, f in zip(models, forms)]
    for model, W in zip(models[1:], Ws[1:]):
        np.testing.assert_allclose(model.components_, models[0].components_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(W, Ws[0], rtol=1e-9, atol=1e-12)  # W as returned, whatever its memory order
        assert model.reconstruction_err_ == pytest.approx(models[0].reconstruction_err_, rel=1e-9)
    for model, W in zip(models, Ws):
        assert W.shape == (X.shape[0], 3) and model.components_.shape == (3, X.shape[1])
        if "beta_loss" not in solver_kwargs:  # KL's figure is its divergence, not this norm
            # The returned pair is the one the reported error is of.
            residual = np.linalg.norm(X - W @ model.components_)
            assert residual == pytest.approx(model.reconstruction_err_, rel=1e-9)
    if solver_kwargs != dict(solver="hals"):
        return
    exact = planted(50, 30, 3, seed=6)
    kwargs.update(max_iter=3000, tol=0, init="nndsvda")
    a, b = fit(np.asfortranarray(exact)), fit(np.ascontiguousarray(exact))
    Wa, Wb = a.transform(exact), b.transform(exact)
    assert np.linalg.norm(Wa @ a.components_ - Wb @ b.components_) < 1e-4 * np.linalg.norm(exact)


@pytest.mark.parametrize("init", ["nndsvd", "nndsvda"])
def test_nndsvd_starts_are_the_same_for_every_storage_order(init):
    # NNDSVD's randomised sketch was drawn on the stored side: C order and CSC (Xᵀ's storage) got another start
    # than F order and CSR, and fits that differed by far more than rounding.
    X = planted(60, 30, 4, seed=12, noise=0.2)
    forms = (np.asfortranarray(X), np.ascontiguousarray(X), sp.csr_matrix(X), sp.csc_matrix(X))
    models = [dnmf.NMF(4, init=init, random_state=0, max_iter=100, tol=0).fit(f) for f in forms]
    for model in models[1:]:
        np.testing.assert_allclose(model.components_, models[0].components_, rtol=1e-8, atol=1e-10)
        assert model.reconstruction_err_ == pytest.approx(models[0].reconstruction_err_, rel=1e-10)


def test_float32_stays_float32():
    X = planted(40, 30, 3, seed=8, dtype=np.float32)
    model = dnmf.NMF(3, random_state=0, max_iter=100)
    W = model.fit_transform(X)
    assert W.dtype == np.float32 and model.components_.dtype == np.float32
    assert model.transform(X).dtype == np.float32


def test_transform_is_exact_nonnegative_least_squares():
    X = planted(40, 25, 4, seed=9, noise=0.2)
    model = dnmf.NMF(4, solver="hals", random_state=0, max_iter=200).fit(X)
    Xnew = planted(7, 25, 4, seed=10, noise=0.2)
    W = model.transform(Xnew)
    for i in range(Xnew.shape[0]):
        expected, _ = nnls(model.components_.T, Xnew[i])
        np.testing.assert_allclose(W[i], expected, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(model.inverse_transform(W), W @ model.components_)
    np.testing.assert_allclose(model.transform(sp.csr_matrix(Xnew)), W, rtol=1e-9, atol=1e-12)


def test_transform_applies_the_w_penalties_as_scikit_learn_does():
    """scikit-learn's transform applies alpha_W / l1_ratio (scaled by n_features) to the rows it solves; dnmf's
    ignored them, so fit_transform(X) and transform(X) of a penalised model differed by 13%. Now a converged
    penalised fit's W is what transform(X) gives, as in scikit-learn, with and without a mask."""
    X = planted(150, 100, 5, seed=4, noise=0.01)
    for solver in ("cd", "bpp"):
        model = dnmf.NMF(5, solver=solver, init="nndsvda", alpha_W=0.01, l1_ratio=0.5, max_iter=3000, tol=1e-12)
        W = model.fit_transform(X)
        np.testing.assert_allclose(model.transform(X), W, rtol=1e-3, atol=1e-5 * W.max())
    sk = SkNMF(5, solver="cd", init="nndsvda", alpha_W=0.01, l1_ratio=0.5, max_iter=3000, tol=1e-12)
    W_sk = sk.fit_transform(X)
    # Both transforms of the same new rows on scikit-learn's components solve the same penalised problem.
    model.components_ = sk.components_
    np.testing.assert_allclose(model.transform(X[:20]), sk.transform(X[:20]), rtol=1e-4, atol=1e-7 * W_sk.max())
    mask = np.ones_like(X)
    mask[::7, ::3] = 0
    plain = dnmf.NMF(5, solver="bpp", alpha_W=0.0).fit(X)
    plain.components_ = sk.components_
    penalised = model.transform(X, mask=mask)
    assert not np.allclose(penalised, plain.transform(X, mask=mask), rtol=1e-3), "the penalties changed nothing"


def peak_numpy_bytes(call):
    """The peak of memory allocated through Python (numpy's arrays) while `call` runs."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("form", ["C", "F", "csr"])
def test_input_is_not_copied(form):
    X = planted(2000, 500, 4, seed=11)  # 8 MB
    X = {"C": np.ascontiguousarray, "F": np.asfortranarray, "csr": sp.csr_matrix}[form](X)
    model = dnmf.NMF(4, solver="hals", init="random", random_state=0, max_iter=2)
    peak = peak_numpy_bytes(lambda: model.fit(X))
    size = X.data.nbytes if form == "csr" else X.nbytes
    assert peak < size / 4, f"{peak} bytes allocated through numpy during fit of a {size}-byte input"


@pytest.mark.parametrize("form", ["C", "csc"])
def test_transform_does_not_copy_the_forms_it_reads_as_they_are(form):
    """docs/python.md: transform reads a C-order array and a CSC matrix as they are (its input check built boolean
    arrays over a dense X and a COO copy of a sparse one)."""
    X = planted(2000, 500, 4, seed=11)  # 8 MB
    model = dnmf.NMF(4, solver="hals", init="random", random_state=0, max_iter=2).fit(X)
    X = {"C": np.ascontiguousarray, "csc": sp.csc_matrix}[form](X)
    peak = peak_numpy_bytes(lambda: model.transform(X))
    size = X.data.nbytes if form == "csc" else X.nbytes
    assert peak < size / 4, f"{peak} bytes allocated through numpy during transform of a {size}-byte input"


def test_read_only_and_memory_mapped_input(tmp_path):
    X = planted(30, 20, 3, seed=12)
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    frozen = X.copy()
    frozen.flags.writeable = False
    a = dnmf.NMF(3, init="random", random_state=1, max_iter=50).fit(mapped)
    b = dnmf.NMF(3, init="random", random_state=1, max_iter=50).fit(frozen)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_other_dtypes_are_converted_once():
    X = (planted(30, 20, 3, seed=13) * 10).astype(np.int64)
    model = dnmf.NMF(3, random_state=0, max_iter=50).fit(X)
    assert model.components_.dtype == np.float64


@pytest.mark.parametrize("bad, error, match", [
    (lambda X: -X, ValueError, "negative"),
    (lambda X: np.where(X > 0.5, np.nan, X), ValueError, "NaN"),
    (lambda X: X.astype(np.complex128), (TypeError, ValueError), "[Cc]omplex"),
    (lambda X: X[0], ValueError, "2D"),
])
def test_bad_input_raises_with_the_librarys_message(bad, error, match):
    X = planted(20, 10, 2, seed=14)
    with pytest.raises(error, match=match):
        dnmf.NMF(2, max_iter=10).fit(bad(X))


def test_a_sparse_matrix_with_a_bad_structure_is_refused_by_the_library():
    # scipy builds this without checking index bounds; the library's Source check names the row and the index.
    indptr, indices = np.array([0, 2, 3, 4], dtype=np.int32), np.array([0, 7, 1, 2], dtype=np.int32)
    X = sp.csr_matrix((np.ones(4), indices, indptr), shape=(3, 5))
    with pytest.raises(dnmf.DataError, match="index 7 in row 0 is out of range 0..4"):
        dnmf.NMF(2, max_iter=5).fit(X)


def test_entries_whose_squares_overflow_are_a_numerical_error():
    with pytest.raises(dnmf.NumericalError, match="overflows.*rescale"):
        dnmf.NMF(1, init="random", max_iter=5).fit(np.full((4, 3), 1e300))


def test_rank_too_large_names_the_problem():
    X = planted(20, 10, 2, seed=15)
    with pytest.raises(dnmf.Error, match="rank"):
        dnmf.NMF(11, init="random", max_iter=10).fit(X)


def test_pickle_round_trip():
    X = planted(30, 20, 3, seed=16)
    model = dnmf.NMF(3, random_state=0, max_iter=50).fit(X)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.transform(X), model.transform(X))
    assert again.get_params() == model.get_params()


def test_callback_sees_every_iteration_and_can_stop():
    X = planted(30, 20, 3, seed=17)
    seen = []
    dnmf.NMF(3, max_iter=25, tol=0, callback=lambda it, err: seen.append((it, err))).fit(X)
    assert [it for it, _ in seen] == list(range(1, 26))
    assert all(b <= a * (1 + 1e-12) for (_, a), (_, b) in zip(seen[5:], seen[6:]))  # HALS never increases
    with pytest.raises(dnmf.Cancelled):
        dnmf.NMF(3, max_iter=100, tol=0, callback=lambda it, err: it == 3).fit(X)

    def broken(it, err):
        raise RuntimeError("callback broke")

    with pytest.raises(RuntimeError, match="callback broke"):
        dnmf.NMF(3, max_iter=100, callback=broken).fit(X)


def test_verbose_prints_the_clis_progress_lines(capsys):
    X = planted(30, 20, 3, seed=18)
    dnmf.NMF(3, max_iter=12, tol=0, verbose=1).fit(X)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("iter 1/12  rel_error ") and lines[-1].startswith("iter 12/12")


def test_threads_follow_n_threads_and_threadpoolctl():
    from threadpoolctl import threadpool_limits

    X = planted(60, 40, 3, seed=19)
    model = dnmf.NMF(3, max_iter=5, n_threads=1).fit(X)
    assert '"threads": 1' in model.report_
    with threadpool_limits(limits=1):
        model = dnmf.NMF(3, max_iter=5).fit(X)
    assert '"threads": 1' in model.report_


def test_feature_names_and_output_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(planted(20, 4, 2, seed=20), columns=["a", "b", "c", "d"])
    model = dnmf.NMF(2, max_iter=20).fit(X)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    assert list(model.get_feature_names_out()) == ["nmf0", "nmf1"]


def test_transform_names_a_bad_entry_where_it_is_in_x():
    X = planted(40, 30, 3, seed=4, noise=0.02)
    model = dnmf.NMF(3, random_state=0, max_iter=30).fit(X)
    bad = X[:5].copy()
    bad[2, 7] = -1.5
    # Without a mask every entry is observed: said as the fit and scikit-learn say it, not as "observed entry".
    with pytest.raises(dnmf.DataError, match=r"^Negative values in data passed to NMF \(input X\): X: entry at "
                                              r"row 2, column 7 \(0-based\) is -1.5; input must be finite and "
                                              r"non-negative$"):
        model.transform(bad)
    with pytest.raises(dnmf.DataError, match=r"^X: observed entry at row 2, column 7 \(0-based\) is -1.5"):
        model.transform(bad, missing="nan")
    bad[2, 7] = np.nan
    with pytest.raises(dnmf.DataError, match=r"row 2, column 7 \(0-based\) is NaN.*missing='nan'"):
        model.transform(bad)
    with pytest.raises(dnmf.DataError, match=r"row 2, column 7"):
        model.transform(sp.csr_matrix(np.where(np.isnan(bad), -1.0, bad)))


def test_a_wide_matrix_fits_at_the_default_rank():
    X = planted(12, 50, 3, seed=5, noise=0.02)
    model = dnmf.NMF(random_state=0, max_iter=20).fit(X)
    assert model.n_components_ == 12 and model.components_.shape == (12, 50)


def test_a_bad_custom_start_is_named_as_given():
    X = planted(30, 20, 3, seed=6, noise=0.02)
    rng = np.random.default_rng(0)
    W0, H0 = rng.random((30, 3)), rng.random((3, 20))
    for name, arrays in (("W", (W0, H0)), ("H", (H0, W0))):
        bad = arrays[0].copy()
        bad[2, 1] = np.nan if name == "W" else np.inf
        W, H = (bad, H0) if name == "W" else (W0, bad)
        with pytest.raises(ValueError, match=rf"input {name}\): initial {name}: entry at row 2, column 1 is"):
            dnmf.NMF(3, init="custom", max_iter=5).fit(X, W=W, H=H)


def test_kl_reconstruction_error_is_that_of_the_returned_factors():
    # sqrt(2 · KL(X ‖ WH)) of the W and H returned, computed here (scikit-learn's definition); the library's KL
    # figures during the iterations are half a step behind.
    X = planted(50, 40, 4, seed=7, noise=0.05)
    for iters in (1, 9):
        model = dnmf.NMF(4, solver="mu", beta_loss="kullback-leibler", max_iter=iters, tol=0, random_state=1)
        W = model.fit_transform(X)
        M = W @ model.components_
        kl = np.sum(X * np.log(X / M) - X + M)
        assert model.reconstruction_err_ == pytest.approx(np.sqrt(2 * kl), rel=1e-10)
        # With a mask: the weighted KL over the observed entries.
        mask = (np.random.default_rng(iters).random(X.shape) > 0.2).astype(float)
        W = model.fit_transform(X, mask=mask)
        M = W @ model.components_
        kl = np.sum(mask * (X * np.log(X / M) - X + M))
        assert model.reconstruction_err_ == pytest.approx(np.sqrt(2 * kl), rel=1e-10)
    # With penalties: still the divergence alone, as scikit-learn reports it (the library's objective adds them).
    model = dnmf.NMF(4, solver="mu", beta_loss="kullback-leibler", max_iter=9, tol=0, random_state=1,
                     alpha_W=0.01, alpha_H=0.02, l1_ratio=0.5)
    W = model.fit_transform(X)
    M = W @ model.components_
    kl = np.sum(X * np.log(X / M) - X + M)
    assert model.reconstruction_err_ == pytest.approx(np.sqrt(2 * kl), rel=1e-8)


def test_the_fit_does_not_depend_on_the_data_scale():
    # A multiple c·X is fitted to the same relative error (the divisions' guard scales with the data): at
    # c = 1e-12 the guard once exceeded MU's divisors and the factors came back zero.
    X = planted(40, 30, 3, seed=8, noise=0.02)
    # NNDSVDA (the default) too: its zeros are filled with sqrt(mean), the factors' scale (with the mean, as
    # scikit-learn fills them, c·X started elsewhere than X).
    for solver, init in itertools.product(("mu", "cd", "bpp"), ("random", "nndsvda")):
        errors = []
        for c in (1.0, 1e-12, 1e12):
            model = dnmf.NMF(3, solver=solver, max_iter=50, tol=0, random_state=3, init=init)
            W = model.fit_transform(c * X)
            errors.append(np.linalg.norm(c * X - W @ model.components_) / np.linalg.norm(c * X))
        assert errors[1] == pytest.approx(errors[0], rel=1e-8) and errors[2] == pytest.approx(errors[0], rel=1e-8)
        assert errors[0] < 0.1
