"""dnmf.NMFk: automatic selection of the number of components, as a scikit-learn estimator."""

import json
import numbers
import os

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._functions import _k_list, nmfk
from . import _core
from ._input import (as_float_matrix, check_callback, check_flag, check_max_iter, check_verbose, estimator_comm,
                     in_precision, input_attributes_kept_on_failure, library_error, preserved_dtypes, threads_of,
                     warn_user)
from ._nmf import _BETA_LOSSES, _SOLVERS, _is_beta_loss, _seed, check_components, project, project_kl
from ._results import plot_nmfk



class NMFk(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """NMFk (Alexandrov et al.; LANL's pyDNMFk): for every k of ``k_range``, ``n_perturbations`` factorisations
    of perturbed copies of X are clustered; k is accepted when the clusters are stable (minimum cosine
    silhouette ≥ ``sil_threshold``) and, with ``err_threshold``, the centroids still explain X. ``rule`` picks
    the reported k: 'silhouette' (the largest accepted k) or 'wilcoxon' (walk up the accepted k while the
    per-sample errors drop significantly).

    X is the CLI's A: the k columns of W (n_samples x k) are what is clustered across perturbations, and H
    (k x n_features, the regression on X with W fixed at the centroids) becomes ``components_``, as in NMF.

    After fit: ``k_`` (None when no k was accepted), ``best_candidate_``, ``decided_by_``, ``table_`` (per k:
    silhouettes, errors, accepted; ``table_.to_pandas()``), ``results_`` (the full per-k figures), ``W_`` and
    ``components_`` at the selected k (best candidate when none was accepted), ``n_components_``. ``plot()``
    draws the silhouettes and errors against k (matplotlib). ``transform`` projects new data on components_.

    ``cv=True`` also chooses k by cross-validation (``dnmf nmfk --cv``, docs/nmfk.md): ``cv_folds`` folds each
    hide a random ``cv_holdout`` fraction of the entries, every k is fitted on the rest with the same solver
    options and seed, and the hidden entries are scored. Then ``cv_k_`` (the smallest k whose mean held-out
    error is within one standard error of the lowest), ``cv_errors_`` and ``cv_standard_errors_`` (per k of
    ``cv_ks_``) and ``cv_fold_errors_`` (k x folds); the table gets their columns and ``plot()`` draws them.
    ``k_`` stays NMFk's choice. Without it these attributes are None. One process only.
    """

    def __init__(self, k_range=(2, 10), *, n_perturbations=20, epsilon=0.03, perturbation="uniform",
                 sil_threshold=0.75, err_threshold=None, rule="silhouette", wilcoxon_alpha=0.05,
                 accept_factor=2.0, solver="hals", beta_loss="frobenius", max_iter=1000, tol=1e-4, init="random",
                 random_state=None, checkpoint_dir=None, restart=False, groups=1, precision=None, backend="cpu",
                 n_threads=None, comm=None, verbose=0, callback=None, cv=False, cv_folds=5, cv_holdout=0.05):
        self.k_range = k_range
        self.n_perturbations = n_perturbations
        self.epsilon = epsilon
        self.perturbation = perturbation
        self.sil_threshold = sil_threshold
        self.err_threshold = err_threshold
        self.rule = rule
        self.wilcoxon_alpha = wilcoxon_alpha
        self.accept_factor = accept_factor
        self.solver = solver
        self.beta_loss = beta_loss
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.random_state = random_state
        self.checkpoint_dir = checkpoint_dir
        self.restart = restart
        self.groups = groups
        self.precision = precision
        self.backend = backend
        self.n_threads = n_threads
        self.comm = comm
        self.verbose = verbose
        self.callback = callback
        self.cv = cv
        self.cv_folds = cv_folds
        self.cv_holdout = cv_holdout

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = preserved_dtypes(self.precision)
        return tags

    def fit(self, X, y=None):
        """Runs NMFk on X (n_samples x n_features); returns self."""
        with input_attributes_kept_on_failure(self):
            return self._fit(X)

    def _fit(self, X):
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=[np.float64, np.float32],
                          ensure_all_finite=False, reset=True)
        X = as_float_matrix(X)
        if not isinstance(self.solver, str) or self.solver not in _SOLVERS or not _is_beta_loss(self.beta_loss):
            raise ValueError(f"Invalid solver/beta_loss: {self.solver!r}/{self.beta_loss!r}")
        if _BETA_LOSSES[self.beta_loss] == "kl" and self.solver != "mu":
            raise ValueError(f"Invalid beta_loss parameter: solver {self.solver!r} does not handle beta_loss = "
                             "'kullback-leibler'; use solver='mu' (as dnmf.NMF)")
        algorithm = "kl" if _BETA_LOSSES[self.beta_loss] == "kl" else _SOLVERS[self.solver]
        precision = self.precision if self.precision is not None else ("f32" if X.dtype == np.float32 else "f64")
        try:
            result = self._run(X, algorithm, precision)
        except _core.Error as error:
            raise library_error(error, "NMFk") from None
        if self.comm is not None and self.comm is not False:
            result = self.comm.bcast(result, root=0)
        self.k_ = result.k
        self.best_candidate_ = result.best_candidate
        self.decided_by_ = result.decided_by
        self.silhouette_k_ = result.silhouette_k
        self.wilcoxon_k_ = result.wilcoxon_k
        self.message_ = result.message
        self.table_ = result.table
        self.results_ = result.ranks
        chosen = result.ranks[result.k if result.k is not None else result.best_candidate]
        self.W_ = np.ascontiguousarray(result.W)
        self.components_ = np.ascontiguousarray(result.H)
        self.n_components_ = self.components_.shape[0]
        self.n_iter_ = int(max(chosen["perturbation_iterations"]))  # the longest factorisation at the chosen k
        cv = result.cv
        self.cv_k_ = result.cv_k
        self.cv_ks_ = None if cv is None else np.asarray(cv["ks"])
        self.cv_errors_ = None if cv is None else np.asarray(cv["mean"])
        self.cv_standard_errors_ = None if cv is None else np.asarray(cv["standard_error"])
        self.cv_fold_errors_ = None if cv is None else np.asarray(cv["fold_errors"])
        return self

    def _ks_that_fit(self, X):
        """k_range's ks up to min(n_samples, n_features), with a UserWarning naming those left out: the default
        (2, 10) refused every matrix smaller than 10 in either direction (scikit-learn's NMF takes any
        n_components); when none fits, a UsageError says so."""
        ks = _k_list(self.k_range)
        limit = min(X.shape)
        fitting = [k for k in ks if k <= limit]
        if ks and not fitting:
            raise _core.UsageError(f"NMFk: no k of k_range {self.k_range!r} fits X of {X.shape[0]} sample(s) and "
                                   f"{X.shape[1]} feature(s): every k must be <= min(n_samples, n_features) = "
                                   f"{limit}")
        if fitting and len(fitting) < len(ks):
            left_out = [k for k in ks if k > limit]
            named = ", ".join(map(str, left_out[:10])) + (f" and {len(left_out) - 10} more" if len(left_out) > 10
                                                          else "")
            warn_user(f"NMFk: k_range {self.k_range!r} goes beyond min(n_samples, n_features) = {limit} for "
                      f"this X ({X.shape[0]}x{X.shape[1]}); k = {named} left out", UserWarning)
            return fitting
        return ks

    def _check_params(self):
        """The estimator's own names in its messages (the library's were 'perturbations' and 'the Wilcoxon level'),
        and the flags checked as scikit-learn checks booleans."""
        n = self.n_perturbations
        if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 2:
            raise _core.UsageError("n_perturbations must be a whole number >= 2 (the silhouettes compare the factors "
                                   f"of different perturbations), got {n!r}")
        a = self.wilcoxon_alpha
        if not isinstance(a, numbers.Real) or isinstance(a, bool) or not 0 < a < 1:
            raise _core.UsageError(f"wilcoxon_alpha must be in (0, 1), got {a!r}")
        check_max_iter(self.max_iter)
        for name in ("restart", "cv"):
            check_flag(getattr(self, name), name)
        check_verbose(self.verbose)
        check_callback(self.callback)

    def _sweep_seed(self):
        """The sweep's seed. With checkpoint_dir and random_state=None, the seed of the checkpoints already there
        (their manifest's), so that a second fit resumes them: a fresh seed per fit refused them ("seed X -> Y"),
        and the fit interrupted was the one a checkpoint_dir is for. restart=True draws a fresh one."""
        if self.random_state is None and self.checkpoint_dir is not None and not self.restart:
            try:
                with open(os.path.join(os.fspath(self.checkpoint_dir), "manifest.json")) as manifest:
                    return int(json.load(manifest)["options"]["seed"])
            except (OSError, ValueError, KeyError, TypeError):
                pass  # none yet, or not one this version reads: a fresh seed, and the library judges the folder
        return _seed(self.random_state)

    def _run(self, X, algorithm, precision):
        self._check_params()
        return nmfk(X, self._ks_that_fit(X), perturbations=self.n_perturbations, epsilon=self.epsilon,
                    perturbation=self.perturbation, sil_threshold=self.sil_threshold,
                    err_threshold=self.err_threshold, rule=self.rule, wilcoxon_alpha=self.wilcoxon_alpha,
                    accept_factor=self.accept_factor, groups=self.groups, checkpoint_dir=self.checkpoint_dir,
                    restart=bool(self.restart), algorithm=algorithm, max_iter=self.max_iter, tol=self.tol,
                    init=self.init, seed=self._sweep_seed(), precision=precision, backend=self.backend,
                    n_threads=self.n_threads, comm=False if self.comm is None else estimator_comm(self.comm),
                    verbose=bool(self.verbose), callback=self.callback, cv=self.cv, cv_folds=self.cv_folds,
                    cv_holdout=self.cv_holdout)

    def transform(self, X):
        """W for new data on the selected components: exact non-negative least squares per sample, or for
        beta_loss='kullback-leibler' that divergence's minimum (as NMF.transform solves the model's own loss)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=[np.float64, np.float32],
                          ensure_all_finite=False, reset=False)
        # The dtype of components_: the asked precision's, as NMF.transform returns.
        X = in_precision(as_float_matrix(X), self.precision)
        check_components(self.components_, X.shape[1])  # named as they are, before the scaling below
        if _BETA_LOSSES[self.beta_loss] == "kl":
            return project_kl(X, self.components_, max_iter=self.max_iter, tol=self.tol, estimator="NMFk")
        # NMFk's W columns sum to 1, so components_ carry the data's scale (their Gram overflowed float32 for data
        # of 1e20 that fit had taken): the library scales each component by a power of two and W back, and
        # refuses coefficients beyond the type's range (scaled here in numpy, they came back as inf).
        return project(X, self.components_, self.backend, estimator="NMFk", threads=threads_of(self.n_threads))

    def plot(self, ax=None):
        """Silhouettes and relative error against k, the accepted ks and the selected k (matplotlib); with cv,
        the held-out error and cv_k_ too."""
        check_is_fitted(self)
        return plot_nmfk(self.table_, self.k_, ax=ax, threshold=self.sil_threshold, cv_k=self.cv_k_,
                         best_candidate=self.best_candidate_)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]
