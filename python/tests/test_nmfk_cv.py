"""dnmf.NMFk(cv=True): the cross-validated k beside NMFk's, its per-k held-out errors, the table and the plot."""
import numpy as np
import pytest

import dnmf
from conftest import planted


def one_standard_error_k(ks, means, standard_errors):
    """The rule written out: the smallest k whose mean is within one standard error of the lowest mean."""
    best = int(np.argmin(means))
    return next(k for k, m in zip(ks, means) if m <= means[best] + standard_errors[best])


@pytest.fixture(scope="module")
def fitted():
    X = planted(60, 50, 3, seed=5, noise=0.02)
    return dnmf.NMFk(k_range=(2, 5), n_perturbations=4, random_state=1, n_threads=1, cv=True, cv_folds=3,
                     cv_holdout=0.1).fit(X)


def test_cv_finds_the_planted_rank(fitted):
    assert fitted.k_ == 3
    assert fitted.cv_k_ == 3
    np.testing.assert_array_equal(fitted.cv_ks_, [2, 3, 4, 5])
    assert fitted.cv_fold_errors_.shape == (4, 3)
    np.testing.assert_allclose(fitted.cv_errors_, fitted.cv_fold_errors_.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(fitted.cv_standard_errors_,
                               fitted.cv_fold_errors_.std(axis=1, ddof=1) / np.sqrt(3), rtol=1e-9)
    assert fitted.cv_k_ == one_standard_error_k(fitted.cv_ks_, fitted.cv_errors_, fitted.cv_standard_errors_)
    # Too few components leave far more error on the hidden entries than the noise.
    assert fitted.cv_errors_[0] > 3 * fitted.cv_errors_[1]


def test_cv_columns_in_the_table_and_the_plot(fitted):
    np.testing.assert_array_equal(fitted.table_["cv_mean_heldout_error"], fitted.cv_errors_)
    assert "cv_standard_error" in fitted.table_.to_pandas().columns
    assert "cv_mean_heldout_error" in repr(fitted.table_)
    import matplotlib

    matplotlib.use("Agg")
    ax = fitted.plot()
    labels = [line.get_label() for axes in ax.figure.axes for line in axes.get_lines()]
    assert "CV k = 3" in labels
    # The third axis, right of the second, fits in the figure (its ticks and label were cut off by savefig).
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    width = ax.figure.bbox.width
    for axes in ax.figure.axes:
        assert axes.get_tightbbox(renderer).x1 <= width + 1, (axes.get_tightbbox(renderer), width)
    np.testing.assert_array_equal(ax.get_xticks(), [2, 3, 4, 5])


def test_a_single_k_is_ticked_as_a_whole_number():
    import matplotlib

    matplotlib.use("Agg")
    X = planted(30, 20, 2, seed=6)
    model = dnmf.NMFk(k_range=[3], n_perturbations=3, random_state=1, n_threads=1).fit(X)
    np.testing.assert_array_equal(model.plot().get_xticks(), [3])  # were 2.8, 2.85, ..., 3.2


def test_without_cv_the_attributes_are_none():
    X = planted(30, 20, 2, seed=6)
    model = dnmf.NMFk(k_range=(2, 3), n_perturbations=3, random_state=1, n_threads=1).fit(X)
    assert model.cv_k_ is None and model.cv_errors_ is None and model.cv_standard_errors_ is None
    assert "cv_mean_heldout_error" not in model.table_


def test_bad_cv_options_are_refused():
    X = planted(30, 20, 2, seed=6)
    # The library's messages name the keywords from Python (they said --cv-folds, --cv-holdout).
    with pytest.raises(dnmf.UsageError, match="cv_folds") as folds:
        dnmf.NMFk(k_range=(2, 3), n_perturbations=2, cv=True, cv_folds=0).fit(X)
    with pytest.raises(dnmf.UsageError, match="cv_holdout") as holdout:
        dnmf.NMFk(k_range=(2, 3), n_perturbations=2, cv=True, cv_holdout=1.5).fit(X)
    assert "--" not in str(folds.value) and "--" not in str(holdout.value), (folds.value, holdout.value)


def test_a_holdout_that_empties_rows_warns():
    X = planted(30, 20, 2, seed=6)
    with pytest.warns(RuntimeWarning, match="smaller hold-out fraction"):
        model = dnmf.NMFk(k_range=(2, 3), n_perturbations=2, random_state=1, n_threads=1, max_iter=20, cv=True,
                          cv_folds=2, cv_holdout=0.95).fit(X)
    assert model.cv_k_ in (2, 3)
    with pytest.warns(RuntimeWarning, match="at most"):
        result = dnmf.nmfk(X, (2, 3), perturbations=2, seed=1, n_threads=1, max_iter=20, cv=True, cv_folds=2,
                           cv_holdout=0.95)
    emptied = result.cv["emptied_rows_per_fold"], result.cv["emptied_cols_per_fold"]
    assert len(emptied[0]) == len(emptied[1]) == 2 and max(emptied[0]) + max(emptied[1]) > 0, emptied


def test_an_ordinary_holdout_does_not_warn(fitted, recwarn):
    X = planted(30, 20, 2, seed=6)
    dnmf.NMFk(k_range=(2, 3), n_perturbations=2, random_state=1, n_threads=1, cv=True, cv_folds=2,
              cv_holdout=0.05).fit(X)
    assert not [w for w in recwarn if "hold-out" in str(w.message)]


def test_an_nmfk_callback_blocks_neither_other_calls_nor_an_nmfk_it_runs():
    # The jobs' bookkeeping ran under a named `omp critical`, one lock for the whole process, with the callback
    # inside it: another thread's NMFk waited for this call's callback, and a callback running NMFk deadlocked.
    import threading
    rng = np.random.default_rng(0)
    A, B = rng.random((100, 80)), rng.random((90, 70))
    a_waiting, b_done = threading.Event(), threading.Event()
    waited = []

    def wait_for_b(k, p, err):
        if not waited:  # A's first finished job: its callback waits, inside A's bookkeeping, until B has run
            a_waiting.set()
            waited.append(b_done.wait(timeout=30))

    a = threading.Thread(target=lambda: dnmf.nmfk(A, "2:3", perturbations=2, max_iter=50, n_threads=2,
                                                   callback=wait_for_b))
    a.start()
    assert a_waiting.wait(timeout=60)
    dnmf.nmfk(B, "2:3", perturbations=2, max_iter=50, n_threads=2)
    b_done.set()
    a.join()
    assert waited == [True], "B waited for A's callback"

    inner = []

    def run_nmfk(k, p, err):
        if not inner:
            inner.append(dnmf.nmfk(B, "2:3", perturbations=2, max_iter=50, n_threads=2).table is not None)

    done = []
    t = threading.Thread(target=lambda: done.append(dnmf.nmfk(A, "2:3", perturbations=2, max_iter=50, n_threads=2,
                                                               callback=run_nmfk)))
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "an NMFk run from an NMFk callback deadlocked"
    assert inner == [True] and len(done) == 1

