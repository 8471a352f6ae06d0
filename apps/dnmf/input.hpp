// dnmf CLI: reading an input matrix file (by extension) and summarising its entries.
#pragma once

#include <string>

#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::cli {

/// A matrix read from a file: dense (.npy) or CSR (.mtx), owning its storage.
template <class T>
struct LoadedMatrix {
  io::FileFormat format = io::FileFormat::npy;
  DenseMatrix<T> dense;  ///< the matrix when format == npy
  CsrMatrix<T> csr;      ///< the matrix when format == matrix_market

  /// The matrix as the solvers take it.
  [[nodiscard]] MatrixRef<T> ref() const {
    return format == io::FileFormat::npy ? MatrixRef<T>{dense.view()} : MatrixRef<T>{csr.view()};
  }
};

/// Reads `path` as .npy (dense) or .mtx (CSR) in precision T; throws dnmf::Error naming the file.
template <class T>
LoadedMatrix<T> load_matrix(const std::string& path);

/// Throws dnmf::Error naming `path`, row and column of the first negative, NaN or infinite entry.
template <class T>
void require_nonnegative(const LoadedMatrix<T>& matrix, const std::string& path);

/// "npy" or "mtx": the names used in reports.
std::string format_name(io::FileFormat format);

/// What `dnmf info` shows about the entries. Sparse matrices count their implicit zeros as entries.
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
};

/// Scans every entry once; counts all problems rather than stopping at the first.
template <class T>
EntryStats entry_stats(const MatrixRef<T>& matrix);

}  // namespace dnmf::cli
