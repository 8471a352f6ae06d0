// Whole matrices on one process: reading any format, its shape, and converting between files
// (`dnmf info`, `dnmf convert`, in-memory entry points).

#include <cmath>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/dcsr.hpp"
#include "io/narrow.hpp"
#include "util/text.hpp"

namespace dnmf::io {
namespace {

// Dense to CSR, zeros dropped.
template <class T>
CsrMatrix<T> to_csr(const DenseMatrix<T>& d) {
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  for (index_t i = 0; i < d.rows(); ++i) {
    for (index_t j = 0; j < d.cols(); ++j)
      if (d(i, j) != T(0)) {
        indices.push_back(static_cast<col_index_t>(j));
        values.push_back(d(i, j));
      }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  return {d.rows(), d.cols(), std::move(indptr), std::move(indices), std::move(values)};
}

}  // namespace

std::string format_name(FileFormat format) {
  switch (format) {
    case FileFormat::npy:
      return "npy";
    case FileFormat::matrix_market:
      return "mtx";
    case FileFormat::hdf5:
      return "hdf5";
    case FileFormat::dcsr:
      return "dcsr";
    case FileFormat::npz:
      return "npz";
  }
  return "unknown";
}

MatrixShape read_shape(const std::string& path) {
  dist::SingleCommunicator self;
  return read_shape(path, self);
}

template <class T>
LoadedMatrix<T> load_matrix(const std::string& path) {
  LoadedMatrix<T> matrix;
  const FileFormat format = format_of(path);
  if (format == FileFormat::npy) {
    matrix.dense = read_npy<T>(path);
  } else if (format == FileFormat::matrix_market) {
    check_row_pointers_fit(path, read_shape(path).rows);
    matrix.sparse = true;
    matrix.csr = read_mtx<T>(path);
  } else {
    // HDF5, .dcsr, .npz: the block reader on one process, over the whole matrix, as stored like the others.
    dist::SingleCommunicator self;
    const MatrixShape shape = read_shape(path, self);
    LocalBlock<T> block = read_block<T>(path, {0, shape.rows}, {0, shape.cols}, self, false);
    matrix.sparse = block.sparse;
    matrix.dense = std::move(block.dense);
    matrix.csr = std::move(block.csr);
  }
  return matrix;
}

namespace {

// The stored values as the readers check them, NaN aside (kept for --missing nan): negative and infinite
// values, and values the precision cannot hold, are refused naming the place.
template <class T>
void check_values_keeping_nan(const std::string& path, const CsrView<T>& a) {
  for (index_t i = 0; i < a.rows; ++i)
    for (index_t q = a.indptr[i]; q < a.indptr[i + 1]; ++q)
      if (!std::isnan(a.values[q]) && !acceptable_entry(a.values[q]))
        throw DataError(path + ": " + describe_bad_entry(i, index_t{a.indices[q]}, a.values[q]));
}

}  // namespace

template <class T>
MatrixShape convert_matrix(const std::string& input, const std::string& output, bool nan_missing) {
  // Extensions in any case, as format_of reads them (an upper-case .DCSR input was refused as an output).
  const std::string out_name = util::lower_file_name(output);
  if (util::lower_file_name(input).ends_with(".dcsr")) {
    if (!out_name.ends_with(".mtx") && !out_name.ends_with(".dcsr"))
      throw UsageError(output + ": a .dcsr file converts to .mtx (or to .dcsr: rewritten with checksums)");
    CsrMatrix<T> a;
    if (nan_missing) {
      dist::SingleCommunicator self;
      const MatrixShape shape = read_shape(input, self);
      a = std::move(read_dcsr_block<T>(input, {0, shape.rows}, {0, shape.cols}, false).csr);
      check_values_keeping_nan(input, a.view());
    } else {
      a = read_dcsr<T>(input);
    }
    if (out_name.ends_with(".dcsr"))
      write_dcsr<T>(output, a.view());  // the current version: how a version-1 file gains its checksums
    else
      write_mtx<T>(output, a.view());
    return {a.rows(), a.cols(), a.nnz(), true};
  }
  if (!out_name.ends_with(".dcsr"))
    throw UsageError(output + ": the output must end in .dcsr (or convert a .dcsr to .mtx)");
  dist::SingleCommunicator self;
  const MatrixShape shape = read_shape(input, self);
  // Refused from the header, before the whole matrix is read: a header of 0 x 2^62 had the reader check 2^62
  // empty columns, and one of 2^62 x 0 allocate row pointers without end.
  if (shape.rows == 0 || shape.cols == 0)
    throw DataError(input + ": the matrix is empty (" + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                    "); dnmf factors no empty matrix, so there is nothing to convert");
  if (shape.cols > std::numeric_limits<col_index_t>::max())
    throw DataError(input + ": " + std::to_string(shape.cols) + " columns do not fit .dcsr's 32-bit column indices");
  LocalBlock<T> block = read_block<T>(input, {0, shape.rows}, {0, shape.cols}, self, !nan_missing);
  if (!block.sparse) block.csr = to_csr(block.dense);
  const CsrView<T> a = block.csr.view();
  if (nan_missing) check_values_keeping_nan(input, a);
  write_dcsr<T>(output, a);
  return {a.rows, a.cols, a.nnz(), true};
}

template <class T, class U>
LocalBlock<T> slice_block(const MatrixRef<U>& a, dist::Range rows, dist::Range cols) {
  LocalBlock<T> b;
  if (const auto* d = std::get_if<DenseView<const U>>(&a)) {
    b.dense = DenseMatrix<T>(rows.size(), cols.size());
    for (index_t j = cols.first; j < cols.last; ++j)
      for (index_t i = rows.first; i < rows.last; ++i)
        b.dense(i - rows.first, j - cols.first) = narrow_entry<T>((*d)(i, j));
    return b;
  }
  const auto& s = std::get<CsrView<U>>(a);
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  for (index_t i = rows.first; i < rows.last; ++i) {
    for (index_t q = s.indptr[i]; q < s.indptr[i + 1]; ++q) {
      const index_t j = s.indices[q];
      if (j < cols.first || j >= cols.last) continue;
      indices.push_back(static_cast<col_index_t>(j - cols.first));
      values.push_back(narrow_entry<T>(s.values[q]));
    }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  b.sparse = true;
  b.csr = CsrMatrix<T>(rows.size(), cols.size(), std::move(indptr), std::move(indices), std::move(values));
  return b;
}

template LocalBlock<float> slice_block<float, float>(const MatrixRef<float>&, dist::Range, dist::Range);
template LocalBlock<float> slice_block<float, double>(const MatrixRef<double>&, dist::Range, dist::Range);
template LocalBlock<double> slice_block<double, float>(const MatrixRef<float>&, dist::Range, dist::Range);
template LocalBlock<double> slice_block<double, double>(const MatrixRef<double>&, dist::Range, dist::Range);
template LoadedMatrix<float> load_matrix<float>(const std::string&);
template LoadedMatrix<double> load_matrix<double>(const std::string&);
template MatrixShape convert_matrix<float>(const std::string&, const std::string&, bool);
template MatrixShape convert_matrix<double>(const std::string&, const std::string&, bool);

}  // namespace dnmf::io
