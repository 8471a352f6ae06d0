// dnmf: what a matrix file holds and whether factor() will accept it (`dnmf info`).
#pragma once

#include <string>

#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf {

/// Statistics of every entry. Sparse matrices count their implicit zeros as entries.
struct EntryStats {
  index_t rows = 0;
  index_t cols = 0;
  index_t stored = 0;    ///< entries held in memory: rows*cols (dense) or the CSR's stored count
  index_t nonzeros = 0;  ///< entries != 0 (NaN counts as non-zero)
  double min = 0;        ///< over all non-NaN entries (NaN when every entry is NaN)
  double max = 0;
  double sum = 0;        ///< over the finite entries
  index_t negative = 0;  ///< finite entries < 0
  index_t nan = 0;
  index_t infinite = 0;  ///< +inf and -inf
  /// Matrix Market only: entry lines at a position an earlier line gave (summed into one stored entry when
  /// read). min, max, negative, nan and infinite then count the lines as given, as `dnmf factor` checks them.
  index_t duplicates = 0;
};

/// Scans every entry once; counts all problems rather than stopping at the first.
template <class T>
EntryStats entry_stats(const MatrixRef<T>& matrix);

/// What inspect() learns about a matrix file.
struct MatrixInfo {
  io::FileFormat format = io::FileFormat::npy;
  /// The stored element type as numpy writes it ("f8", "f4", "i4"); "f8" for .mtx, HDF5 and a scipy .npz.
  std::string dtype;
  bool fortran_order = false;  ///< .npy and .npz arrays: column-major on disk
  bool sparse = false;         ///< read as CSR (.mtx, .dcsr, a scipy .npz, an HDF5 CSR or CSC group)
  EntryStats stats;            ///< from the entries read as float64
};

/// Reads the whole file `path` once and describes it; dnmf::Error names the file when it cannot be read.
MatrixInfo inspect(const std::string& path);

}  // namespace dnmf
