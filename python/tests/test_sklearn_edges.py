"""Where a user moving from scikit-learn's NMF trips first: sparse W and masks in the methods that take dense
ones, the defaults with missing values, warnings scikit-learn gives, callbacks that misbehave, empty sparse
input, strided scipy arrays and nndsvdar's random_state."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls as scipy_nnls
from sklearn.decomposition import NMF as SkNMF

import dnmf
from conftest import planted


def test_transform_takes_a_sparse_mask_of_a_dense_x():
    rng = np.random.default_rng(0)
    X = planted(30, 20, 3, seed=1)
    M = (rng.random(X.shape) > 0.3).astype(float)
    model = dnmf.NMF(3, random_state=0).fit(X)
    dense = model.transform(X, mask=M)
    for mask in (sp.csr_matrix(M), sp.csc_matrix(M)):
        np.testing.assert_array_equal(model.transform(X, mask=mask), dense)


def test_inverse_transform_takes_a_sparse_w_as_scikit_learn_does():
    X = planted(30, 20, 3, seed=2)
    model = dnmf.NMF(3, random_state=0).fit(X)
    W = model.transform(X)
    W[W < np.median(W)] = 0
    expected = W @ model.components_
    for sparse in (sp.csr_matrix(W), sp.csc_matrix(W), sp.csr_array(W)):
        out = model.inverse_transform(sparse)
        assert isinstance(out, np.ndarray)
        np.testing.assert_allclose(out, expected, rtol=1e-14)
    with pytest.raises(TypeError, match="'X'"):
        model.inverse_transform()


def test_unstored_missing_runs_at_the_default_init_and_names_the_parameter_otherwise():
    S = sp.random(50, 40, density=0.3, random_state=0, format="csr")
    default = dnmf.NMF(3, random_state=0, max_iter=30).fit(S, unstored="missing")
    explicit = dnmf.NMF(3, init="random", random_state=0, max_iter=30).fit(S, unstored="missing")
    np.testing.assert_array_equal(default.components_, explicit.components_)
    with pytest.raises(ValueError, match="init='random'"):
        dnmf.NMF(3, init="nndsvda", random_state=0).fit(S, unstored="missing")


def test_a_callback_whose_answer_has_no_truth_value_raises_its_own_error():
    X = planted(30, 20, 3, seed=3)
    with pytest.raises(ValueError, match="truth value"):
        dnmf.NMF(3, callback=lambda i, e: np.array([1.0, 2.0])).fit(X)


def test_empty_sparse_input():
    S = sp.random(60, 40, density=0.2, random_state=0, format="csr")
    S = S[np.diff(S.indptr) > 0]
    model = dnmf.NMF(3, random_state=0).fit(S)
    empty_row = sp.csr_matrix(np.zeros((1, 40)))
    assert empty_row.nnz == 0
    np.testing.assert_array_equal(model.transform(empty_row), np.zeros((1, 3)))
    np.testing.assert_array_equal(model.transform(empty_row, unstored="missing"), np.zeros((1, 3)))
    with pytest.raises(dnmf.DataError, match="zeros"):
        dnmf.NMF(3).fit(sp.csr_matrix((20, 10)))


def test_strided_scipy_arrays_are_read_as_their_values():
    S = sp.random(40, 30, density=0.2, random_state=1, format="csr", dtype=np.float64)
    indices = np.empty(2 * S.nnz, dtype=np.int32)
    indices[::2] = S.indices
    values = np.empty(2 * S.nnz)
    values[::2] = S.data
    strided = sp.csr_matrix((values[::2], indices[::2], S.indptr), shape=S.shape, copy=False)
    assert strided.indices.strides != (4,) and strided.data.strides != (8,)
    a = dnmf.NMF(3, init="random", random_state=0, max_iter=20, tol=0).fit(S)
    b = dnmf.NMF(3, init="random", random_state=0, max_iter=20, tol=0).fit(strided)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_nndsvdar_follows_random_state_as_scikit_learn_does():
    X = np.random.default_rng(0).random((60, 40))
    options = dict(init="nndsvdar", solver="mu", max_iter=5, tol=0)
    ours = {seed: dnmf.NMF(5, random_state=seed, **options).fit(X).components_ for seed in (1, 2)}
    assert np.abs(ours[1] - ours[2]).max() > 1e-6
    theirs = SkNMF(5, random_state=1, **options).fit(X).components_
    np.testing.assert_allclose(ours[1], theirs, rtol=1e-9, atol=1e-12)


def test_w_and_h_without_init_custom_are_ignored_with_scikit_learns_warning():
    rng = np.random.default_rng(0)
    X = rng.random((60, 40))
    W0, H0 = rng.random((60, 5)), rng.random((5, 40))
    with pytest.warns(RuntimeWarning, match="init='custom'"):
        dnmf.NMF(5, max_iter=5).fit_transform(X, W=W0, H=H0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        dnmf.NMF(5, init="custom", max_iter=5).fit_transform(X, W=W0, H=H0)


def test_nmfk_refuses_kullback_leibler_with_a_solver_that_does_not_minimise_it():
    X = np.random.default_rng(0).random((40, 10))
    with pytest.raises(ValueError, match="solver='mu'"):
        dnmf.NMFk((2, 3), beta_loss="kullback-leibler", n_perturbations=2).fit(X)
    model = dnmf.NMFk((2, 3), solver="mu", beta_loss="kullback-leibler", n_perturbations=2, max_iter=20,
                      random_state=0).fit(X)
    assert model.k_ in (2, 3) or model.k_ is None


def test_degenerate_custom_starts_are_refused_as_scikit_learn_refuses_them():
    # An all-zero W or H is a fixed point of every solver: the fit returned an all-zero model with no word.
    X = planted(30, 20, 3, seed=2)
    for W, H, name in ((np.ones((30, 3)), np.zeros((3, 20)), "H"), (np.zeros((30, 3)), np.ones((3, 20)), "W")):
        for solver in ("mu", "cd", "bpp"):
            with pytest.raises(ValueError, match=rf"input {name}\) is full of zeros"):
                dnmf.NMF(3, init="custom", solver=solver).fit(X, W=W, H=H)
    with pytest.raises(TypeError, match="input W is a sparse matrix"):
        dnmf.NMF(3, init="custom").fit(X, W=sp.csr_matrix(np.ones((30, 3))), H=np.ones((3, 20)))


def test_a_negative_custom_start_entry_is_named_by_input_place_and_value():
    # The values of W and H are checked by the library (one vectorised pass); its message is headed as
    # scikit-learn's, naming the input, the entry's place and its value (NaN and inf: test_nmf).
    X = planted(30, 20, 3, seed=2)
    W, H = np.ones((30, 3)), np.ones((3, 20))
    bad_w = W.copy()
    bad_w[4, 2] = -0.5
    with pytest.raises(ValueError, match=r"input W\): .*row 4, column 2 is -0.5"):
        dnmf.NMF(3, init="custom").fit(X, W=bad_w, H=H)
    # Float32 factors too, and the estimator stays unfitted.
    model = dnmf.NMF(3, init="custom")
    with pytest.raises(ValueError, match=r"input W\)"):
        model.fit(X.astype(np.float32), W=bad_w.astype(np.float32), H=H.astype(np.float32))
    assert not hasattr(model, "components_")


def test_custom_start_errors_are_headed_alike_for_every_input_kind():
    # The library names some sources ("<memory>: initial W: ..."): the heading must not depend on X's layout.
    X = planted(30, 20, 3, seed=4)
    W, H = np.ones((30, 3)), np.ones((3, 20))
    bad_w = W.copy()
    bad_w[4, 2] = -0.5
    kinds = [(X, {}), (np.asfortranarray(X), {}), (sp.csr_matrix(X), {}), (sp.csc_matrix(X), {}),
             (X, {"mask": np.ones_like(X)}), (sp.csr_matrix(X), {"unstored": "missing"})]
    for Xi, kw in kinds:
        with pytest.raises(ValueError, match=r"^Negative or non-finite values in data passed to NMF \(input W\): "
                                             r".*row 4, column 2 is -0.5"):
            dnmf.NMF(3, init="custom").fit(Xi, W=bad_w, H=H, **kw)
        with pytest.raises(ValueError, match=r"^Array passed to NMF \(input H\) is full of zeros"):
            dnmf.NMF(3, init="custom").fit(Xi, W=W, H=np.zeros((3, 20)), **kw)


def test_custom_start_values_float32_cannot_hold_and_complex_starts_are_refused():
    X = planted(30, 20, 3, seed=4).astype(np.float32)
    W, H = np.ones((30, 3)), np.ones((3, 20))
    big = W.copy()
    big[3, 1] = 1e39  # was cast to inf and reported as "is inf"
    with pytest.raises(ValueError, match=r"input W: entry at row 3, column 1 .*too large for single precision"):
        dnmf.NMF(3, init="custom").fit(X, W=big, H=H)
    with pytest.raises(ValueError, match=r"input H: entry at row 0, column 0 .*underflows"):
        dnmf.NMF(3, init="custom").fit(X, W=W, H=np.full((3, 20), 1e-320))  # was "full of zeros"
    with pytest.raises(TypeError, match="complex"):
        dnmf.NMF(3, init="custom").fit(X, W=W + 1j, H=H)


def test_a_custom_start_far_from_the_datas_scale_is_rescaled_with_a_warning():
    # From W = H = 1e-150 MU returned an all-zero model marked converged; HALS did from 1e-10.
    # A start at X's scale times a power of two comes back to that start exactly: the same fit for every solver.
    X = planted(30, 20, 3, seed=4)
    rng = np.random.default_rng(1)
    W, H = rng.random((30, 3)), rng.random((3, 20))
    c = np.sqrt(X.mean() / (W.mean() * H.mean() * 3))
    W, H = c * W, c * H
    for solver in ("mu", "cd", "bpp"):
        base = dnmf.NMF(3, init="custom", solver=solver, max_iter=100, tol=0).fit(X, W=W, H=H)
        for scale in (2.0**-500, 2.0**-34, 2.0**34):
            with pytest.warns(UserWarning, match="W and H were multiplied by 2\\^"):
                model = dnmf.NMF(3, init="custom", solver=solver, max_iter=100, tol=0).fit(X, W=scale * W,
                                                                                       H=scale * H)
            assert model.reconstruction_err_ == pytest.approx(base.reconstruction_err_, rel=1e-12), (solver, scale)


def test_comm_true_is_refused_before_the_fit():
    # True (MPI's world for the functions) ran the whole fit and then failed on the estimator's broadcast.
    X = planted(30, 20, 3, seed=2)
    for estimator in (dnmf.NMF(3, comm=True), dnmf.NMFk((2, 3), n_perturbations=2, comm=True)):
        with pytest.raises(ValueError, match="comm must be an mpi4py communicator, None or False, got True"):
            estimator.fit(X)


def test_precision_is_honoured_by_nmfk_and_transform():
    X = planted(40, 30, 3, seed=4, noise=0.01)
    # NMFk converts to the asked precision (the library refused a matrix of the other one).
    converted = dnmf.NMFk((2, 4), n_perturbations=3, precision="f32", random_state=0).fit(X)
    given = dnmf.NMFk((2, 4), n_perturbations=3, random_state=0).fit(X.astype(np.float32))
    assert (converted.k_, converted.message_) == (given.k_, given.message_)
    result = dnmf.nmfk(X.astype(np.float32), "2:4", perturbations=3, precision="f64", seed=0)
    assert (result.k, result.message) == (dnmf.nmfk(X.astype(np.float32).astype(np.float64), "2:4", perturbations=3,
                                                    seed=0).k, result.message)
    # NMFk's transform too: components_ of the asked precision, and W in it.
    model = dnmf.NMFk((2, 3), n_perturbations=3, max_iter=30, n_threads=1, precision="f32", random_state=0).fit(X)
    assert model.transform(X).dtype == model.components_.dtype == np.float32
    # transform returns what fit_transform returns: the asked precision, not X's.
    for precision, data in (("f64", X.astype(np.float32)), ("f32", X)):
        fitted = dnmf.NMF(3, precision=precision, random_state=0, max_iter=50)
        assert fitted.fit_transform(data).dtype == fitted.transform(data).dtype == fitted.components_.dtype


def test_counts_and_seeds_of_the_wrong_kind_are_named():
    X = planted(40, 30, 3, seed=4, noise=0.01)
    assert dnmf.NMFk(3, n_perturbations=2, random_state=0).fit(X).k_ in (3, None)  # an int is one k
    for bad in ([2.7, 3.9], (2, 3.5)):
        with pytest.raises(ValueError, match="k_range must be whole numbers"):
            dnmf.NMFk(bad, n_perturbations=2).fit(X)
    with pytest.raises(TypeError, match="k_range must be"):
        dnmf.nmfk(X, object(), perturbations=2)
    # A tuple is (first, last); a third value could mean a step or one more k, so it is refused, not guessed.
    for bad in ((2, 6, 2), (3,)):
        with pytest.raises(ValueError, match=r"k_range as a tuple is a \(first, last\) pair"):
            dnmf.NMFk(bad, n_perturbations=2).fit(X)
    # Integers past what the library's options hold are values out of range, not values of the wrong type.
    for option, value in (("seed", -1), ("seed", 2**64), ("max_iter", 2**40)):
        with pytest.raises(ValueError, match=r"option '%s' must be in \[" % option):
            dnmf.factor(X, 3, **{option: value})
    with pytest.raises(ValueError, match="k must be whole numbers, got 2.9"):
        dnmf.factor(X, 2.9)
    with pytest.raises(ValueError, match="cv_folds must be whole numbers"):
        dnmf.nmfk(X, "2:3", perturbations=2, cv=True, cv_folds=2.5)
    with pytest.raises(ValueError, match=r"random_state must be in \[0, 2\*\*64 - 1\]"):
        dnmf.NMF(3, random_state=2**64).fit(X)
    assert dnmf.NMFk((2, 3), n_perturbations=2, restart=np.False_, random_state=0).fit(X).k_ is not None


def test_float32_data_too_small_for_its_products_is_refused():
    X = planted(40, 30, 3, seed=4, noise=0.01)
    with pytest.raises(dnmf.DataError, match="too small for float32"):
        dnmf.NMF(3, solver="mu").fit((X * 1e-30).astype(np.float32))
    # Above the bound the fit is that of the data at scale 1 (float32's rounding apart).
    small = dnmf.NMF(3, solver="mu", random_state=0, max_iter=300).fit((X * 1e-20).astype(np.float32))
    unit = dnmf.NMF(3, solver="mu", random_state=0, max_iter=300).fit(X.astype(np.float32))
    assert small.reconstruction_err_ * 1e20 == pytest.approx(unit.reconstruction_err_, rel=1e-3)


def test_float64_data_with_subnormal_squares_is_refused():
    # Entries of 1e-161 were accepted: their squares are subnormal, MU's iterates drifted 8% from the fit of the
    # same data at scale 1 and the reported error was 1% off. Refused now; 1e-140 fits as scale 1 does.
    X = planted(40, 30, 3, seed=4, noise=0.01)
    with pytest.raises(dnmf.DataError, match="smallest normal number"):
        dnmf.NMF(3, solver="mu").fit(X * 1e-161)
    small = dnmf.NMF(3, solver="mu", random_state=0, max_iter=100).fit(X * 1e-140)
    unit = dnmf.NMF(3, solver="mu", random_state=0, max_iter=100).fit(X)
    assert small.reconstruction_err_ * 1e140 == pytest.approx(unit.reconstruction_err_, rel=1e-9)


def test_nndsvdar_starts_from_the_observed_entries_only():
    # scikit-learn's nndsvdar initialiser got X as given: NaN (missing='nan') and negative hidden entries were
    # refused, and a hidden entry's value moved the start. Hidden entries are zeros for it now, as for NNDSVD.
    rng = np.random.default_rng(1)
    X = planted(40, 30, 3, seed=5, noise=0.05)
    observed = rng.random(X.shape) > 0.2

    def fit(data, **kwargs):
        return dnmf.NMF(3, init="nndsvdar", random_state=0, max_iter=30, tol=0).fit(data, **kwargs)

    reference = fit(np.where(observed, X, 0.0), mask=observed)
    for hidden in (-1.0, 1e6):
        model = fit(np.where(observed, X, hidden), mask=observed)
        np.testing.assert_array_equal(model.components_, reference.components_)
    model = fit(np.where(observed, X, np.nan), missing="nan")
    np.testing.assert_allclose(model.components_, reference.components_, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="not supported with unstored='missing'"):
        fit(sp.csr_matrix(X), unstored="missing")


def test_options_of_the_wrong_type_are_named():
    X = planted(20, 15, 2, seed=3)
    with pytest.raises(ValueError, match="Invalid solver parameter"):
        dnmf.NMF(2, solver=["mu"]).fit(X)  # unhashable: a bare TypeError from the table lookup before
    with pytest.raises(ValueError, match="Invalid beta_loss parameter"):
        dnmf.NMF(2, beta_loss=[1]).fit(X)
    with pytest.raises(ValueError, match="Invalid solver/beta_loss"):
        dnmf.NMFk((2, 3), solver={"mu"}).fit(X)


def test_float32_transform_refuses_what_float32_cannot_hold():
    # transform (and a mask) cast to float32 in Python: 1e-50 became 0 and 1e40 inf silently, or were reported as
    # "inf". The library's own narrowing refuses both, naming the entry; so does the package now.
    X = planted(30, 20, 3, seed=2)
    model = dnmf.NMF(3, precision="f32", max_iter=20, random_state=0).fit(X)
    for value, problem in ((1e-50, "too small for single precision"), (1e40, "too large for single precision")):
        Y = X.copy()
        Y[2, 3] = value
        with pytest.raises(dnmf.DataError, match=r"X: entry at row 2, column 3 \(0-based\).*" + problem):
            model.transform(Y)
        with pytest.raises(dnmf.DataError, match=r"X: entry at row 2, column 3 .*" + problem):
            model.transform(sp.csr_matrix(Y))
        with pytest.raises(dnmf.DataError, match=r"mask: entry at row 0, column 0 .*" + problem):
            model.transform(X.astype(np.float32), mask=np.full(X.shape, value))
        with pytest.raises(dnmf.DataError, match=r"mask: entry at row 0, column 0 .*" + problem):
            dnmf.NMF(3, precision="f32", max_iter=5).fit(X, mask=np.full(X.shape, value))
    # What float32 holds passes unchanged.
    np.testing.assert_allclose(model.transform(X), model.transform(X.astype(np.float32)), rtol=1e-6)


def test_nndsvdar_takes_any_seed_dnmf_takes():
    # Seeds from 2**32 up went to numpy as they were and were refused ("Seed must be between 0 and 2**32 - 1").
    X = planted(30, 20, 3, seed=6, noise=0.02)
    big = dnmf.NMF(3, init="nndsvdar", random_state=2**40, max_iter=5).fit(X)
    again = dnmf.NMF(3, init="nndsvdar", random_state=2**40, max_iter=5).fit(X)
    np.testing.assert_array_equal(big.components_, again.components_)
    other = dnmf.NMF(3, init="nndsvdar", random_state=2**40 + 1, max_iter=5).fit(X)
    assert not np.array_equal(big.components_, other.components_)



# A helper session's findings (2026-12-06): each was an AttributeError, a silent loss, a broken model or a
# nanobind signature dump.
def test_dok_and_lil_inputs_are_converted_and_complex_ones_refused():
    X = planted(40, 25, 3, seed=4)
    ones = np.ones(X.shape)
    model = dnmf.NMF(3, random_state=0)
    dense = model.fit_transform(X, mask=ones)
    for kind in (sp.dok_array, sp.dok_matrix, sp.lil_matrix):
        np.testing.assert_array_equal(dnmf.NMF(3, random_state=0).fit_transform(X, mask=kind(ones)), dense)
        np.testing.assert_array_equal(model.transform(X, mask=kind(ones)), model.transform(X, mask=ones))
        assert dnmf.factor(kind(X), 3, comm=False).rel_error == pytest.approx(dnmf.factor(X, 3, comm=False).rel_error)
    # LIL's .data is an object array of lists: its complex values had passed the check and lost their imaginary part.
    with pytest.raises(TypeError, match="complex"):
        dnmf.factor(sp.lil_matrix(X + 1j * X), 3, comm=False)
    with pytest.raises(TypeError, match="complex"):
        dnmf.NMF(3).fit(X, mask=sp.lil_matrix(ones + 5j))


def test_sparse_index_arrays_in_either_byte_order():
    X = sp.csr_matrix(planted(40, 25, 3, seed=5))
    swapped = X.copy()
    swapped.indices = swapped.indices.astype(">i4")
    swapped.indptr = swapped.indptr.astype(">i4")
    np.testing.assert_array_equal(dnmf.NMF(3, random_state=0).fit_transform(swapped),
                                  dnmf.NMF(3, random_state=0).fit_transform(X))


def test_a_refit_refused_for_a_parameter_leaves_the_fitted_model_usable():
    X = planted(40, 25, 3, seed=6)
    for bad in ({"solver": "bogus"}, {"n_components": -1}, {"precision": "f16"}, {"max_iter": 0}):
        model = dnmf.NMF(3, random_state=0).fit(X)
        before = model.transform(X)
        with pytest.raises(ValueError):
            model.set_params(**bad).fit(X[:10, :5])
        assert model.n_features_in_ == 25, bad
        model.set_params(solver="cd", n_components=3, precision=None, max_iter=200)
        np.testing.assert_array_equal(model.transform(X), before)


def test_nmfk_table_has_h_silhouettes_only_where_they_were_computed():
    X = planted(60, 40, 3, seed=7)
    fitted = dnmf.NMFk(k_range=(2, 4), n_perturbations=3, random_state=1, n_threads=1).fit(X)
    assert not any(name.startswith("h_") for name in fitted.table_), list(fitted.table_)
    # Nor in the per-k results (they held zeros there, for silhouettes never computed).
    for k, r in fitted.results_.items():
        assert not any(name.startswith("h_") for name in r), (k, sorted(r))
    with_h = dnmf.nmfk(X, "2:4", perturbations=3, h_silhouettes=True)
    assert with_h.table["h_min_silhouette"].shape == (3,)
    assert np.all(with_h.table["h_min_silhouette"] > 0)
    assert all(len(r["h_silhouettes"]) == r["k"] for r in with_h.ranks.values())


def test_nmfk_options_given_as_none_take_their_defaults():
    X = planted(60, 40, 3, seed=8)
    default = dnmf.nmfk(X, "2:4", perturbations=3, cv=True)
    nones = dnmf.nmfk(X, "2:4", perturbations=3, cv=True, cv_holdout=None, cv_folds=None, algorithm=None, init=None)
    assert nones.k == default.k
    np.testing.assert_array_equal(nones.table["cv_mean_heldout_error"], default.table["cv_mean_heldout_error"])
    with pytest.raises(dnmf.UsageError, match="cv_holdout must be a number"):
        dnmf.nmfk(X, "2:4", perturbations=3, cv=True, cv_holdout="5%")


def test_a_refused_nmfk_refit_leaves_the_fitted_model_usable():
    """NMFk reset n_features_in_ before its checks (and the library's): after a refused refit on other data the
    model refused the data it was fitted on ("X has 25 features, but NMFk is expecting 10")."""
    X = planted(40, 25, 2, seed=6)
    for bad in ({"rule": "foo"}, {"solver": "foo"}, {"n_perturbations": 1}, {"epsilon": -1.0}):
        model = dnmf.NMFk(k_range=(2, 3), n_perturbations=2, random_state=1, n_threads=1).fit(X)
        before = model.transform(X)
        good = {name: model.get_params()[name] for name in bad}
        with pytest.raises(ValueError):
            model.set_params(**bad).fit(X[:, :10])
        assert model.n_features_in_ == 25, bad
        model.set_params(**good)
        np.testing.assert_array_equal(model.transform(X), before)


def test_a_refit_failing_on_a_warning_raised_as_an_error_keeps_the_previous_fit():
    """Under filterwarnings=error the ConvergenceWarning came after components_ was set: the model held the new
    components_ (5 features) beside the old n_features_in_ (12), and transform refused both."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, Z = planted(30, 12, 3, seed=3), planted(30, 5, 3, seed=4)
    model = dnmf.NMF(n_components=3, random_state=0, max_iter=500).fit(X)
    before = model.transform(X)
    components = model.components_.copy()
    model.set_params(max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            model.fit(Z)
    assert model.n_features_in_ == 12 and model.components_.shape == (3, 12)
    np.testing.assert_array_equal(model.components_, components)
    np.testing.assert_array_equal(model.transform(X), before)


def test_nan_or_infinite_penalties_are_refused_naming_the_parameter():
    X = planted(20, 10, 2, seed=3)
    for name, value in (("alpha_W", np.nan), ("alpha_W", np.inf), ("alpha_H", np.nan), ("alpha_H", np.inf),
                        ("l1_ratio", np.nan)):
        with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0"):
            dnmf.NMF(n_components=2, **{name: value}).fit(X)


def test_nmfk_stopped_by_its_callback_says_what_was_kept(tmp_path):
    """The callback's stop raised "cancelled at iteration 1": neither where the sweep stopped nor that the finished
    jobs were checkpointed."""
    X = planted(40, 20, 2, seed=0)
    seen = []

    def stop_at_the_seventh(k, p, e):
        seen.append((k, p))
        return len(seen) == 7

    with pytest.raises(dnmf.Cancelled, match="checkpointed in .*ck.*restart=False resumes them"):
        dnmf.NMFk(k_range=(2, 5), n_perturbations=4, max_iter=50, random_state=0, n_threads=1,
                  callback=stop_at_the_seventh, checkpoint_dir=str(tmp_path / "ck")).fit(X)
    with pytest.raises(dnmf.Cancelled, match="nothing was kept"):
        seen.clear()
        dnmf.NMFk(k_range=(2, 5), n_perturbations=4, max_iter=50, random_state=0, n_threads=1,
                  callback=stop_at_the_seventh).fit(X)


def test_float32_data_too_large_for_its_products_is_refused_with_the_remedy():
    """float32 data of 1e38 (finite) came back as W = 0 with "converged", and of 1e30 as a "numerical breakdown"
    with no remedy; float64 data of 1e307 was called "NaN or infinite"."""
    X = planted(50, 30, 3, seed=4, noise=0.01)
    for scale in (1e30, 1e38 / X.max()):
        with pytest.raises(dnmf.DataError, match="too large for float32.*precision='f64'"):
            dnmf.NMF(3, solver="cd", init="random").fit((X * scale).astype(np.float32))
    with pytest.raises(dnmf.DataError, match="the sum of the entries is infinite") as raised:
        dnmf.NMF(3, solver="mu", init="random").fit(X * (1e307 / X.max()))
    assert "NaN" not in str(raised.value)
    big = dnmf.NMF(3, solver="mu", random_state=0, max_iter=300).fit((X * 1e15).astype(np.float32))
    unit = dnmf.NMF(3, solver="mu", random_state=0, max_iter=300).fit(X.astype(np.float32))
    assert big.reconstruction_err_ / 1e15 == pytest.approx(unit.reconstruction_err_, rel=1e-3)


def test_nmfks_nan_hint_names_no_cpp_function():
    X = planted(30, 20, 2, seed=6)
    X[3, 4] = np.nan
    with pytest.raises(ValueError) as raised:
        dnmf.NMFk(k_range=(2, 3), n_perturbations=2).fit(X)
    message = str(raised.value)
    assert "NMFk needs every entry" in message and "::" not in message and "--" not in message, message


def test_nmfk_leaves_out_the_ks_a_small_matrix_cannot_have():
    """NMFk's default k_range (2, 10) refused every matrix smaller than 10 either way (30 of scikit-learn's 48
    checks failed with "k=4 does not fit a 30x3 matrix"); the ks beyond min(n_samples, n_features) are left out
    with a warning naming them, and a k_range with no k that fits is refused saying why."""
    X = planted(30, 3, 2, seed=6)
    with pytest.warns(UserWarning, match=r"k = 4, 5, 6, 7, 8, 9, 10 left out"):
        model = dnmf.NMFk(n_perturbations=3, max_iter=100, n_threads=1, random_state=0).fit(X)
    assert list(model.table_["k"]) == [2, 3]
    assert model.components_.shape[1] == 3
    with pytest.raises(dnmf.UsageError, match=r"no k of k_range \(4, 6\) fits X of 30 sample\(s\) and 3 feature"):
        dnmf.NMFk(k_range=(4, 6), n_perturbations=3).fit(X)


def test_a_refit_that_fails_keeps_the_model_it_had():
    # validate_data resets n_features_in_ before the library runs: an exception from the callback (or Ctrl-C, or
    # bad data) left the new width beside the old components_, and transform then refused both datasets.
    rng = np.random.default_rng(3)
    A, B = rng.random((30, 20)), rng.random((30, 15))
    model = dnmf.NMF(3, max_iter=10, random_state=0).fit(A)
    expected = model.transform(A)

    def interrupt(iteration, rel_error):
        raise KeyboardInterrupt

    model.set_params(callback=interrupt)
    with pytest.raises(KeyboardInterrupt):
        model.fit(B)
    assert model.n_features_in_ == 20 and model.components_.shape == (3, 20)
    np.testing.assert_array_equal(model.transform(A), expected)
    with pytest.raises(dnmf.DataError):  # bad data, refused by the library after validate_data
        dnmf.NMF(3, max_iter=10).fit(A).fit(-B)
    fresh = dnmf.NMF(3, max_iter=10, callback=interrupt)
    with pytest.raises(KeyboardInterrupt):
        fresh.fit(B)
    assert not hasattr(fresh, "n_features_in_") and not hasattr(fresh, "components_")


def test_verbose_without_a_stderr_fits(monkeypatch):
    # sys.stderr is None under pythonw and in some daemons: the progress lines are dropped, as print's would be
    # (the write raised AttributeError and aborted the fit).
    X = planted(30, 20, 3, seed=4)
    monkeypatch.setattr("sys.stderr", None)
    model = dnmf.NMF(3, max_iter=3, verbose=1, random_state=0).fit(X)
    assert model.n_iter_ == 3
    nmfk = dnmf.NMFk(k_range=(2, 3), n_perturbations=2, max_iter=20, verbose=1, random_state=0).fit(X)
    assert len(nmfk.results_) == 2


def test_an_nmfk_callback_returning_true_stops_the_sweep():
    # As NMF's: a true answer stops the run with dnmf.Cancelled (NMFk ignored it and ran to the end).
    X = planted(30, 20, 3, seed=5)
    calls = []

    def stop(k, perturbation, rel_error):
        calls.append((k, perturbation))
        return True

    with pytest.raises(dnmf.Cancelled):
        dnmf.NMFk(k_range=(2, 4), n_perturbations=4, max_iter=50, random_state=0, n_threads=1, callback=stop).fit(X)
    assert 1 <= len(calls) < 12, calls


@pytest.mark.parametrize("bad, error", [(2.5, TypeError), ("2", TypeError), (True, TypeError),
                                        (-1, ValueError), (2**31, ValueError)])
def test_n_threads_is_checked_under_its_own_name(bad, error):
    X = planted(20, 15, 2, seed=6)
    for fit in (lambda: dnmf.NMF(2, max_iter=2, n_threads=bad).fit(X),
                lambda: dnmf.factor(X, 2, max_iter=2, n_threads=bad)):
        with pytest.raises(error, match="n_threads") as raised:
            fit()
        assert "'threads'" not in str(raised.value)


@pytest.mark.parametrize("params", [{"cv": "no"}, {"cv_folds": 0}, {"cv_holdout": 5}, {"cv_holdout": 0.0}])
def test_nmfk_cv_parameters_are_checked_with_cv_off(params):
    # The CLI refuses --cv-folds 0 without --cv; cv='no' turned cross-validation on (a true string).
    X = planted(20, 15, 2, seed=7)
    with pytest.raises(dnmf.UsageError, match=next(iter(params))):
        dnmf.NMFk(k_range=(2, 3), n_perturbations=2, max_iter=10, **params).fit(X)


def test_transform_of_a_kl_model_minimises_kl_as_scikit_learn_does():
    # transform solved least squares whatever the loss: a converged KL model's transform(X) was 0.1 from its own W
    # (scikit-learn's: 0.003). Its KL transform is convex in W; scikit-learn's own (update_H=False) is the
    # independent reference, from the same start with the same rule.
    from sklearn.decomposition import non_negative_factorization
    X = np.random.default_rng(0).random((40, 25))
    model = dnmf.NMF(4, solver="mu", beta_loss="kullback-leibler", max_iter=3000, tol=1e-12, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        W = model.fit_transform(X)
        reference, _, _ = non_negative_factorization(X, H=model.components_, update_H=False, n_components=4,
                                                     beta_loss="kullback-leibler", solver="mu", max_iter=3000,
                                                     tol=1e-12)
    T = model.transform(X)
    np.testing.assert_allclose(T, reference, rtol=1e-6, atol=1e-9)
    assert np.abs(T - W).max() < 1e-3 * W.max()
    assert np.abs(dnmf._nmf.project(X, model.components_, "cpu") - T).max() > 1e-2  # the old answer differs
    # The same problem as sparse input, and with missing values: hidden entries are never read, NaN-as-missing is
    # the mask, and unstored='missing' is the mask of the stored pattern.
    np.testing.assert_allclose(model.transform(sp.csr_matrix(X)), T, rtol=1e-10, atol=1e-12)
    M = (np.random.default_rng(1).random(X.shape) > 0.2).astype(float)
    masked = model.transform(X, mask=M)
    hidden = np.where(M == 0, 1e6, X)
    np.testing.assert_array_equal(model.transform(hidden, mask=M), masked)
    np.testing.assert_array_equal(model.transform(np.where(M == 0, np.nan, X), missing="nan"), masked)
    S = sp.random(40, 25, density=0.3, random_state=2, format="csr")
    sparse_model = dnmf.NMF(3, solver="mu", beta_loss="kullback-leibler", max_iter=300, random_state=0).fit(S)
    np.testing.assert_allclose(sparse_model.transform(S, unstored="missing"),
                               sparse_model.transform(S.toarray(), mask=(S.toarray() != 0).astype(float)),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("X", [np.zeros((5, 4)), sp.csr_matrix((5, 4))])
def test_nndsvdar_of_an_all_zero_matrix_says_the_matrix_is_zero(X):
    # scikit-learn's initialiser gives such X an all-zero start, which was refused as a bad "input W" the caller
    # never passed; the library's own message names the matrix, as with init='nndsvd'.
    with pytest.raises(dnmf.DataError, match="the matrix is all zeros: there is nothing to factorise"):
        dnmf.NMF(2, init="nndsvdar").fit(X)


# ---- Findings of a helper session (2026-12-07) ----------------------------------------------------------------

def test_a_huge_k_range_is_refused_as_the_cli_refuses_it():
    # (2, 10**6) built a million ks and a 7.9 MB warning; (2, 2**31) ran the machine out of memory.
    X = planted(20, 8, 2, seed=1)
    for k_range in ((2, 10**6), range(2, 2**31), list(range(1, 20002))):
        with pytest.raises(dnmf.UsageError, match="values; at most 10000 are taken"):
            dnmf.NMFk(k_range=k_range, n_perturbations=2, max_iter=5).fit(X)
    with pytest.raises(dnmf.UsageError, match="at most 10000"):
        dnmf.nmfk(X, (2, 2**31))
    with pytest.warns(UserWarning, match=r"k = 9, 10, 11, 12, 13, 14, 15, 16, 17, 18 and 32 more left out"):
        dnmf.NMFk(k_range=(2, 50), n_perturbations=2, max_iter=5).fit(X)


def test_nndsvdar_with_a_random_state_instance_starts_where_scikit_learn_does():
    # The library's seed was drawn from the RandomState before scikit-learn's initialiser drew from it.
    X = np.random.default_rng(0).random((30, 12))
    for solver in ("mu", "cd"):
        options = dict(n_components=4, init="nndsvdar", solver=solver, max_iter=1, tol=0)
        ours = dnmf.NMF(random_state=np.random.RandomState(0), **options).fit_transform(X)
        theirs = SkNMF(random_state=np.random.RandomState(0), **options).fit_transform(X)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_numpy_scalars_are_beta_losses():
    X = planted(12, 8, 2, seed=2)
    for beta in (np.int64(2), np.float32(1.0), np.int32(1)):
        model = dnmf.NMF(2, solver="mu", beta_loss=beta, max_iter=5).fit(X)
        assert model.n_iter_ >= 1
        assert dnmf.NMFk(k_range=(2, 2), n_perturbations=2, solver="mu", beta_loss=beta, max_iter=5).fit(X).k_ in (2, None)
    with pytest.raises(ValueError, match="beta_loss"):
        dnmf.NMF(2, solver="mu", beta_loss=True).fit(X)


def test_nmfk_transform_names_nmfk_and_no_option_it_lacks():
    rng = np.random.default_rng(0)
    model = dnmf.NMFk(k_range=(2, 3), n_perturbations=3, n_threads=1, max_iter=50).fit(rng.random((20, 8)))
    X = rng.random((5, 8))
    X[2, 5] = np.nan
    with pytest.raises(dnmf.DataError, match=r"is NaN; input must be finite and non-negative$"):
        model.transform(X)
    X[2, 5] = -1.0
    with pytest.raises(dnmf.DataError, match=r"^Negative values in data passed to NMFk \(input X\)"):
        model.transform(X)


@pytest.mark.parametrize("estimator, params, name", [
    (dnmf.NMF, {"extrapolate": "False"}, "extrapolate"),
    (dnmf.NMF, {"shuffle": "x"}, "shuffle"),
    (dnmf.NMF, {"verbose": -1}, "verbose"),
    (dnmf.NMF, {"verbose": "x"}, "verbose"),
    (dnmf.NMF, {"callback": 3}, "callback"),
    (dnmf.NMF, {"max_iter": 2**31}, r"max_iter must be a whole number from 1 to 2147483647"),
    (dnmf.NMFk, {"restart": "x"}, "restart"),
    (dnmf.NMFk, {"n_perturbations": 1.5}, "n_perturbations"),
    (dnmf.NMFk, {"n_perturbations": 1}, "n_perturbations"),
    (dnmf.NMFk, {"wilcoxon_alpha": 0}, "wilcoxon_alpha"),
    (dnmf.NMFk, {"verbose": -1}, "verbose"),
])
def test_parameters_are_checked_and_named(estimator, params, name):
    X = planted(12, 8, 2, seed=3)
    base = {"k_range": (2, 2), "n_perturbations": 2} if estimator is dnmf.NMFk else {"n_components": 2}
    with pytest.raises(ValueError, match=name):
        estimator(**{**base, "max_iter": 5, **params}).fit(X)


def test_a_converged_l1_fit_with_dead_components_has_w_equal_to_its_transform():
    # HALS left a dead component's column of W as it was; under an L1 penalty its minimum is 0, which transform(X)
    # gives: the fit's W kept stale values up to 0.42 (the penalised objective 13.32 against transform's 12.08).
    from sklearn.datasets import make_blobs
    from sklearn.preprocessing import StandardScaler
    X, _ = make_blobs(n_samples=30, centers=[[0, 0, 0], [1, 1, 1]], random_state=0, n_features=2, cluster_std=0.1)
    X = StandardScaler().fit_transform(X)
    X -= X.min()
    model = dnmf.NMF(alpha_W=0.1, l1_ratio=1.0, solver="cd", random_state=0, max_iter=5000, tol=1e-12)
    W = model.fit_transform(X)
    dead = np.abs(model.components_).sum(axis=1) == 0
    assert dead.any()  # the case this test is about
    assert np.all(W[:, dead] == 0)
    np.testing.assert_allclose(W, model.transform(X), atol=1e-5)


def test_nmfk_with_a_checkpoint_dir_and_no_random_state_resumes_its_checkpoints(tmp_path):
    # Each fit drew a fresh seed, so the second fit refused the first's checkpoints ("seed X -> Y"); it takes the
    # seed of the checkpoints already there, and gives the same result from them.
    X = planted(30, 20, 3, seed=9, noise=0.02)
    options = dict(k_range=(2, 3), n_perturbations=2, max_iter=50, checkpoint_dir=tmp_path / "ck")
    first = dnmf.NMFk(**options).fit(X)
    second = dnmf.NMFk(**options).fit(X)
    np.testing.assert_array_equal(first.components_, second.components_)
    # restart=True draws afresh (and discards them), as documented.
    dnmf.NMFk(restart=True, **options).fit(X)


def test_warnings_name_the_callers_line():
    # Fixed stacklevels named dnmf's own files when an estimator called a function that warns (NMFk's k_range
    # warning pointed at _nmfk.py); every warning now names the line that called dnmf.
    X = planted(30, 12, 3, seed=4)
    calls = [lambda: dnmf.NMFk(k_range=(2, 8), n_perturbations=2, random_state=0, max_iter=50).fit(X[:, :5]),
             lambda: dnmf.NMF(3, solver="mu", max_iter=2, tol=1e-12, random_state=0).fit(X),
             lambda: dnmf.NMF(3, solver="mu", max_iter=2, tol=1e-12, random_state=0).fit_transform(X)]
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught, "no warning"
        for w in caught:
            assert w.filename == __file__, (str(w.message), w.filename)


def test_nmfk_warnings_and_errors_name_keywords():
    # The library's messages name the CLI's flags; warnings and the output folder's error were not translated.
    X = planted(40, 20, 3, seed=5) + 0.25
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dnmf.NMFk(k_range=(2, 3), n_perturbations=2, perturbation="poisson", random_state=0, max_iter=50).fit(X)
    texts = [str(w.message) for w in caught if "count data" in str(w.message)]
    assert texts and all("perturbation='uniform'" in t and "--perturbation" not in t for t in texts), texts
    with pytest.raises(dnmf.UsageError, match=r"output_dir='out'") as raised:
        dnmf.nmfk(X, (2, 3), perturbations=2, output_dir=".")
    assert "-o" not in str(raised.value)


def test_kl_transform_of_a_sparse_x_never_forms_the_dense_product():
    # The model's sum was (W @ H).sum(): a 50000x20000 X that fitted in 0.25 s could not be transformed (7.5 GiB).
    import tracemalloc
    rng = np.random.default_rng(0)
    m, n, nnz = 2000, 1500, 10000
    X = sp.csr_matrix((rng.random(nnz) + 0.1, (rng.integers(0, m, nnz), rng.integers(0, n, nnz))), shape=(m, n))
    model = dnmf.NMF(3, solver="mu", beta_loss="kullback-leibler", init="random", random_state=0, max_iter=30,
                     n_threads=1).fit(X)
    tracemalloc.start()
    try:
        W = model.transform(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * m * n / 10, f"the KL transform of a {nnz}-entry CSR peaked at {peak / 1e6:.1f} MB"
    # The same W as the dense computation of the same objective.
    dense = model.transform(X.toarray())
    assert np.allclose(W, dense, rtol=1e-9, atol=1e-12)


def test_kl_transform_refuses_what_the_frobenius_transform_refuses():
    X = planted(30, 12, 3, seed=6)
    models = [dnmf.NMF(3, solver="mu", beta_loss=loss, max_iter=30, random_state=0).fit(X)
              for loss in ("frobenius", "kullback-leibler")]
    for model in models:
        with pytest.raises(ValueError, match="missing must be None or 'nan'"):
            model.transform(X[:5], missing="yes")
        with pytest.raises(dnmf.UsageError, match="applies to a sparse matrix"):
            model.transform(X[:5], unstored="missing")
        with pytest.raises(dnmf.UsageError, match="is not one of: zero, missing"):
            model.transform(sp.csr_matrix(X[:5]), unstored="yes")


def test_float32_transform_of_sparse_x_takes_a_list_mask():
    X = planted(30, 12, 3, seed=7)
    model = dnmf.NMF(3, solver="mu", max_iter=30, random_state=0, precision="f32").fit(X)
    mask = np.ones((5, 12))
    mask[1, 3] = 0
    from_array = model.transform(sp.csr_matrix(X[:5]), mask=mask)
    from_list = model.transform(sp.csr_matrix(X[:5]), mask=mask.tolist())
    np.testing.assert_array_equal(from_list, from_array)


def test_storage_order_gives_one_pair_where_components_die():
    # A C-order X (factored as its transpose) was normalised twice: where L1 killed a component of W, its H row
    # kept a sum of 1 and the objective that row's penalty, another pair than the Fortran-order X's.
    rng = np.random.default_rng(0)
    rng.random((40, 30))
    X = rng.random((40, 4)) @ rng.random((4, 30)) + 0.01 * rng.random((40, 30))
    for k, penalties, iterations in ((6, {"l1_w": 5.0, "l2_h": 1.0}, 50), (3, {"l1_w": 50.0, "l2_h": 100.0}, 8)):
        runs = [dnmf.factor(layout(X), k, algorithm="mu", max_iter=iterations, tol=0, penalties=penalties)
                for layout in (np.ascontiguousarray, np.asfortranarray, sp.csc_matrix, sp.csr_matrix)]
        for other in runs[1:]:
            np.testing.assert_allclose(runs[0].W, other.W, rtol=0, atol=1e-12)
            np.testing.assert_allclose(runs[0].H, other.H, rtol=0, atol=1e-12 * np.abs(other.H).max())
        dead = runs[1].W.sum(axis=0) == 0
        if dead.any():
            assert np.all(runs[0].H[dead].sum(axis=1) < 1e-100), runs[0].H[dead].sum(axis=1)


def test_float32_kl_checks_the_column_sums_in_any_storage_order():
    # Row sums near 2e37, column sums near 2e34: accepted (a C-order X had its row sums checked as column sums
    # and was refused, and an unnormalised fit, the estimator's, was refused for the normalised H's sake).
    X = (np.random.default_rng(0).random((4, 4000)) * 1e34).astype(np.float32)
    errors = [dnmf.factor(layout(X), 2, algorithm="kl", max_iter=5, tol=0).rel_error
              for layout in (np.asfortranarray, np.ascontiguousarray)]
    assert np.isfinite(errors).all() and abs(errors[0] - errors[1]) < 1e-5, errors
    W = dnmf.NMF(2, solver="mu", beta_loss="kullback-leibler", init="random", max_iter=5, tol=0,
                 random_state=0).fit_transform(X)
    assert np.isfinite(W).all()
    # The transpose has column sums near 2e37: refused, naming them.
    with pytest.raises(dnmf.DataError, match="mean column sum"):
        dnmf.factor(np.ascontiguousarray(X.T), 2, algorithm="kl", max_iter=5, tol=0)


LOCALE_SCRIPT = r'''
import locale, sys, json, os
import numpy as np
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
assert locale.localeconv()["decimal_point"] == ","
import dnmf
out = {}
work = sys.argv[1]
big = os.path.join(work, "big.mtx")
with open(big, "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5e400\n2 2 2\n")
try:
    dnmf.factor_file(big, 1, max_iter=5)
    out["big"] = "accepted"
except dnmf.DataError as error:
    out["big"] = str(error)
X = np.random.default_rng(0).random((30, 20))
out["budget"] = dnmf.parse_bytes("1.5G") if hasattr(dnmf, "parse_bytes") else None
np.save(os.path.join(work, "A.npy"), X)
r = dnmf.factor_file(os.path.join(work, "A.npy"), 2, max_iter=5, memory_budget="1.5G")
out["budget_fit"] = r.rel_error
result = dnmf.nmfk_file(os.path.join(work, "A.npy"), "2:3", perturbations=2, max_iter=20, epsilon=0.03,
                        checkpoint_dir=os.path.join(work, "ckpt"), output_dir=os.path.join(work, "out"))
with open(os.path.join(work, "ckpt", "manifest.json")) as f:
    out["epsilon"] = json.load(f)["options"]["epsilon"]
with open(os.path.join(work, "out", "nmfk.json")) as f:
    out["message"] = json.load(f)["selection"]["message"]
print(json.dumps(out))
'''


def test_a_decimal_comma_locale_changes_no_figure(tmp_path):
    # Python's setlocale reaches the library's C calls: strtod stopped at '.', so 1.5e400 in a .mtx was read as 1
    # and memory_budget '1.5G' refused; NMFk's manifest wrote 0.029999999999999999 for 0.03 (another locale's run
    # then refused the checkpoints); printf put commas in messages.
    import json
    import os
    import subprocess
    import sys
    locales = tmp_path / "locales"
    locales.mkdir()
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(locales / "de_DE.UTF-8")],
                          capture_output=True)
    if made.returncode != 0 or not (locales / "de_DE.UTF-8").exists():
        pytest.skip("no de_DE locale can be built here (localedef: %r)" % made.stderr[-200:])
    env = dict(os.environ, LOCPATH=str(locales))
    done = subprocess.run([sys.executable, "-c", LOCALE_SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "too large for double precision" in out["big"], out
    assert out["budget"] in (None, int(1.5 * 2**30)), out
    assert 0 < out["budget_fit"] < 1, out
    assert out["epsilon"] == "0.03", out
    assert "," not in out["message"].replace(", ", " "), out


def test_a_start_too_large_for_memory_names_its_size():
    """W and H that cannot be allocated were "initial W and H: out of memory while reading" (nothing was read)."""
    with open("/proc/sys/vm/overcommit_memory") as f:
        if f.read().strip() != "0":
            pytest.skip("needs the kernel's heuristic overcommit (mode 0), which refuses an allocation beyond memory")
    n = 100000
    rows = np.arange(n) * 2
    S = sp.csr_matrix((np.ones(n), (rows, rows % n)), shape=(200000, n))
    with pytest.raises(dnmf.Error, match=r"initial W and H: out of memory while allocating them \(112 GiB .* k = "
                                         r"50000\); use a smaller k"):
        dnmf.NMF(n_components=50000, init="random", max_iter=2, solver="mu").fit(S)


def test_mu_from_nndsvd_warns_as_scikit_learn_does():
    """NNDSVD's zeros are fixed points of MU: scikit-learn warns, dnmf fitted silently."""
    X = planted(30, 20, 3, seed=2)
    with pytest.warns(UserWarning, match="cannot update zeros present in the initialization"):
        dnmf.NMF(3, solver="mu", init="nndsvd", max_iter=20).fit(X)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        dnmf.NMF(3, solver="mu", init="nndsvda", max_iter=20, tol=0).fit(X)


def test_kl_transform_is_finite_where_a_feature_has_no_component():
    # A KL fit of data with an all-zero column gives components_[:, j] = 0 exactly; a new row with a count of 4 or
    # more there came back all NaN (x / q overflowed with q floored at float64's smallest normal number, then
    # inf · 0). That feature's model value is 0 whatever W is: it cannot move W, so the row is the one without it.
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(40, 20)).astype(float)
    X[:, 5] = 0
    model = dnmf.NMF(3, solver="mu", beta_loss="kullback-leibler", random_state=0, max_iter=200).fit(X)
    assert np.all(model.components_[:, 5] == 0)
    new = np.ones((4, 20))
    new[:, 5] = [0, 3, 4, 10]
    for form in (new, sp.csr_matrix(new)):
        W = model.transform(form)
        assert np.isfinite(W).all(), W
        np.testing.assert_allclose(W[1:], np.repeat(W[:1], 3, axis=0), rtol=1e-12)


def test_transforms_check_the_mask_shape_and_the_components():
    X = planted(30, 10, 3, seed=8)
    for loss in ("frobenius", "kullback-leibler"):
        model = dnmf.NMF(3, solver="mu", beta_loss=loss, max_iter=30, random_state=0).fit(X)
        # A (1, n) mask was broadcast to every row by the KL transform; other shapes failed inside numpy.
        for form in (np.asarray, sp.csr_matrix):
            with pytest.raises(ValueError, match=r"mask has shape \(1, 10\), X has shape \(5, 10\)"):
                model.transform(form(X[:5]), mask=form(np.ones((1, 10))))
        # A bad entry of components_ is named there: the KL transform returned NaN, the Frobenius one called the
        # basis "W" with the row and column swapped.
        for bad in (-1.0, np.nan, np.inf):
            broken = dnmf.NMF(3, solver="mu", beta_loss=loss, max_iter=30, random_state=0).fit(X)
            broken.components_[1, 6] = bad
            with pytest.raises(dnmf.DataError, match=r"components_: entry at row 1, column 6 \(0-based\)"):
                broken.transform(X[:5])
            with pytest.raises(dnmf.DataError, match=r"components_: entry at row 1, column 6"):
                broken.transform(X[:5], mask=np.ones((5, 10)))
        narrow = dnmf.NMF(3, solver="mu", beta_loss=loss, max_iter=30, random_state=0).fit(X)
        narrow.components_ = narrow.components_[:, :5]
        with pytest.raises(ValueError, match=r"components_ has shape \(3, 5\); X has 10 features"):
            narrow.transform(X[:5])


def test_nmfk_transform_of_float32_data_at_1e20_and_of_a_kl_model():
    # NMFk's W columns sum to 1, so components_ carry the data's scale: their float32 Gram overflowed for data of
    # 1e20 that fit had taken ("nnls_bpp: G has an infinite value"). And a KL model's transform solved least
    # squares, where NMF.transform solves the model's own loss.
    X = planted(60, 40, 4, seed=9)
    big = (X * 1e20).astype(np.float32)
    model = dnmf.NMFk(k_range=(2, 4), n_perturbations=3, max_iter=50, random_state=1).fit(big)
    W = model.transform(big)
    assert W.dtype == np.float32 and np.isfinite(W).all()
    residual = np.linalg.norm(big.astype(float) - W.astype(float) @ model.components_.astype(float))
    exact = [scipy_nnls(model.components_.astype(float).T, row)[0] for row in big.astype(float)]
    best = np.linalg.norm(big.astype(float) - np.array(exact) @ model.components_.astype(float))
    assert residual <= best * (1 + 1e-4), (residual, best)
    kl = dnmf.NMFk(k_range=(2, 3), n_perturbations=3, max_iter=100, random_state=1, solver="mu",
                   beta_loss="kullback-leibler").fit(X)
    H = kl.components_

    def divergence(W):
        M = np.maximum(W @ H, 1e-300)
        return (X * np.log(np.where(X > 0, X, 1) / M) - X + M).sum()

    by_kl = divergence(kl.transform(X))
    by_least_squares = divergence(np.array([scipy_nnls(H.T, row)[0] for row in X]))
    assert by_kl < by_least_squares, (by_kl, by_least_squares)


def test_nmfk_transform_refuses_coefficients_float32_cannot_hold_as_nmf_does():
    # NMFk scaled its components in numpy and W back: coefficients beyond float32's range came back as inf with a
    # RuntimeWarning, where NMF.transform raises. The library scales them now, and refuses such W for both.
    X = (np.random.default_rng(3).random((30, 2)) @ np.random.default_rng(4).random((2, 20))).astype(np.float32)
    model = dnmf.NMFk(k_range=(2, 2), n_perturbations=2, max_iter=50, random_state=0, n_threads=1).fit(X)
    model.components_[1] *= np.float32(1e-30)
    with pytest.raises(dnmf.NumericalError, match="exceed float32's range"):
        model.transform(X * np.float32(1e10))
    W = model.transform(X)  # coefficients of 1e30 fit float32: as large as the component is small
    assert np.isfinite(W).all() and W[:, 1].max() > 1e28


def test_nmfk_transform_names_nmfk_and_the_bad_component_as_it_is():
    X = planted(40, 12, 3, seed=10)
    for loss, solver in (("frobenius", "hals"), ("kullback-leibler", "mu")):
        model = dnmf.NMFk(k_range=(2, 3), n_perturbations=2, max_iter=50, random_state=1, solver=solver,
                          beta_loss=loss).fit(X)
        bad = X[:3].copy()
        bad[1, 2] = np.nan
        with pytest.raises(dnmf.DataError) as raised:
            model.transform(bad)
        assert "missing='nan'" not in str(raised.value), str(raised.value)  # NMFk.transform takes no missing values
        bad[1, 2] = -1.0
        with pytest.raises(dnmf.DataError, match="NMFk"):
            model.transform(bad)
        model.components_[1, 6] = -1.0
        with pytest.raises(dnmf.DataError, match=r"components_: entry at row 1, column 6 \(0-based\) is -1\.0;"):
            model.transform(X[:3])
