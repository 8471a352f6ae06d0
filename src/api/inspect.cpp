// dnmf::inspect and entry statistics: what `dnmf info` shows about a matrix file.

#include "dnmf/inspect.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "dnmf/source.hpp"
#include "io/block_read.hpp"
#include "io/csr_build.hpp"
#include "io/dcsr.hpp"
#include "io/input_file.hpp"
#include "io/mtx_lines.hpp"
#include "io/mtx_parse.hpp"
#include "io/npy_header.hpp"
#include "io/npz.hpp"

namespace dnmf {
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

/// Entries not stored are zeros and take part in min and max like any other.
void take_unstored_zeros(EntryStats& s) {
  if (!(s.min <= 0)) s.min = 0;
  if (!(s.max >= 0)) s.max = 0;
}

/// entry_stats without the structure check: `dnmf info`'s Matrix Market lines repeat positions on purpose.
template <class T>
EntryStats stats_of(const MatrixRef<T>& matrix) {
  EntryStats s;
  s.rows = rows_of(matrix);
  s.cols = cols_of(matrix);
  s.min = s.max = std::numeric_limits<double>::quiet_NaN();
  if (const auto* dense = std::get_if<DenseView<const T>>(&matrix)) {
    s.stored = s.rows * s.cols;
    if (s.stored == 0) return s;  // a (0, 2**40) array ran its 2**40 empty columns (minutes)
    for (index_t j = 0; j < s.cols; ++j) {
      for (index_t i = 0; i < s.rows; ++i) add_entry(s, static_cast<double>((*dense)(i, j)));
    }
  } else {
    const auto& csr = std::get<CsrView<T>>(matrix);
    s.stored = csr.nnz();
    for (index_t k = csr.indptr[0]; k < csr.indptr[csr.rows]; ++k) add_entry(s, static_cast<double>(csr.values[k]));
    if (s.stored < s.rows * s.cols) take_unstored_zeros(s);
  }
  return s;
}

}  // namespace

template <class T>
EntryStats entry_stats(const MatrixRef<T>& matrix) {
  detail::check_view("entry_stats", matrix);  // a caller's view: a bad one would be read outside its arrays
  return stats_of(matrix);
}

MatrixInfo inspect(const std::string& path) {
  MatrixInfo info;
  info.format = io::format_of(path);
  info.dtype = "f8";                   // Matrix Market and HDF5 values are reported as read (float64)
  std::optional<io::NpyHeader> array;  // a .npy, or an array member of a .npz (not a scipy matrix)
  if (info.format == io::FileFormat::npy) {
    array = io::read_npy_header(path);
  } else if (info.format == io::FileFormat::npz) {
    array = io::npz_array_header(path);
  } else if (info.format == io::FileFormat::dcsr) {
    info.dtype = io::read_dcsr_header(path).value_bytes == 4 ? "f4" : "f8";
  }
  if (array) {
    info.fortran_order = array->fortran_order;
    info.dtype = io::dtype_name(*array);
  }
  // Read in double: every f4 and most integer values convert exactly, so the counts are the file's.
  if (info.format == io::FileFormat::matrix_market) {
    // factor checks each line before duplicates are summed, so the checks' figures and the sum (of the finite
    // lines: the merge keeps a bad duplicate instead of adding it) come from the lines; the stored count,
    // non-zeros, min and max from the merged matrix, the one factor fits (two lines of 3 at one place are a 6).
    io::check_row_pointers_fit(path, io::read_shape(path).rows);  // before the lines' row pointers are allocated
    const CsrMatrix<double> lines = io::read_mtx_lines<double>(path);
    const EntryStats as_given = stats_of<double>(lines.view());
    std::vector<index_t> indptr = lines.indptr();
    std::vector<col_index_t> indices = lines.indices();
    std::vector<double> values = lines.values();
    io::detail::MergeOverflow overflow;  // duplicates adding up to inf: factor refuses those places too
    io::detail::sort_and_merge_rows(lines.rows(), indptr, indices, values, &overflow);
    const CsrMatrix<double> summed(lines.rows(), lines.cols(), std::move(indptr), std::move(indices),
                                   std::move(values));
    info.sparse = true;
    info.stats = entry_stats<double>(summed.view());
    info.stats.duplicates = lines.nnz() - summed.nnz();
    if (io::mtx::read_header(io::detail::InputFile(path)).symmetric) {
      // A symmetric file's off-diagonal line is stored in both triangles, so its repetition merged twice: the
      // count is of lines, a diagonal one once and an off-diagonal one (either triangle) once.
      const auto diagonal = [](CsrView<double> v) {
        index_t count = 0;
        for (index_t i = 0; i < v.rows; ++i)
          for (index_t e = v.indptr[i]; e < v.indptr[i + 1]; ++e) count += static_cast<index_t>(v.indices[e] == i);
        return count;
      };
      const index_t diagonal_repeats = diagonal(lines.view()) - diagonal(summed.view());
      info.stats.duplicates = diagonal_repeats + (info.stats.duplicates - diagonal_repeats) / 2;
    }
    info.stats.sum = as_given.sum;
    info.stats.negative = as_given.negative;
    info.stats.nan = as_given.nan;
    info.stats.infinite = as_given.infinite + overflow.count;
    return info;
  }
  const io::LoadedMatrix<double> matrix = io::load_matrix<double>(path);
  info.sparse = matrix.sparse;
  info.stats = entry_stats(matrix.ref());
  return info;
}

template EntryStats entry_stats<float>(const MatrixRef<float>&);
template EntryStats entry_stats<double>(const MatrixRef<double>&);

}  // namespace dnmf
