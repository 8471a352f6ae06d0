"""The library's entry points as functions: a factorisation or an NMFk of a matrix file (streamed within a
memory budget, read block by block under MPI) or of a matrix in memory, with the CLI's options and defaults."""

import math
import numbers
import os

import numpy as np

from . import _core
from ._input import (as_dtype, as_float_matrix, check_flag, check_verbose, comm_handle, dtype_of, in_precision,
                     is_path, missing_options, path_text, source_of, threads_of, warn_report_warnings, warn_user)
from ._results import Factorization, NmfkResult

_ALGORITHMS = ("mu", "kl", "hals", "bpp")
# The starts NMFk takes: given factors would be one start for every perturbed job.
_NMFK_INITS = ("random", "nndsvd", "nndsvda")


def _whole(k, what, limit=2**63 - 1):
    """k as an int; a fractional, infinite, non-numeric or out-of-range (|k| > limit) k is a UsageError naming
    `what` (int() truncated 2.9 to 2; inf and 2**31 folds escaped as OverflowError and a plain ValueError)."""
    numeric = not isinstance(k, bool) and isinstance(k, (int, float, np.integer, np.floating))
    if not numeric or (isinstance(k, (float, np.floating)) and not math.isfinite(k)) or k != int(k):
        raise _core.UsageError(f"{what} must be whole numbers, got {k!r}")
    if abs(int(k)) > limit:
        raise _core.UsageError(f"{what} must be at most {limit} in size, got {k!r}")
    return int(k)


# As many k as the CLI's --k takes ('2:1000000' was refused there, while (2, 10**6) built the list and (2, 2**31)
# ran out of memory).
_MAX_KS = 10000


def _checked_count(count, shown):
    if count > _MAX_KS:
        raise _core.UsageError(f"k_range {shown} has {count} values; at most {_MAX_KS} are taken")


def _k_list(k_range):
    if isinstance(k_range, str):
        return _core.parse_k_range(k_range)  # the CLI's --k syntax and messages
    if isinstance(k_range, range):
        _checked_count(len(k_range), repr(k_range))
        return list(k_range)
    if isinstance(k_range, (int, np.integer)) and not isinstance(k_range, bool):
        return [int(k_range)]
    if isinstance(k_range, tuple):
        # A tuple is the (first, last) pair; (2, 6, 2) would read as range(2, 6, 2) to some and as [2, 6, 2] to
        # others, so other lengths are refused rather than guessed.
        if len(k_range) != 2:
            raise _core.UsageError(f"k_range as a tuple is a (first, last) pair; got {len(k_range)} values "
                                   f"{k_range!r} (for a step use 'lo:hi:step' or a range, for chosen values a list)")
        first, last = _whole(k_range[0], "k_range"), _whole(k_range[1], "k_range")
        _checked_count(last - first + 1, repr(k_range))
        return list(range(first, last + 1))
    try:
        if hasattr(k_range, "__len__"):
            _checked_count(len(k_range), "(a sequence)")
        return [_whole(k, "k_range") for k in k_range]
    except TypeError:
        raise TypeError(f"k_range must be 'lo:hi', (lo, hi), a range, an int or a list of ints; got {k_range!r}") \
            from None


def _check_checkpoints_outside(checkpoint_dir, output_dir):
    """The output set replaces output_dir whole when it commits, keeping only its checkpoints/ folder (as the CLI
    keeps OUT/checkpoints): a checkpoint_dir equal to output_dir or elsewhere inside it lost its jobs on every
    commit, and after an interruption the next call refused the folder for files "dnmf did not write"."""
    if not checkpoint_dir or not output_dir:
        return
    out = os.path.realpath(output_dir)
    ckpt = os.path.realpath(checkpoint_dir)
    kept = os.path.join(out, "checkpoints")
    inside = ckpt == out or ckpt.startswith(out + os.sep)
    if inside and not (ckpt == kept or ckpt.startswith(kept + os.sep)):
        raise _core.UsageError(f"checkpoint_dir {checkpoint_dir!r} lies inside output_dir {output_dir!r}, which each "
                               f"run replaces whole: use {os.path.join(output_dir, 'checkpoints')!r} (kept across "
                               "runs) or a folder outside it")


def _single(x, precision):
    if precision is None:
        return not is_path(x) and dtype_of(x).itemsize == 4
    if precision not in ("f32", "f64"):
        raise _core.UsageError(f"precision must be 'f32', 'f64' or None, got {precision!r}")
    return precision == "f32"


def _context(backend, n_threads, memory_budget, grid, comm):
    return {"backend": backend, "threads": threads_of(n_threads), "memory_budget": memory_budget, "grid": grid,
            "comm": comm_handle(comm)}


_PENALTY_KEYS = frozenset({"l1_w", "l2_w", "l1_h", "l2_h"})


def _solver(algorithm, max_iter, tol, init, seed, penalties, fused):
    if algorithm not in _ALGORITHMS:
        raise _core.UsageError(f"algorithm must be one of {_ALGORITHMS}, got {algorithm!r}")
    options = {"algorithm": algorithm, "max_iter": max_iter, "tol": tol, "init": init, "seed": seed,
               "fused": fused}
    unknown = sorted(set(penalties or {}) - _PENALTY_KEYS)
    if unknown:  # a misspelt key would otherwise fit without its penalty
        raise _core.UsageError(f"unknown penalties {unknown}: the keys are {sorted(_PENALTY_KEYS)}")
    for key, value in (penalties or {}).items():
        # Unchecked, -0.5 and inf reached the library, whose message named neither ("<memory>: penalties must be
        # finite and >= 0"), and None raised float()'s TypeError.
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0 or not math.isfinite(value):
            raise _core.UsageError(f"penalties[{key!r}] must be a finite number >= 0, got {value!r}")
        options[key] = float(value)
    return options


def _verbose(value):
    """verbose as the estimators take it (a bool or an int >= 0): bool('False') printed progress."""
    check_verbose(value)
    return bool(value)


def _flag(value, name):
    """A boolean option checked as the estimators check theirs: bool('False') is True, so extrapolate='False'
    extrapolated."""
    check_flag(value, name)
    return bool(value)


def factor(X, k, *, algorithm="mu", max_iter=200, tol=1e-4, init="random", seed=1, penalties=None,
           precision=None, backend="cpu", n_threads=None, memory_budget=None, grid="auto", comm=None,
           fused=True, verbose=False, callback=None, extrapolate=False, tf32=False, mask=None, missing=None,
           unstored=None):
    """A ≈ W H for a matrix file (path) or a matrix in memory (numpy array, scipy CSR/CSC, AnnData's X), with
    ``dnmf factor``'s options and defaults; W's columns sum to 1 as the CLI's do.

    ``memory_budget`` (bytes or e.g. "2G", file sources): plan resident or streamed execution within it.
    ``comm``: None runs on MPI's world under an MPI launcher (mpirun -np N python ...) and on one process
    otherwise; an mpi4py communicator runs on its processes; False on this process only. Each process reads
    (or slices) only its block of A. ``penalties``: {'l1_w', 'l2_w', 'l1_h', 'l2_h'}. ``precision``: 'f32',
    'f64', or None (float32 arrays in float32, everything else in float64). ``extrapolate`` and ``tf32`` as the
    CLI's flags. Missing values (docs/masked.md) as ``--mask``, ``--missing nan`` and ``--unstored``: ``mask`` (a
    path or a matrix of X's shape; 0 = missing, > 0 = weight), ``missing="nan"``, ``unstored="missing"``.
    Returns a Factorization.
    """
    algorithm = "mu" if algorithm is None else algorithm
    init = "random" if init is None else init
    options = _solver(algorithm, max_iter, tol, init, seed, penalties, fused)
    options.update({"k": _whole(k, "k"), "extrapolate": _flag(extrapolate, "extrapolate"), "tf32": _flag(tf32, "tf32"),
                    **_context(backend, n_threads, memory_budget, grid, comm)})
    single = _single(X, precision)
    if mask is not None:
        if not is_path(mask):
            mask = as_dtype(as_float_matrix(mask), np.float32 if single else np.float64, "mask")
        options["mask"] = source_of(mask, "mask")
    options.update(missing_options(missing, unstored))
    out = _core.factor(source_of(X), options, single, None, None, callback, _verbose(verbose))
    result = Factorization(out)
    warn_report_warnings(result.report.get("warnings", []), "dnmf.factor")
    return result


def factor_file(path, k, **kwargs):
    """factor() of a matrix file: .npy, .mtx, .h5/.hdf5/.h5ad (``file.h5:/object``), .npz or .dcsr."""
    if not is_path(path):
        raise TypeError(f"factor_file: expected a path, got {type(path).__name__}")
    return factor(path, k, **kwargs)


def nmfk(X, k_range, *, perturbations=20, epsilon=0.03, perturbation="uniform", sil_threshold=0.75,
         err_threshold=None, rule="silhouette", wilcoxon_alpha=0.05, h_silhouettes=False, groups=1,
         accept_factor=2.0, checkpoint_dir=None, restart=False, output_dir=None, algorithm="hals", max_iter=1000,
         tol=1e-4, init="random", seed=1, penalties=None, precision=None, backend="cpu", n_threads=None,
         grid="auto", comm=None, verbose=False, callback=None, cv=False, cv_folds=5, cv_holdout=0.05,
         cluster_iters=None, extrapolate=False, tf32=False):
    """NMFk rank selection with ``dnmf nmfk``'s options and defaults (HALS, 1000 iterations per factorisation),
    for a matrix file or a matrix in memory.

    ``k_range``: "2:10" or "2:10:2" (as the CLI), a range, a (first, last) pair or a list. ``output_dir``:
    also write the CLI's outputs there (nmfk.json, nmfk.csv, k_<K>/, the plot). ``callback(k, perturbation,
    rel_error)`` is called after each job. ``cv``: also choose k by cross-validation (``dnmf nmfk --cv``):
    ``cv_folds`` folds each hiding ``cv_holdout`` of the entries, fitted with the same solver options and seed;
    one process only. ``cluster_iters`` (the CLI's --cluster-iters: a cap on the clustering's assignment rounds,
    None for its default), ``extrapolate`` and ``tf32`` as the CLI's flags. A C-order array is factored from a
    Fortran-order copy (NMFk clusters A's columns and perturbs copies of A anyway); CSC input is converted to
    CSR. Returns an NmfkResult.
    """
    # An option given as None takes its default (docs/python.md), these as the others.
    algorithm = "hals" if algorithm is None else algorithm
    init = "random" if init is None else init
    cv_folds = 5 if cv_folds is None else cv_folds
    cv_holdout = 0.05 if cv_holdout is None else cv_holdout
    # Checked with cv off too, as the CLI checks --cv-folds and --cv-holdout: a bad value is found when it is
    # given, not when cv is turned on later. cv itself is a bool ('no' is a true value).
    check_flag(cv, "cv")
    if isinstance(cv_holdout, bool) or not isinstance(cv_holdout, (int, float, np.integer, np.floating)) or \
            not 0 < cv_holdout < 1:
        raise _core.UsageError(f"cv_holdout must be a number in (0, 1), got {cv_holdout!r}")
    if _whole(cv_folds, "cv_folds", 2**31 - 1) < 1:
        raise _core.UsageError(f"cv_folds must be at least 1, got {cv_folds!r}")
    if not is_path(X):
        if hasattr(X, "tocsr"):
            X = X.tocsr()
        else:
            X = np.asarray(X)
            if not X.flags.f_contiguous:
                X = np.asfortranarray(X)
        # NMFk runs in the matrix's own precision: asked for another, the matrix is converted here (as
        # factor() converts), rather than refused by the library.
        X = in_precision(X, precision)
    if init not in _NMFK_INITS:  # the library's list of inits names 'given', which NMFk refuses
        raise _core.UsageError(f"init must be one of {', '.join(_NMFK_INITS)} for NMFk (each perturbed job draws its "
                               f"own start), got {init!r}")
    options = _solver(algorithm, max_iter, tol, init, seed, penalties, True)
    checkpoint_dir = path_text(checkpoint_dir, "checkpoint_dir") if checkpoint_dir else None
    output_dir = path_text(output_dir, "output_dir") if output_dir else ""
    _check_checkpoints_outside(checkpoint_dir, output_dir)
    options.update({"ks": _k_list(k_range), "perturbations": perturbations, "epsilon": epsilon,
                    "perturbation": perturbation, "sil_threshold": sil_threshold, "err_threshold": err_threshold,
                    "rule": rule, "wilcoxon_alpha": wilcoxon_alpha, "h_silhouettes": h_silhouettes,
                    "groups": groups, "accept_factor": accept_factor,
                    "checkpoint_dir": checkpoint_dir, "restart": restart,
                    "cv": bool(cv), "cv_folds": _whole(cv_folds, "cv_folds", 2**31 - 1),
                    "cv_holdout": float(cv_holdout),
                    "extrapolate": _flag(extrapolate, "extrapolate"), "tf32": _flag(tf32, "tf32"),
                    **_context(backend, n_threads, None, grid, comm)})
    if cluster_iters is not None:
        options["max_cluster_iterations"] = _whole(cluster_iters, "cluster_iters", 2**31 - 1)
    out = _core.nmfk(source_of(X), options, _single(X, precision), output_dir,
                     callback, _verbose(verbose))
    if out.get("cv") and out["cv"]["warning"]:
        warn_user("dnmf.nmfk: " + out["cv"]["warning"], RuntimeWarning)
    for text in out.get("warnings", []):
        warn_user("dnmf.nmfk: " + text, UserWarning)
    if out.get("plot_warning"):  # the CLI prints it; here it was only in result.plot_warning
        warn_user("dnmf.nmfk: " + out["plot_warning"], RuntimeWarning)
    return NmfkResult({**out, "sil_threshold": sil_threshold})


def nmfk_file(path, k_range, **kwargs):
    """nmfk() of a matrix file."""
    if not is_path(path):
        raise TypeError(f"nmfk_file: expected a path, got {type(path).__name__}")
    return nmfk(path, k_range, **kwargs)
