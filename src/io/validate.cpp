// Input checks that turn a bad matrix into a message a scientist can act on, before any solver
// silently produces NaN factors from it.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/source.hpp"
#include "io/entry_scan.hpp"
#include "io/entry_text.hpp"
#include "io/hdf5_path.hpp"
#include "io/narrow.hpp"
#include "io/npz.hpp"
#include "util/text.hpp"

namespace dnmf::io {
namespace {

constexpr const char* kInputFormats = ".npy, .npz, .mtx, .h5/.hdf5/.h5ad or .dcsr";

// -0.0 passes (it compares equal to 0); NaN fails because every comparison with it is false.
template <class T>
bool acceptable(T value) {
  return acceptable_entry(value);
}

template <class T>
[[noreturn]] void report(const std::string& source, index_t row, index_t col, T value) {
  throw DataError(source + ": " + describe_bad_entry(row, col, value));
}

}  // namespace

template <class T>
std::string shortest_repr(T value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

std::string describe_narrowed(int marker, const char* rescaled) {
  if (marker == 3)
    return std::string("negative (beyond float32's range, so not shown); ") +
           (std::string(rescaled) == "mask" ? "mask weights must be finite and >= 0 (0 = missing)"
                                            : "input must be non-negative");
  return std::string(marker == 1 ? "finite but too large for single precision (float32 holds at most 3.4028235e+38)"
                                 : "non-zero but too small for single precision: it underflows to zero in float32 "
                                   "(the smallest is 1.4e-45)") +
         "; use --precision f64, or rescale the " + rescaled;
}

template <class T>
std::string describe_bad_entry(index_t row, index_t col, T value) {
  std::string message = "entry at row " + std::to_string(row) + ", column " + std::to_string(col) + " (0-based) is ";
  if (const int marker = narrow_marker(value); marker != 0) {
    message += describe_narrowed(marker, "matrix");
  } else if (std::isnan(value)) {
    message += "NaN; input must be finite and non-negative ";
    message += kNanMissingHint;
  } else if (std::isinf(value)) {
    message += std::string(value > 0 ? "inf" : "-inf") + "; input must be finite and non-negative";
  } else {
    message += shortest_repr(value) + "; input must be non-negative";
  }
  return message;
}

template <class T>
void check_nonnegative(DenseView<const T> matrix, const std::string& source, index_t row_offset, index_t col_offset,
                       bool transposed) {
  dnmf::detail::check_view(source.c_str(), MatrixRef<T>{matrix});
  for (index_t j = 0; j < matrix.cols; ++j) {
    const T* column = matrix.data + j * matrix.ld;
    if (all_acceptable(column, matrix.rows)) continue;
    const auto bad = std::find_if(column, column + matrix.rows, [](T v) { return !acceptable(v); });
    const index_t row = row_offset + (bad - column);
    const index_t col = col_offset + j;
    report(source, transposed ? col : row, transposed ? row : col, *bad);
  }
}

template <class T>
void check_nonnegative(CsrView<T> matrix, const std::string& source, index_t row_offset, index_t col_offset,
                       bool transposed) {
  // Null arrays were read through; the structure itself is check_view's, where the view enters the library.
  if (matrix.rows > 0 && matrix.indptr == nullptr) throw UsageError(source + ": sparse CSR matrix: no indptr array");
  if (matrix.rows > 0) dnmf::detail::check_storage(source.c_str(), matrix.values, matrix.nnz(), "values");
  // All stored values at once first: rows of a few dozen entries each are too short for the per-row check to
  // run at vector speed.
  if (matrix.rows == 0 || all_acceptable(matrix.values + matrix.indptr[0], matrix.nnz())) return;
  for (index_t i = 0; i < matrix.rows; ++i) {
    const index_t begin = matrix.indptr[i];
    const index_t end = matrix.indptr[i + 1];
    if (all_acceptable(matrix.values + begin, end - begin)) continue;
    for (index_t k = begin; k < end; ++k) {
      if (!acceptable(matrix.values[k])) {
        const index_t row = row_offset + i;
        const index_t col = col_offset + index_t{matrix.indices[k]};
        report(source, transposed ? col : row, transposed ? row : col, matrix.values[k]);
      }
    }
  }
}

template <class T>
void check_nonnegative(DenseView<const T> matrix, const std::string& source) {
  check_nonnegative(matrix, source, 0, 0);
}

template <class T>
void check_nonnegative(CsrView<T> matrix, const std::string& source) {
  check_nonnegative(matrix, source, 0, 0);
}

FileFormat format_of(const std::string& path) {
  if (path == "-")
    throw UsageError(std::string("-: reading a matrix from standard input is not supported; give its file (expected ") +
                     kInputFormats + ")");
  // Containers first: what follows their colon ("A.npz:x.npy") is a member's name, not the file's extension.
  if (is_hdf5_path(path)) return FileFormat::hdf5;
  if (is_npz_path(path)) return FileFormat::npz;
  const std::string name = util::lower_file_name(path);
  if (name.ends_with(".npy")) return FileFormat::npy;
  if (name.ends_with(".mtx")) return FileFormat::matrix_market;
  if (name.ends_with(".dcsr")) return FileFormat::dcsr;
  for (const char* compressed : {".gz", ".bz2", ".xz", ".zst"}) {
    if (name.ends_with(compressed)) {
      throw UsageError(path + ": compressed input is not supported (decompress it first; expected " + kInputFormats +
                       ")");
    }
  }
  throw UsageError(path + ": unknown input format (expected " + kInputFormats + ")");
}

template void check_nonnegative<float>(DenseView<const float>, const std::string&);
template void check_nonnegative<double>(DenseView<const double>, const std::string&);
template void check_nonnegative<float>(CsrView<float>, const std::string&);
template void check_nonnegative<double>(CsrView<double>, const std::string&);
template void check_nonnegative<float>(DenseView<const float>, const std::string&, index_t, index_t, bool);
template void check_nonnegative<double>(DenseView<const double>, const std::string&, index_t, index_t, bool);
template void check_nonnegative<float>(CsrView<float>, const std::string&, index_t, index_t, bool);
template void check_nonnegative<double>(CsrView<double>, const std::string&, index_t, index_t, bool);
template std::string shortest_repr<float>(float);
template std::string shortest_repr<double>(double);
template std::string describe_bad_entry<float>(index_t, index_t, float);
template std::string describe_bad_entry<double>(index_t, index_t, double);

}  // namespace dnmf::io

namespace dnmf::detail {

// Here, in io below api: io::write_npy checks its view too (check_compressed is in compressed_structure.cpp).
void check_dense(const char* what, index_t rows, index_t cols, index_t ld, bool row_major) {
  const std::string where = std::string(what) + ": ";
  if (rows < 0 || cols < 0)
    throw UsageError(where + "negative shape " + std::to_string(rows) + "x" + std::to_string(cols));
  const index_t length = row_major ? cols : rows, lines = row_major ? rows : cols;
  // One line never steps by ld; an empty matrix reads nothing.
  if (length > 0 && lines > 1 && ld < length)
    throw UsageError(where + "leading dimension " + std::to_string(ld) + " is smaller than the " +
                     std::to_string(length) + " entries of each " + (row_major ? "row" : "column") + " (" +
                     std::to_string(rows) + "x" + std::to_string(cols) + "): they would overlap");
}

void check_storage(const char* what, const void* data, index_t count, const char* array) {
  if (data == nullptr && count > 0)
    throw UsageError(std::string(what) + ": no " + array + " array (a null pointer) for its " + std::to_string(count) +
                     (std::string(array) == "values" ? " stored entries" : " entries"));
}

}  // namespace dnmf::detail
