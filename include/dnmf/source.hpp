// dnmf: where the matrix A comes from. A Source names a file (read by every process for its own block) or
// borrows a matrix already in memory, without copying it.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <variant>

#include "dnmf/matrix.hpp"

namespace dnmf {

namespace detail {
/// Throws DataError unless the compressed arrays describe a valid matrix: `outer` lines (rows of CSR, columns of
/// CSC) of indices in 0..inner-1, strictly increasing within each line, and indptr from 0 up to `stored`,
/// never decreasing. `what` ("CSR" or "CSC") starts the message. A bad structure would make the kernels read
/// outside the arrays, so Source::csr and Source::csc check it once (O(stored)) before anything else runs.
void check_compressed(const char* what, index_t outer, index_t inner, const index_t* indptr, const col_index_t* indices,
                      index_t stored);

/// Throws UsageError unless a dense matrix's shape and leading dimension describe storage of its own: rows and cols
/// >= 0, and ld at least a line's length (rows, or cols when row_major) when there is more than one line. A
/// smaller ld would overlap the lines (another matrix, silently) and a negative one read before the array.
/// `what` starts the message.
void check_dense(const char* what, index_t rows, index_t cols, index_t ld, bool row_major = false);

/// Throws UsageError when a matrix of `count` entries (dense) or stored values (compressed) has no array to hold
/// them (`data` null): the kernels would read through the null pointer. `what` starts the message, `array`
/// names the array ("data", "values").
void check_storage(const char* what, const void* data, index_t count, const char* array);

/// rows · cols for check_storage, saturated at the largest index_t: a shape past 2^63 entries overflowed the
/// product (undefined behaviour) before any check saw it. Call after check_dense (rows, cols >= 0).
inline index_t entry_count(index_t rows, index_t cols) {
  index_t count = 0;
  return __builtin_mul_overflow(rows, cols, &count) ? std::numeric_limits<index_t>::max() : count;
}

/// check_dense or check_compressed, as the view is, and check_storage: what the entry points taking views run first.
template <class T>
void check_view(const char* what, const MatrixRef<T>& a) {
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    check_dense(what, d->rows, d->cols, d->ld);
    check_storage(what, d->data, entry_count(d->rows, d->cols), "data");
    return;
  }
  const auto& s = std::get<CsrView<T>>(a);
  const index_t stored = s.rows > 0 && s.indptr != nullptr ? s.indptr[s.rows] : 0;
  check_compressed("CSR", s.rows, s.cols, s.indptr, s.indices, stored);
  check_storage("sparse CSR matrix", s.values, stored, "values");
}
}  // namespace detail

/// The input of factor() and nmfk(): a matrix file, or a dense or CSR matrix in memory. In-memory sources
/// borrow their storage: it must outlive every call that uses the source (attach an owner to extend it).
/// A row-major dense matrix or a CSC matrix is held as the column-major (CSR) view of its transpose, which is the
/// same bytes; the entry points then factor Aᵀ ≈ Hᵀ Wᵀ and hand back W and H of A.
class Source {
 public:
  /// A matrix file, its format taken from the extension: .npy (dense, f4/f8, C or Fortran order), .npz
  /// (numpy.savez with one array, or "A.npz:NAME"; scipy.sparse.save_npz CSR or CSC), .mtx (Matrix Market
  /// coordinate), .h5/.hdf5/.h5ad with an optional object after a colon ("A.h5:/X": a dense dataset or a CSR or
  /// CSC group as AnnData writes it; an .h5ad means /X, "A.h5ad:/layers/NAME" a layer), .dcsr (dnmf's binary
  /// CSR). Nothing is opened until the source is used.
  static Source file(std::string path);

  /// A dense column-major matrix (entry (i, j) at data[i + j·ld]); UsageError for ld < rows (detail::check_dense).
  template <class T>
  static Source dense(DenseView<const T> a, std::shared_ptr<const void> owner = {}) {
    detail::check_dense("dense matrix", a.rows, a.cols, a.ld);
    detail::check_storage("dense matrix", a.data, detail::entry_count(a.rows, a.cols), "data");
    return Source(MatrixRef<T>{a}, false, std::move(owner));
  }
  /// A dense row-major matrix (entry (i, j) at data[i·ld + j]), e.g. a C-order numpy array; ld >= cols.
  template <class T>
  static Source dense_row_major(const T* data, index_t rows, index_t cols, index_t ld,
                                std::shared_ptr<const void> owner = {}) {
    detail::check_dense("row-major dense matrix", rows, cols, ld, true);
    detail::check_storage("row-major dense matrix", data, detail::entry_count(rows, cols), "data");
    return Source(MatrixRef<T>{DenseView<const T>(data, cols, rows, ld)}, true, std::move(owner));
  }
  /// A CSR matrix (column indices sorted and unique within each row); its structure is checked here
  /// (detail::check_compressed: DataError).
  template <class T>
  static Source csr(CsrView<T> a, std::shared_ptr<const void> owner = {}) {
    const index_t stored = a.rows > 0 && a.indptr != nullptr ? a.indptr[a.rows] : 0;
    detail::check_compressed("CSR", a.rows, a.cols, a.indptr, a.indices, stored);
    detail::check_storage("sparse CSR matrix", a.values, stored, "values");
    return Source(MatrixRef<T>{a}, false, std::move(owner));
  }
  /// A CSC matrix of rows x cols: `indptr` has cols + 1 entries, `indices` are row indices sorted within each column;
  /// checked as csr() checks.
  template <class T>
  static Source csc(index_t rows, index_t cols, const index_t* indptr, const col_index_t* indices, const T* values,
                    std::shared_ptr<const void> owner = {}) {
    const index_t stored = cols > 0 && indptr != nullptr ? indptr[cols] : 0;
    detail::check_compressed("CSC", cols, rows, indptr, indices, stored);
    detail::check_storage("sparse CSC matrix", values, stored, "values");
    return Source(MatrixRef<T>{CsrView<T>{cols, rows, indptr, indices, values}}, true, std::move(owner));
  }

  /// True for a file source.
  [[nodiscard]] bool is_file() const { return std::holds_alternative<std::monostate>(matrix_); }
  /// The file's path, or "<memory>" for an in-memory source: the name error messages and reports use.
  [[nodiscard]] const std::string& name() const { return name_; }
  /// True when the stored matrix is Aᵀ (row-major dense or CSC input).
  [[nodiscard]] bool transposed() const { return transposed_; }
  /// The stored in-memory matrix in precision T (Aᵀ when transposed()), or nullptr for a file or another precision.
  template <class T>
  [[nodiscard]] const MatrixRef<T>* stored() const {
    return std::get_if<MatrixRef<T>>(&matrix_);
  }
  /// True when an in-memory source holds float values (false for double and for files).
  [[nodiscard]] bool holds_float() const { return std::holds_alternative<MatrixRef<float>>(matrix_); }
  /// The same in-memory source with the other storage interpretation (used by the entry points to factor Aᵀ).
  [[nodiscard]] Source as_untransposed() const {
    Source s = *this;
    s.transposed_ = false;
    return s;
  }

 private:
  Source() = default;
  template <class T>
  Source(MatrixRef<T> a, bool transposed, std::shared_ptr<const void> owner)
      : name_("<memory>"), matrix_(a), transposed_(transposed), owner_(std::move(owner)) {}

  std::string name_;
  std::variant<std::monostate, MatrixRef<float>, MatrixRef<double>> matrix_;
  bool transposed_ = false;
  std::shared_ptr<const void> owner_;  ///< keeps a borrowed matrix alive (e.g. a Python array); may be empty
};

inline Source Source::file(std::string path) {
  Source s;
  s.name_ = std::move(path);
  return s;
}

}  // namespace dnmf
