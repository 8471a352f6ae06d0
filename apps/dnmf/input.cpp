// Reading input matrices and scanning their entries for `dnmf info` and the factor report.

#include "input.hpp"

#include <cmath>
#include <limits>
#include <variant>

#include "dist/communicator.hpp"
#include "io/block_read.hpp"

namespace dnmf::cli {

template <class T>
LoadedMatrix<T> load_matrix(const std::string& path) {
  LoadedMatrix<T> matrix;
  matrix.format = io::format_of(path);
  if (matrix.format == io::FileFormat::npy) {
    matrix.dense = io::read_npy<T>(path);
  } else if (matrix.format == io::FileFormat::matrix_market) {
    matrix.csr = io::read_mtx<T>(path);
  } else {
    // HDF5, .dcsr: the block reader on one process, over the whole matrix (it refuses negative entries itself).
    dist::SingleCommunicator self;
    const io::MatrixShape shape = io::read_shape(path, self);
    io::LocalBlock<T> block = io::read_block<T>(path, {0, shape.rows}, {0, shape.cols}, self);
    if (block.sparse) {
      matrix.format = io::FileFormat::matrix_market;  // held as CSR, like a Matrix Market file
      matrix.csr = std::move(block.csr);
    } else {
      matrix.format = io::FileFormat::npy;  // held dense
      matrix.dense = std::move(block.dense);
    }
  }
  return matrix;
}

template <class T>
void require_nonnegative(const LoadedMatrix<T>& matrix, const std::string& path) {
  if (matrix.format == io::FileFormat::npy) {
    io::check_nonnegative<T>(matrix.dense.view(), path);
  } else {
    io::check_nonnegative<T>(matrix.csr.view(), path);
  }
}

std::string format_name(io::FileFormat format) {
  switch (format) {
    case io::FileFormat::npy:
      return "npy";
    case io::FileFormat::matrix_market:
      return "mtx";
    case io::FileFormat::hdf5:
      return "hdf5";
    case io::FileFormat::dcsr:
      return "dcsr";
  }
  return "unknown";
}

namespace {

/// Accumulates one entry into the statistics.
void add_entry(EntryStats& s, double v) {
  if (std::isnan(v)) {
    ++s.nan;
    ++s.nonzeros;
    return;
  }
  if (v != 0) ++s.nonzeros;
  // The categories are disjoint: -inf counts as infinite, not as negative.
  if (std::isinf(v)) {
    ++s.infinite;
  } else {
    s.sum += v;
    if (v < 0) ++s.negative;
  }
  // NaN-initialised min/max: the first comparable entry replaces them.
  if (!(v >= s.min)) s.min = v;
  if (!(v <= s.max)) s.max = v;
}

}  // namespace

template <class T>
EntryStats entry_stats(const MatrixRef<T>& matrix) {
  EntryStats s;
  s.rows = rows_of(matrix);
  s.cols = cols_of(matrix);
  s.min = s.max = std::numeric_limits<double>::quiet_NaN();
  if (const auto* dense = std::get_if<DenseView<const T>>(&matrix)) {
    s.stored = s.rows * s.cols;
    for (index_t j = 0; j < s.cols; ++j) {
      for (index_t i = 0; i < s.rows; ++i) add_entry(s, static_cast<double>((*dense)(i, j)));
    }
  } else {
    const auto& csr = std::get<CsrView<T>>(matrix);
    s.stored = csr.nnz();
    for (index_t k = csr.indptr[0]; k < csr.indptr[csr.rows]; ++k) add_entry(s, static_cast<double>(csr.values[k]));
    // Entries not stored are zeros and take part in min and max like any other.
    if (s.stored < s.rows * s.cols) {
      if (!(s.min <= 0)) s.min = 0;
      if (!(s.max >= 0)) s.max = 0;
    }
  }
  return s;
}

template LoadedMatrix<float> load_matrix<float>(const std::string&);
template LoadedMatrix<double> load_matrix<double>(const std::string&);
template void require_nonnegative<float>(const LoadedMatrix<float>&, const std::string&);
template void require_nonnegative<double>(const LoadedMatrix<double>&, const std::string&);
template EntryStats entry_stats<float>(const MatrixRef<float>&);
template EntryStats entry_stats<double>(const MatrixRef<double>&);

}  // namespace dnmf::cli
