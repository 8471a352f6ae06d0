"""dnmf: non-negative matrix factorisation at any scale, with automatic rank selection (NMFk).

Estimators (scikit-learn API): ``dnmf.NMF`` (a drop-in for ``sklearn.decomposition.NMF``) and ``dnmf.NMFk``.
Functions with the CLI's options: ``dnmf.factor`` / ``dnmf.factor_file`` and ``dnmf.nmfk`` / ``dnmf.nmfk_file``
(files larger than memory, MPI grids). Errors raise ``dnmf.Error`` (a ValueError) with the library's message,
as one of its kinds: ``UsageError`` (options), ``DataError`` (the matrix's content), ``IoError`` (also an
OSError: files), ``NumericalError``; ``Cancelled`` when a callback stopped the run.
"""

from ._core import (Cancelled, DataError, Error, IoError, NumericalError, UsageError, __version__,
                    has_mpi)
from ._functions import factor, factor_file, nmfk, nmfk_file
from ._nmf import NMF
from ._nmfk import NMFk
from ._results import Factorization, NmfkResult, RankTable

__all__ = ["NMF", "NMFk", "factor", "factor_file", "nmfk", "nmfk_file", "Factorization", "NmfkResult",
           "RankTable", "Error", "UsageError", "DataError", "IoError", "NumericalError", "Cancelled", "has_mpi",
           "backend_available", "__version__"]


def backend_available(name):
    """(True, "") when the backend ('cpu', 'cuda', 'reference') can run here, else (False, the reason)."""
    from . import _core

    return _core.backend_available(name)
