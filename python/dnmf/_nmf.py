"""dnmf.NMF: a drop-in for sklearn.decomposition.NMF on dnmf's C++ solvers."""

import json
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._input import (as_dtype, as_float_matrix, check_callback, check_flag, check_max_iter, check_verbose,
                     comm_handle, estimator_comm, in_precision, input_attributes_kept_on_failure, library_error,
                     missing_options, preserved_dtypes, source_of, threads_of, warn_report_warnings,
                     warn_user)

_SOLVERS = {"mu": "mu", "cd": "hals", "hals": "hals", "bpp": "bpp"}
# 2 and 1 also match 2.0 and 1.0 (equal numbers hash alike).
_BETA_LOSSES = {"frobenius": "frobenius", 2: "frobenius", "kullback-leibler": "kl", 1: "kl"}


def _seed(random_state):
    """An integer random_state is the library's seed as it is (the CLI's --seed draws the same start; the
    estimator's run differs, see docs/python.md); None or a RandomState draws one."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if not 0 <= random_state < 2**64:  # the library's seed is 64 bits
            raise ValueError(f"random_state must be in [0, 2**64 - 1], got {random_state}")
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def _hidden_as_zero(X, mask, missing):
    """X with its missing entries (weight 0 in `mask`, or NaN with missing='nan') as zeros: what NNDSVD starts
    from with missing values (the library's NNDSVD takes W∘A), for scikit-learn's nndsvdar initialiser, which
    refused NaN and negative hidden entries and let hidden values move the start."""
    if mask is None and missing is None:
        return X
    dense = X.toarray() if hasattr(X, "toarray") else np.array(X, dtype=np.float64 if X.dtype.kind != "f" else X.dtype)
    hidden = np.isnan(dense) if missing == "nan" else np.zeros(dense.shape, dtype=bool)
    if mask is not None:
        weights = mask.toarray() if hasattr(mask, "toarray") else np.asarray(mask)
        if weights.shape != dense.shape:
            raise ValueError(f"mask has shape {weights.shape}, X has shape {dense.shape}")
        hidden |= weights == 0
    dense[hidden] = 0
    return dense


def _hidden_stored_as_zero(X, mask):
    """A copy of the sparse X whose stored entries that `mask` hides (weight 0) hold zero: _hidden_as_zero's
    sparse case, which keeps X sparse."""
    X = X.tocsr(copy=True)
    if not hasattr(mask, "shape"):  # a list of lists, as the other paths take it
        mask = as_float_matrix(mask)
    if mask.shape != X.shape:
        raise ValueError(f"mask has shape {mask.shape}, X has shape {X.shape}")
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    weights = mask.tocsr()[rows, X.indices] if hasattr(mask, "tocsr") else np.asarray(mask)[rows, X.indices]
    X.data[np.asarray(weights).ravel() == 0] = 0
    return X


def project(X, components, backend, l1=0.0, l2=0.0, estimator="NMF", threads=0):
    """W ≥ 0 minimising ½‖X − W components‖²_F + l1 ΣW + ½ l2 ‖W‖², each row exactly (block principal pivoting),
    in X's precision."""
    # Checked here, not only in the library, so that a bad entry is named where it is in X (the library sees Xᵀ).
    # NMFk.transform takes no missing values: its messages name NMFk and do not point to missing='nan'.
    _check_masked_input(X, None, None, None, estimator=estimator, missing_hint=estimator == "NMF")
    check_components(components, X.shape[1])
    basis = np.asfortranarray(components.T, dtype=X.dtype)
    # The library solves H for A ≈ W H with W fixed; here A = Xᵀ, whose column-major storage is X's C order
    # (the CSR of Xᵀ is the CSC of X).
    Xt = X.tocsc().T if hasattr(X, "tocsc") else np.ascontiguousarray(X).T
    Wt, _ = _core.transform(source_of(Xt), basis, backend, l1, l2, threads)
    return np.ascontiguousarray(Wt.T)


# The library's floor under KL's model values (backend::kl_model_floor). With float64's smallest normal number in
# its place a count of 4 or more over a model value of 0 (a feature the components never use) overflowed x / q to
# inf, and inf times that feature's zero components made the whole row NaN.
_KL_MODEL_FLOOR = 1e-30


def check_components(components, n_features):
    """The fitted basis a transform reads: n_features columns, every entry finite and >= 0, a bad one named where it
    is in components_ (the library sees its transpose and calls it W, which a Python user knows as the output)."""
    if components.ndim != 2 or components.shape[1] != n_features:
        raise ValueError(f"components_ has shape {components.shape}; X has {n_features} features")
    if not _all_finite_non_negative(components):
        _first_bad(components, ~(np.isfinite(components) & (components >= 0)), "components_: entry",
                   "; the components must be finite and >= 0")


def project_kl(X, components, l1=0.0, l2=0.0, max_iter=200, tol=1e-4, mask=None, missing=None, unstored=None,
               estimator="NMF"):
    """W ≥ 0 minimising the generalised KL divergence Σ w (x log(x/q) − x + q), q = (W components)_ij, over the
    observed entries (weights w: 1, the mask's, 0 where missing), plus l1 ΣW + ½ l2 ‖W‖², with components fixed:
    the transform of a model fitted with beta_loss='kullback-leibler', as scikit-learn's transform solves its own
    loss. The problem is convex in W, and the multiplicative updates (the fit's own rule, with H held) approach
    its minimum from scikit-learn's start for a transform (every entry sqrt(mean of observed X / k)); they stop
    when the objective's relative fall per iteration, measured over 10 iterations, is below tol, or after
    max_iter. A row with no observed entry gets zeros. Computed in float64, returned in X's dtype."""
    # The refusals of the Frobenius transform (project_masked and the library): here a typo had fitted every entry.
    if missing not in (None, "nan"):
        raise ValueError(f"missing must be None or 'nan', got {missing!r}")
    if unstored not in (None, "zero", "missing"):
        raise _core.UsageError(f"unstored {unstored!r} is not one of: zero, missing")
    if unstored == "missing" and not hasattr(X, "tocoo"):
        raise _core.UsageError("X: unstored='missing' applies to a sparse matrix; this one is dense (use mask=... "
                               "or missing='nan')")
    weights = None if mask is None else as_float_matrix(mask)
    if weights is not None and weights.shape != X.shape:  # as project_masked: numpy had broadcast a (1, n) mask
        raise ValueError(f"mask has shape {weights.shape}, X has shape {X.shape}")
    # NMFk.transform takes no missing values: its messages name NMFk and do not point to missing='nan'.
    _check_masked_input(X, weights, missing, unstored, estimator=estimator, missing_hint=estimator == "NMF")
    check_components(np.asarray(components), X.shape[1])
    H = np.asarray(components, dtype=np.float64)
    k = H.shape[0]
    sparse = hasattr(X, "tocsr")
    if mask is not None or missing == "nan" or not sparse:
        # Dense arithmetic: the weights of every entry (the mask's, or observed = not NaN, or all ones).
        x = np.asarray(X.toarray() if sparse else X, dtype=np.float64)
        omega = np.ones(x.shape) if mask is None else np.asarray(
            mask.toarray() if hasattr(mask, "toarray") else mask, dtype=np.float64)
        if missing == "nan":
            omega = np.where(np.isnan(x), 0.0, omega)
        if sparse and unstored == "missing":  # only the stored entries are observed (explicit zeros too)
            stored = X.tocsr()
            pattern = np.zeros(x.shape, dtype=bool)
            pattern[np.repeat(np.arange(x.shape[0]), np.diff(stored.indptr)), stored.indices] = True
            omega = np.where(pattern, omega, 0.0)
        x = np.where(omega > 0, x, 0.0)
        observed_mean = (omega * x).sum() / max(omega.sum(), 1.0)
        wx = omega * x

        def ratio_products(W):
            q = np.maximum(W @ H, _KL_MODEL_FLOOR)
            return (wx / q) @ H.T, q

        def objective(W, q):
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = np.where(wx > 0, wx * np.log(np.where(x > 0, x, 1.0) / q), 0.0)
            return logs.sum() - wx.sum() + (omega * q).sum()

        denominator = omega @ H.T
    else:
        # Sparse X without weights: the model is formed at the stored entries only; every entry counts in Σ q.
        x = X.tocsr().astype(np.float64)
        x.sum_duplicates()
        rows = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
        cols = x.indices
        if unstored == "missing":
            pattern = x.copy()
            pattern.data[:] = 1.0
            denominator = np.asarray(pattern @ H.T)
            observed_mean = x.data.sum() / max(len(x.data), 1)
        else:
            denominator = np.broadcast_to(H.sum(axis=1), (x.shape[0], k))
            observed_mean = x.data.sum() / (x.shape[0] * x.shape[1])

        def ratio_products(W):
            q = np.maximum(np.einsum("ij,ji->i", W[rows], H[:, cols]), _KL_MODEL_FLOOR)
            r = x.copy()
            r.data = x.data / q
            return np.asarray(r @ H.T), q

        def objective(W, q):
            positive = x.data > 0
            logs = (x.data[positive] * np.log(x.data[positive] / q[positive])).sum()
            # Σ (WH) over every entry is (Σ_i W_i)·(Σ_j H_j): (W @ H).sum() formed the dense m × n product.
            model = W.sum(axis=0) @ H.sum(axis=1) if unstored != "missing" else q.sum()
            return logs - x.data.sum() + model

    W = np.full((X.shape[0], k), np.sqrt(max(observed_mean, 0.0) / k))
    denominator = np.asarray(denominator) + l1

    def penalised(W, q):
        return objective(W, q) + l1 * W.sum() + 0.5 * l2 * np.vdot(W, W)

    previous = None
    for iteration in range(max_iter):
        numerator, q = ratio_products(W)
        if iteration % 10 == 0:
            current = penalised(W, q)
            if previous is not None and tol > 0 and (previous - current) <= 10 * tol * abs(current):
                break
            previous = current
        W *= numerator / np.maximum(denominator + l2 * W, np.finfo(np.float64).tiny)
    return W.astype(X.dtype, copy=False)


def _transposed(X):
    """Xᵀ as the library's column-major A (the same bytes as X's C order; the CSR of Xᵀ is X's CSC)."""
    return X.tocsc().T if hasattr(X, "tocsc") else np.ascontiguousarray(X).T


def _is_beta_loss(value):
    """A beta_loss dnmf computes: 'frobenius'/'kullback-leibler' or 2/1 as any real number, numpy's included (a
    grid from np.arange gave np.int64(2), refused as unsupported); not a bool."""
    known = isinstance(value, str) or (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)))
    return known and value in _BETA_LOSSES


def _first_bad(values, bad, what, why="", nan_hint="", negative_prefix=""):
    """DataError naming the first bad entry in X's orientation (the library sees Xᵀ and would name it swapped);
    `nan_hint` is added when that entry is NaN, `negative_prefix` put first when it is negative."""
    if hasattr(values, "tocoo"):
        coo = values.tocoo()
        at = np.flatnonzero(bad)
        i, j, v = int(coo.row[at[0]]), int(coo.col[at[0]]), coo.data[at[0]]
    else:
        i, j = (int(x) for x in np.argwhere(bad)[0])
        v = values[i, j]
    prefix = negative_prefix if v < 0 else ""
    shown = "NaN" if np.isnan(v) else v  # as the library writes it (and scikit-learn's checks look for)
    raise _core.DataError(f"{prefix}{what} at row {i}, column {j} (0-based) is {shown}{why}"
                          f"{nan_hint if np.isnan(v) else ''}")


def _all_finite_non_negative(values):
    """Every value finite and >= 0, by two reductions that allocate nothing (NaN fails both comparisons)."""
    return values.size == 0 or (bool(values.min() >= 0) and bool(np.isfinite(values.max())))


def _check_masked_input(X, weights, missing, unstored, estimator="NMF", missing_hint=True):
    """The checks the library makes, with places in X's orientation: weights finite and >= 0; observed entries
    of X finite and >= 0 (a hidden entry may hold anything; without a mask, missing or unstored every entry is
    observed)."""
    sparse = hasattr(X, "tocoo")
    # Without a mask, missing or unstored values every entry is observed: said as the fit says it (scikit-learn's
    # "Negative values in data passed to" first), not in terms of observed entries.
    if weights is None and missing is None and unstored in (None, "zero"):
        what, why, prefix = "X: entry", "; input must be finite and non-negative", \
            f"Negative values in data passed to {estimator} (input X): "
    else:
        what, why, prefix = "X: observed entry", "; observed entries must be finite and >= 0", ""
    if weights is not None:
        w = weights.tocoo().data if hasattr(weights, "tocoo") else weights
        bad = ~(np.isfinite(w) & (w >= 0))
        if bad.any():
            _first_bad(weights, bad, "mask: weight", "; weights must be finite and >= 0 (0 = missing)")
    if sparse:
        # Stored entries are the ones that can be observed and non-zero (unstored ones are zeros or missing). A
        # CSR or CSC matrix's own values, in the order tocoo() gives them (_first_bad places a bad one through
        # it): tocoo() here copied the whole matrix for every transform.
        data = X.data if getattr(X, "format", None) in ("csr", "csc") else X.tocoo().data
        if weights is None and missing is None and _all_finite_non_negative(data):
            return
        observed = np.ones(data.shape, bool)
        if missing == "nan":
            observed &= ~np.isnan(data)
        if weights is not None:
            coo = X.tocoo()
            observed &= np.asarray(weights.tocsr()[coo.row, coo.col]).ravel() > 0 if hasattr(weights, "tocsr") \
                else weights[coo.row, coo.col] > 0
        bad = observed & ~(np.isfinite(data) & (data >= 0))
        if bad.any():
            _first_bad(X, bad, what, why, negative_prefix=prefix)
        return
    if weights is None and missing is None and _all_finite_non_negative(X):
        return  # no bad entry: the masks below are for placing one
    if weights is None:
        observed = np.ones(X.shape, bool)
    elif hasattr(weights, "toarray"):  # a sparse mask of a dense X: its unstored weights are 0 (missing)
        observed = weights.toarray() > 0
    else:
        observed = np.asarray(weights) > 0
    if missing == "nan":
        observed &= ~np.isnan(X)
    bad = observed & ~(np.isfinite(X) & (X >= 0))
    if bad.any():
        _first_bad(X, bad, what, why,
                   " (missing='nan' takes NaN entries as missing)" if missing is None and missing_hint else "",
                   negative_prefix=prefix)


def project_masked(X, components, backend, mask=None, missing=None, unstored=None, l1=0.0, l2=0.0, threads=0):
    """project() fitting only the observed entries of each row of X (docs/masked.md): ``mask`` (X's shape, 0 =
    missing, > 0 = weight), ``missing='nan'`` (NaN entries are missing), ``unstored='missing'`` (sparse X: only
    stored entries). A row with no observed entry gets zeros."""
    if missing not in (None, "nan"):
        raise ValueError(f"missing must be None or 'nan', got {missing!r}")
    basis = np.asfortranarray(components.T, dtype=X.dtype)
    mask_source = None
    if mask is not None:
        weights = as_dtype(as_float_matrix(mask), X.dtype, "mask")
        if weights.shape != X.shape:
            raise ValueError(f"mask has shape {weights.shape}, X has shape {X.shape}")
        mask_source = source_of(_transposed(weights))
    _check_masked_input(X, weights if mask is not None else None, missing, unstored)
    check_components(components, X.shape[1])
    Wt, _, _ = _core.transform_masked(source_of(_transposed(X)), basis, mask_source, missing == "nan",
                                      unstored or "zero", backend, l1, l2, threads)
    return np.ascontiguousarray(Wt.T)


class NMF(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Non-negative matrix factorisation X ≈ W H, computed by dnmf's C++ library.

    The parameters, attributes and methods are those of ``sklearn.decomposition.NMF`` (same defaults), so that
    it can replace it in a pipeline; the solvers are dnmf's:

    - ``solver='mu'``: multiplicative updates (Frobenius, or KL with ``beta_loss='kullback-leibler'``);
    - ``solver='cd'`` or ``'hals'``: hierarchical alternating least squares (exact coordinate updates, the
      same updates as scikit-learn's coordinate descent, without shuffling);
    - ``solver='bpp'``: alternating non-negative least squares by block principal pivoting.

    ``tol`` is dnmf's rule: stop when the objective's relative change over one iteration falls below it.
    ``transform`` solves W for new data exactly (non-negative least squares by block principal pivoting).

    dnmf's own parameters: ``precision`` ('f32', 'f64' or None: the input's float dtype, float64 otherwise),
    ``backend`` ('cpu', 'cuda', 'reference'), ``n_threads`` (None: OpenMP's default, which threadpoolctl limits
    control), ``memory_budget`` (bytes, accepted for the file functions; an in-memory X is held already),
    ``comm`` (an mpi4py communicator: fit on its processes' 2-D grid, each slicing its block of X; every process
    ends with the fitted model), ``grid`` ('auto' or 'PRxPC') and ``callback`` (called as
    ``callback(iteration, rel_error)`` after every iteration; returning True stops the fit with
    ``dnmf.Cancelled``), ``extrapolate`` (True: the first half of each iteration reads the other factor pushed
    along its last step, with a step size adapted to the objective: fewer iterations to a given error for 'bpp'
    and, on some problems, 'cd'/'hals'; other iterates than scikit-learn's; not for 'mu', nor with missing
    values; docs/algorithms.md, "Extrapolation").
    """

    def __init__(self, n_components="auto", *, init=None, solver="cd", beta_loss="frobenius", tol=1e-4,
                 max_iter=200, random_state=None, alpha_W=0.0, alpha_H="same", l1_ratio=0.0, verbose=0,
                 shuffle=False, precision=None, backend="cpu", n_threads=None, memory_budget=None, comm=None,
                 grid="auto", callback=None, extrapolate=False):
        self.n_components = n_components
        self.init = init
        self.solver = solver
        self.beta_loss = beta_loss
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.l1_ratio = l1_ratio
        self.verbose = verbose
        self.shuffle = shuffle
        self.precision = precision
        self.backend = backend
        self.n_threads = n_threads
        self.memory_budget = memory_budget
        self.comm = comm
        self.grid = grid
        self.callback = callback
        self.extrapolate = extrapolate

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = preserved_dtypes(self.precision)
        return tags

    # ---------------------------------------------------------------- checks
    def _algorithm(self):
        if not isinstance(self.solver, str) or self.solver not in _SOLVERS:
            raise ValueError(f"Invalid solver parameter: got {self.solver!r} instead of one of "
                             f"{sorted(_SOLVERS)}")
        if not _is_beta_loss(self.beta_loss):
            raise ValueError(f"Invalid beta_loss parameter: got {self.beta_loss!r}; dnmf supports 'frobenius' "
                             "and 'kullback-leibler'")
        loss = _BETA_LOSSES[self.beta_loss]
        if loss == "kl":
            if self.solver != "mu":
                raise ValueError(f"Invalid beta_loss parameter: solver {self.solver!r} does not handle beta_loss "
                                 "= 'kullback-leibler'; use solver='mu'")
            return "kl"
        return _SOLVERS[self.solver]

    def _rank(self, n_samples, n_features, W, H):
        k = self.n_components
        if k == "auto":
            if self.init == "custom" and H is not None:
                return H.shape[0]
            if self.init == "custom" and W is not None:
                return W.shape[1]
            return min(n_samples, n_features)
        if k is None:
            # scikit-learn keeps n_features; the library refuses k > min(m, n), whose factors are not determined
            # by the data, so a wide X would fail at the default (docs/python.md).
            return min(n_samples, n_features)
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
            raise ValueError(f"n_components must be a positive integer or 'auto', got {k!r}")
        return int(k)

    def _check_numbers(self):
        k = self.n_components
        if k is not None and k != "auto" and (not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1):
            raise ValueError(f"n_components must be a positive integer or 'auto', got {k!r}")
        if self.precision not in (None, "f32", "f64"):
            raise ValueError(f"precision must be 'f32', 'f64' or None, got {self.precision!r}")
        check_max_iter(self.max_iter)
        check_flag(self.shuffle, "shuffle")
        check_flag(self.extrapolate, "extrapolate")
        check_verbose(self.verbose)
        check_callback(self.callback)
        if not isinstance(self.tol, numbers.Real) or self.tol < 0:
            raise ValueError(f"tol must be >= 0, got {self.tol!r}")
        # `not value >= 0` and isfinite: NaN and inf passed `value < 0` and reached the library, whose message
        # named no parameter ("<memory>: penalties must be finite and >= 0").
        for name in ("alpha_W", "l1_ratio"):
            value = getattr(self, name)
            if not isinstance(value, numbers.Real) or not value >= 0 or not np.isfinite(value):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.l1_ratio > 1:
            raise ValueError(f"l1_ratio must be in [0, 1], got {self.l1_ratio!r}")
        if self.alpha_H != "same" and (not isinstance(self.alpha_H, numbers.Real) or not self.alpha_H >= 0
                                       or not np.isfinite(self.alpha_H)):
            raise ValueError(f"alpha_H must be a finite number >= 0 or 'same', got {self.alpha_H!r}")
        if self.shuffle:
            warn_user("dnmf.NMF: shuffle=True is ignored (HALS updates the components in order)", UserWarning)

    def _penalties(self, n_samples, n_features):
        # scikit-learn's scaling: the W terms by n_features, the H terms by n_samples.
        alpha_h = self.alpha_W if self.alpha_H == "same" else self.alpha_H
        return {"l1_w": n_features * self.alpha_W * self.l1_ratio,
                "l2_w": n_features * self.alpha_W * (1 - self.l1_ratio),
                "l1_h": n_samples * alpha_h * self.l1_ratio,
                "l2_h": n_samples * alpha_h * (1 - self.l1_ratio)}

    def _precision(self, X):
        if self.precision is None:
            return X.dtype == np.float32
        if self.precision not in ("f32", "f64"):
            raise ValueError(f"precision must be 'f32', 'f64' or None, got {self.precision!r}")
        return self.precision == "f32"

    def _context(self):
        return {"backend": self.backend, "threads": threads_of(self.n_threads),
                "memory_budget": self.memory_budget, "grid": self.grid,
                "comm": False if self.comm is None else comm_handle(estimator_comm(self.comm))}

    # ---------------------------------------------------------------- fitting
    def fit_transform(self, X, y=None, W=None, H=None, mask=None, missing=None, unstored=None):
        """Learns the factorisation of X and returns W (n_samples x n_components).

        Missing values (docs/masked.md): ``mask`` is an array of X's shape of weights (0 = missing, > 0 =
        weight), ``missing="nan"`` takes NaN entries of X as missing, ``unstored="missing"`` fits only the stored
        entries of a sparse X. Only the observed entries are fitted; ``reconstruction_err_`` is then the
        weighted error over them."""
        with input_attributes_kept_on_failure(self):
            return self._fit_transform(X, W, H, mask, missing, unstored)

    def _fit_transform(self, X, W, H, mask, missing, unstored):
        # The parameters first, as scikit-learn checks them.
        algorithm = self._algorithm()
        self._check_numbers()
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=[np.float64, np.float32],
                          ensure_all_finite=False, reset=True)
        X = as_float_matrix(X)
        n_samples, n_features = X.shape
        k = self._rank(n_samples, n_features, W, H)
        single = self._precision(X)
        dtype = np.float32 if single else np.float64

        init = self.init
        if init is None:
            # NNDSVD needs the whole matrix on one process: with only the stored entries of a sparse X observed
            # there is none, and on a grid of several processes each holds a block (the default failed there).
            comm = estimator_comm(self.comm)
            whole = unstored != "missing" and (comm is None or comm is False or comm.Get_size() == 1)
            init = "nndsvda" if k <= min(n_samples, n_features) and whole else "random"
        elif init in ("nndsvd", "nndsvda", "nndsvdar") and unstored == "missing":
            raise ValueError(f"init={init!r} is not supported with unstored='missing' (NNDSVD needs the whole "
                             "matrix): use init='random' or init=None")
        if algorithm in ("mu", "kl") and init == "nndsvd":
            # scikit-learn's warning: NNDSVD's zeros are fixed points of the multiplicative updates.
            warn_user("The multiplicative update ('mu') solver cannot update zeros present in the initialization, "
                      "and so leads to poorer results when used jointly with init='nndsvd'. You may try "
                      "init='nndsvda' or init='nndsvdar' instead.", UserWarning)
        if init != "custom" and (W is not None or H is not None):
            warn_user("When init!='custom', provided W or H are ignored. Set init='custom' to use them as "
                      "initialization.", RuntimeWarning)
        options = {"k": k, "algorithm": algorithm, "max_iter": self.max_iter, "tol": self.tol,
                   "normalize": False, "w_first": True,
                   "extrapolate": bool(self.extrapolate),
                   **self._penalties(n_samples, n_features),
                   **self._context()}
        W0 = H0 = None
        if init == "custom":
            W0, H0 = self._custom_init(W, H, n_samples, n_features, k, dtype)
            options["init"] = "given"
        elif init == "nndsvdar":
            observed = _hidden_as_zero(X, mask, missing)
            if (observed.count_nonzero() if hasattr(observed, "count_nonzero") else np.count_nonzero(observed)) == 0:
                # No observed non-zero: the fit fails, and the library says why ("the matrix is all zeros"); the
                # all-zero start scikit-learn makes of such X was named as a bad W the caller never gave.
                options["init"] = "random"
            else:
                W0, H0 = self._nndsvdar(observed, k, dtype)
                options["init"] = "given"
        elif init in ("random", "nndsvd", "nndsvda"):
            options["init"] = init
        else:
            raise ValueError(f"Invalid init parameter: got {init!r} instead of one of "
                             "{None, 'random', 'nndsvd', 'nndsvda', 'nndsvdar', 'custom'}")
        # Drawn after scikit-learn's initialiser has drawn from a RandomState, as scikit-learn's own order is: drawn
        # first, it advanced the state and nndsvdar started elsewhere than scikit-learn's.
        options["seed"] = _seed(self.random_state)

        weights = None
        if mask is not None:
            weights = as_dtype(as_float_matrix(mask), dtype, "mask")
            if weights.shape != X.shape:
                raise ValueError(f"mask has shape {weights.shape}, X has shape {X.shape}")
            options["mask"] = source_of(weights)
        options.update(missing_options(missing, unstored))

        try:
            out = _core.factor(source_of(X), options, single, W0, H0, self.callback, bool(self.verbose))
        except _core.Error as error:
            raise library_error(error, "NMF") from None
        W_out, H_out = self._share(out["W"], out["H"])
        self.components_ = H_out
        self.n_components_ = k
        self.n_iter_ = int(out["iterations"])
        if algorithm == "kl":
            # scikit-learn's figure is the divergence alone; the library's KL objective adds the penalty terms
            # (what the updates minimise), which are taken off again here.
            pen = options
            w64, h64 = np.asarray(W_out, dtype=np.float64), np.asarray(H_out, dtype=np.float64)
            terms = (pen["l1_w"] * w64.sum() + 0.5 * pen["l2_w"] * np.vdot(w64, w64) + pen["l1_h"] * h64.sum()
                     + 0.5 * pen["l2_h"] * np.vdot(h64, h64))
            self.reconstruction_err_ = float(np.sqrt(2 * max(out["objective"] - terms, 0.0)))
        else:
            self.reconstruction_err_ = float(out["rel_error"]) * float(out["norm_a"])
        self.report_ = out["report_json"]
        warn_report_warnings(json.loads(self.report_).get("warnings", []), "dnmf.NMF")
        self._library_seconds = float(out["library_seconds"])  # for bench/bench_python.py's overhead figure
        if self.n_iter_ == self.max_iter and self.tol > 0 and not out["converged"]:
            from sklearn.exceptions import ConvergenceWarning

            warn_user(f"Maximum number of iterations {self.max_iter} reached. Increase it to improve "
                      "convergence.", ConvergenceWarning)
        return W_out

    def fit(self, X, y=None, **params):
        """Learns the factorisation of X; returns self."""
        self.fit_transform(X, **params)
        return self

    def _share(self, W, H):
        """With a communicator, rank 0's factors go to every process, so that each holds the fitted model."""
        if self.comm is not None and self.comm is not False:
            W, H = self.comm.bcast((W, H), root=0)
        return W, H

    @staticmethod
    def _custom_init(W, H, n_samples, n_features, k, dtype):
        if W is None or H is None:
            raise ValueError("init = 'custom' needs both W and H")
        for name, x in (("W", W), ("H", H)):
            if hasattr(x, "toarray"):
                raise TypeError(f"init = 'custom' takes dense arrays; input {name} is a sparse matrix (use .toarray())")
            if np.iscomplexobj(x):  # the cast below would drop the imaginary part with numpy's warning only
                raise TypeError(f"init = 'custom' cannot take complex values (input {name} has dtype "
                                f"{np.asarray(x).dtype})")
        # A float64 start of a float32 fit: an entry float32 cannot hold (beyond its range, or a non-zero that
        # underflows to 0) is refused as X's are, not turned into inf or 0.
        W = as_dtype(np.asarray(W), dtype, "input W")
        H = as_dtype(np.asarray(H), dtype, "input H")
        if W.shape != (n_samples, k):
            raise ValueError(f"Array with wrong shape passed to NMF (input W). Expected {(n_samples, k)}, "
                             f"but got {W.shape}")
        if H.shape != (k, n_features):
            raise ValueError(f"Array with wrong shape passed to NMF (input H). Expected {(k, n_features)}, "
                             f"but got {H.shape}")
        # Their values (negative, NaN, inf, all zeros) are checked by the library in one vectorised pass, and its
        # message worded as scikit-learn's by library_error: three numpy reductions over both here cost more
        # than that (0.35 ms of a 20000 x 10000 one-iteration fit).
        return W, H  # in any order: the library copies them by blocks of rows

    def _nndsvdar(self, X, k, dtype):
        # NNDSVD with its zeros filled by small random values: scikit-learn's own initialiser (dnmf computes
        # NNDSVD and NNDSVDa itself), with the estimator's random_state as scikit-learn passes it.
        from sklearn.decomposition._nmf import _initialize_nmf

        # numpy seeds take 32 bits; dnmf's are 64 (any int up to 2**64 - 1): larger ones are folded by SeedSequence.
        seed = self.random_state
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 2**32:
            seed = int(np.random.SeedSequence(int(seed)).generate_state(1)[0])
        W, H = _initialize_nmf(X, k, init="nndsvdar", random_state=seed)
        return np.asfortranarray(W, dtype=dtype), np.asfortranarray(H, dtype=dtype)

    # ---------------------------------------------------------------- using the model
    def transform(self, X, mask=None, missing=None, unstored=None):
        """W for new data X with the learned components fixed: each row by exact non-negative least squares, with
        the W penalties of alpha_W and l1_ratio (scaled as in fit), as scikit-learn's transform applies them; a
        model fitted with beta_loss='kullback-leibler' minimises that divergence instead (project_kl).

        With missing values (as in fit): ``mask`` (weights of X's shape, 0 = missing), ``missing="nan"`` or
        ``unstored="missing"``: each row is fitted on its observed entries only (a row with none gets zeros)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=("csr", "csc"), dtype=[np.float64, np.float32],
                          ensure_all_finite=False, reset=False)
        X = as_float_matrix(X)
        if mask is not None and self.precision == "f32" and X.dtype == np.float64:
            # Hidden entries are never read (docs/masked.md): zeros, so that a value float32 cannot hold there is
            # not refused by the narrowing below, as fit does not refuse it. (NaN under missing='nan' stays NaN.)
            X = _hidden_stored_as_zero(X, mask) if hasattr(X, "toarray") else _hidden_as_zero(X, mask, None)
        # The dtype fit_transform returns: the asked precision's, else X's (transform computed in X's always).
        X = in_precision(X, self.precision)
        pen = self._penalties(X.shape[0], X.shape[1])
        if _BETA_LOSSES.get(self.beta_loss) == "kl":
            # The model's own loss (the NNLS answer of a KL model was 0.1 from its converged W on 40x25 data).
            return project_kl(X, self.components_, pen["l1_w"], pen["l2_w"], self.max_iter, self.tol, mask, missing,
                              unstored)
        if mask is None and missing is None and unstored is None:
            return project(X, self.components_, self.backend, pen["l1_w"], pen["l2_w"],
                           threads=threads_of(self.n_threads))
        try:
            return project_masked(X, self.components_, self.backend, mask, missing, unstored, pen["l1_w"],
                                  pen["l2_w"], threads_of(self.n_threads))
        except _core.Error as error:
            raise library_error(error, "NMF") from None

    def inverse_transform(self, X=None, *, Xt=None):
        """X ≈ W @ components_ for W = transform(X)."""
        if Xt is not None:
            X = Xt
        if X is None:
            raise TypeError("inverse_transform() missing 1 required positional argument: 'X'")
        check_is_fitted(self)
        if hasattr(X, "tocsr"):  # a sparse W (scikit-learn takes one): the product is dense
            return np.asarray(X.tocsr() @ self.components_)
        return np.asarray(X) @ self.components_

    @property
    def _n_features_out(self):
        return self.components_.shape[0]
