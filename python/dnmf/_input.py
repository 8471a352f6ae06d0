"""Turning what Python users hold (numpy arrays, scipy.sparse matrices, AnnData's X, paths) into the library's
sources, copying only where the library cannot read the memory as it is.

What is copied, once:
- a dtype other than float32/float64 (converted to float64);
- a dense array that is neither C- nor Fortran-contiguous (made C-contiguous);
- a sparse matrix in another format than CSR/CSC (converted to CSR), or with unsorted or duplicate indices
  (sorted and summed);
- int32 ``indptr`` (widened to int64 inside the library: rows + 1 entries) and int64 ``indices`` (narrowed to
  int32 inside the library).
Everything else, C- or Fortran-order arrays, read-only and memory-mapped arrays, CSR and CSC values and indices,
is borrowed.
"""

import contextlib
import numbers
import os
import re
import sys
import warnings

import numpy as np

from . import _core

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _is_sparse(x):
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return sp.issparse(x)


def as_float_matrix(x):
    """``x`` as something a source can borrow: a contiguous float ndarray or a canonical CSR/CSC matrix."""
    # Complex input lost its imaginary part in the cast below (numpy's ComplexWarning only); the estimators refuse it.
    # A sparse matrix's dtype, not its .data: DOK has none, and LIL's is an object array of lists.
    if np.issubdtype(x.dtype, np.complexfloating) if _is_sparse(x) else np.iscomplexobj(x):
        raise TypeError(f"dnmf: cannot factor complex data (dtype {x.dtype})")
    if _is_sparse(x):
        if x.format not in ("csr", "csc"):
            x = x.tocsr()
        if x.dtype not in _FLOATS:
            x = x.astype(np.float64)
        if not x.has_canonical_format:
            x = x.copy()
            x.sum_duplicates()
        if not (x.indices.dtype.isnative and x.indptr.dtype.isnative):
            # The binding takes index arrays in the machine's byte order only (scipy keeps a file's big-endian ones).
            x = x.copy()
            x.indices = x.indices.astype(x.indices.dtype.newbyteorder("="))
            x.indptr = x.indptr.astype(x.indptr.dtype.newbyteorder("="))
        return x
    x = np.asarray(x)
    if x.ndim != 2:
        raise _core.DataError(f"dnmf: expected a 2-D matrix, got an array of shape {x.shape}")
    if x.dtype not in _FLOATS:
        if not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
            raise TypeError(f"dnmf: cannot factor an array of dtype {x.dtype}")
        x = x.astype(np.float64)
    if not (x.flags.c_contiguous or x.flags.f_contiguous):
        x = np.ascontiguousarray(x)
    return x


def _check_narrowing(x, what):
    """Raises the library's DataError for the first entry of float64 ``x`` (dense, CSR or CSC) that float32 cannot
    hold: a finite value beyond its range, or a non-zero one that underflows to 0. The library checks the same
    when it narrows a source itself; a cast here would turn them into inf and 0 silently."""
    sparse = _is_sparse(x)
    values = np.asarray(x.data if sparse else x)
    with np.errstate(over="ignore", under="ignore"):
        cast = values.astype(np.float32)
    bad = (np.isfinite(values) & ~np.isfinite(cast)) | ((values != 0) & (cast == 0))
    if not bad.any():
        return
    if sparse:
        q = int(np.flatnonzero(bad)[0])
        line = int(np.searchsorted(x.indptr, q, side="right")) - 1
        inner = int(x.indices[q])
        row, col = (line, inner) if x.format == "csr" else (inner, line)
        value = float(values[q])
    else:
        row, col = (int(i) for i in np.argwhere(bad)[0])
        value = float(values[row, col])
    problem = ("finite but too large for single precision (float32 holds at most 3.4028235e+38)"
               if np.isfinite(value) and abs(value) > float(np.finfo(np.float32).max) else
               "non-zero but too small for single precision: it underflows to zero in float32 (the smallest is "
               "1.4e-45)")
    raise _core.DataError(f"{what}: entry at row {row}, column {col} (0-based) is {value!r}: {problem}; use "
                          "precision='f64', or rescale the matrix")


def as_dtype(x, dtype, what):
    """``x`` (an array or sparse matrix) as ``dtype``, refusing what float32 cannot hold (_check_narrowing)."""
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if dtype == np.float32 and x.dtype == np.float64:
        _check_narrowing(x, what)
    return x.astype(dtype)


def missing_options(missing, unstored):
    """The library options for ``missing`` (None or "nan") and ``unstored`` (None, "zero" or "missing")."""
    options = {}
    if missing is not None:
        if missing != "nan":
            raise _core.UsageError(f"missing must be None or 'nan', got {missing!r}")
        options["nan_missing"] = True
    if unstored is not None:
        options["unstored"] = unstored
    return options


def in_precision(x, precision, what="X"):
    """``x`` (an array or sparse matrix) in the dtype of ``precision`` ('f32', 'f64'); as it is for None or when it
    has that dtype already."""
    want = {"f32": np.float32, "f64": np.float64}.get(precision)
    return as_dtype(x, want, what) if want is not None else x


def is_path(x):
    """Whether ``x`` names a file: a str, bytes or an os.PathLike (bytes were taken for an array of shape ())."""
    return isinstance(x, (str, bytes, os.PathLike))


def path_text(x, name):
    """The path ``x`` (str, bytes or os.PathLike) as the text the library takes. A NUL byte is refused as open()
    refuses it (the library read 'A.npy\\0.npy' as A.npy), and so is a name that is not UTF-8 (a file whose name
    os.listdir gave with surrogate escapes), which the binding cannot pass: TypeError named neither."""
    text = os.fsdecode(os.fspath(x))
    if "\0" in text:
        raise _core.UsageError(f"{name}: embedded null byte in {text!r}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _core.UsageError(f"{name}: {text!r} is not valid UTF-8, which paths given from Python must be "
                               "(rename the file, or run the dnmf command on it)") from None
    return text


def source_of(x, name="X"):
    """A library source for ``x``: a path (str, bytes or os.PathLike), a dense array or a CSR/CSC matrix."""
    if is_path(x):
        return _core.Source.file(path_text(x, name))
    x = as_float_matrix(x)
    if _is_sparse(x):
        rows, cols = x.shape
        # Strided views (scipy keeps them with copy=False) are copied: the library reads contiguous arrays.
        return _core.Source.sparse(rows, cols, np.ascontiguousarray(x.indptr), np.ascontiguousarray(x.indices),
                                   np.ascontiguousarray(x.data), x.format == "csr")
    return _core.Source.dense(x)


def library_error(error, estimator):
    """The library's error for a negative entry or a bad initial factor, headed as scikit-learn's estimators say
    it (its estimator checks look for those heads); any other error as it is."""
    message = str(error)
    # The message may come after the source's name ("<memory>: initial W: ...") on the paths that name it.
    initial = re.search(r"(?:^|: )initial (W|H)( is all zeros|: entry at)", message)
    if initial is not None:
        name = initial.group(1)
        if initial.group(2) == " is all zeros":  # W·H = 0 is a fixed point of every solver
            return _core.DataError(f"Array passed to {estimator} (input {name}) is full of zeros: {message}")
        return _core.DataError(f"Negative or non-finite values in data passed to {estimator} (input {name}): "
                               f"{message}")
    if message.endswith("input must be non-negative"):
        return _core.DataError(f"Negative values in data passed to {estimator} (input X): {message}")
    return error


def dtype_of(x):
    """The float dtype a matrix is factored in by default (float32 stays float32)."""
    return np.dtype(np.float32) if getattr(x, "dtype", None) == np.float32 else np.dtype(np.float64)


def estimator_comm(comm):
    """An estimator's ``comm``, checked: None or False (this process alone) or an mpi4py communicator, which the
    estimator also uses to hand rank 0's model to every process. (True, MPI's world for the functions, was taken
    and the fit ran to its end before failing on the missing broadcast.)"""
    if comm is None or comm is False:
        return comm
    if not hasattr(comm, "bcast"):
        raise _core.UsageError(f"comm must be an mpi4py communicator, None or False, got {comm!r}")
    return comm


def comm_handle(comm):
    """The context argument for an mpi4py communicator (its C handle), None (MPI's world under an MPI launcher,
    else one process) or False (one process)."""
    if comm is None or comm is False or comm is True:
        return comm
    handle = getattr(comm, "handle", None)
    if handle is None:
        from mpi4py import MPI  # older mpi4py: the handle through the module

        handle = MPI._handleof(comm)
    return int(handle)


def preserved_dtypes(precision):
    """The dtypes a transformer's output keeps (scikit-learn's preserves_dtype tag): the asked precision's, else
    the input's float dtype. A tag that ignored `precision` failed check_transformer_preserve_dtypes."""
    return {"f32": ["float32"], "f64": ["float64"]}.get(precision, ["float64", "float32"])


def threads_of(n_threads):
    """The library's thread count for ``n_threads`` (None: its default, 0). The library checks the value too, but
    names its own option ('threads'), and took True as 1."""
    if n_threads is None:
        return 0
    if isinstance(n_threads, bool) or not isinstance(n_threads, (int, np.integer)):
        raise TypeError(f"n_threads must be None or an int >= 0, got {n_threads!r}")
    if not 0 <= n_threads <= 2**31 - 1:
        raise _core.UsageError(f"n_threads must be None or an int in [0, {2**31 - 1}], got {n_threads!r}")
    return int(n_threads)


def _fitted_names(estimator):
    """The estimator's fitted attributes, by scikit-learn's convention (a trailing underscore), and the private
    figures a fit leaves (_library_seconds)."""
    return [name for name in estimator.__dict__
            if (name.endswith("_") and not name.startswith("__")) or name == "_library_seconds"]


@contextlib.contextmanager
def input_attributes_kept_on_failure(estimator):
    """A fit that fails inside the block (bad data, a library error, an exception from the callback, Ctrl-C, a
    warning turned into an error after the library ran) leaves every fitted attribute as it was: validate_data
    (reset=True) sets n_features_in_ before the library runs, and a ConvergenceWarning raised as an error (pytest's
    filterwarnings=error) came after components_ was set, so the estimator held the new components_ beside the
    old n_features_in_, and transform refused both the old data and the new."""
    kept = {name: estimator.__dict__[name] for name in _fitted_names(estimator)}
    try:
        yield
    except BaseException:
        for name in _fitted_names(estimator):
            del estimator.__dict__[name]
        estimator.__dict__.update(kept)
        raise


def check_flag(value, name):
    """A boolean parameter as scikit-learn's validation takes one (bool or numpy's bool): extrapolate='False' was
    true, and shuffle='x' or restart='x' passed unnoticed."""
    if not isinstance(value, (bool, np.bool_)):
        raise _core.UsageError(f"{name} must be True or False, got {value!r}")


def check_verbose(value):
    """verbose: a non-negative int (or a bool); -1 and 'x' printed progress."""
    if isinstance(value, (bool, np.bool_)):
        return
    if not isinstance(value, numbers.Integral) or value < 0:
        raise _core.UsageError(f"verbose must be an integer >= 0 or a bool, got {value!r}")


def check_callback(value):
    """callback: None or a callable (3 failed inside the fit as "'int' object is not callable")."""
    if value is not None and not callable(value):
        raise _core.UsageError(f"callback must be None or a callable, got {value!r}")


def check_max_iter(value):
    """max_iter: a whole number from 1 to 2**31 - 1 (2**31 was refused by the binding as outside
    [-2147483648, 2147483647], as if negatives were allowed)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not 1 <= value <= 2**31 - 1:
        raise _core.UsageError(f"max_iter must be a whole number from 1 to 2147483647, got {value!r}")


def _package_dirs():
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    try:  # scikit-learn's output wrappers (set_output) stand between the user and transform/fit_transform
        import sklearn

        dirs.append(os.path.dirname(os.path.abspath(sklearn.__file__)))
    except ImportError:  # pragma: no cover - scikit-learn is a dependency of the estimators
        pass
    return tuple(d + os.sep for d in dirs)


def warn_report_warnings(warnings_list, who):
    """The library's warnings a user of missing values must see (docs/masked.md: rows or columns with no observed
    entry, a start rescaled), raised as UserWarnings naming `who`; the CLI prints them, and from Python they
    rested in the report unseen."""
    for text in warnings_list:
        if "no observed entry" in text or "W and H were multiplied by" in text:
            warn_user(f"{who}: {text}", UserWarning)


def warn_user(message, category=UserWarning):
    """warnings.warn naming the user's line: the first frame outside this package (and scikit-learn's wrappers),
    whatever the depth of the call within it (fixed stacklevels named dnmf's own files when an estimator called a
    function that warns)."""
    inside = _package_dirs()
    frame = sys._getframe(1)
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
