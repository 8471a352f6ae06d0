// dnmf: matrix containers and non-owning views (dense column-major, CSR sparse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include "dnmf/index.hpp"

namespace dnmf {

/// CSR column indices: 32 bits keep the index stream small; a local block wider than 2^31 is rejected.
using col_index_t = std::int32_t;

/// Allocator of storage aligned to 64 bytes, a cache line. The kernels read a factor's columns of k values at
/// random (a sparse gather reads one per stored entry): at k = 16 doubles a column starting on a line takes two
/// lines where one starting 16 bytes in (malloc's alignment for large blocks) takes three, and the gathers ran
/// 1.4x slower for it.
template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  static constexpr std::size_t alignment = 64;
  CacheAlignedAllocator() noexcept = default;
  template <class U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>& /*other*/) noexcept {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignment}));
  }
  void deallocate(T* p, std::size_t /*n*/) noexcept { ::operator delete (p, std::align_val_t{alignment}); }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>& /*other*/) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const CacheAlignedAllocator<U>& /*other*/) const noexcept {
    return false;
  }
};

/// A vector whose entries start on a cache line.
template <class T>
using AlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

/// Non-owning view of a dense column-major matrix: entry (i, j) lives at data[i + j * ld].
/// T may be const-qualified for read-only views.
template <class T>
struct DenseView {
  T* data = nullptr;
  index_t rows = 0;
  index_t cols = 0;
  index_t ld = 0;

  DenseView() = default;
  DenseView(T* data_, index_t rows_, index_t cols_, index_t ld_) : data(data_), rows(rows_), cols(cols_), ld(ld_) {}
  DenseView(T* data_, index_t rows_, index_t cols_) : DenseView(data_, rows_, cols_, rows_ > 0 ? rows_ : 1) {}
  /// Views convert to their read-only counterpart.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  DenseView(const DenseView<U>& other) : data(other.data), rows(other.rows), cols(other.cols), ld(other.ld) {}

  T& operator()(index_t i, index_t j) const { return data[i + j * ld]; }
  [[nodiscard]] index_t size() const { return rows * cols; }
  [[nodiscard]] bool empty() const { return rows == 0 || cols == 0; }
  /// True when the entries form one contiguous run (no padding between columns).
  [[nodiscard]] bool contiguous() const { return ld == rows || cols <= 1; }
  /// Columns [first, last) as a view sharing storage.
  [[nodiscard]] DenseView columns(index_t first, index_t last) const {
    return {data + first * ld, rows, last - first, ld};
  }
  /// Rows [first, last) as a view sharing storage.
  [[nodiscard]] DenseView row_range(index_t first, index_t last) const {
    return {data + first, last - first, cols, ld};
  }
};

/// Owning dense column-major matrix (contiguous, ld == rows).
template <class T>
class DenseMatrix {
 public:
  DenseMatrix() = default;
  /// Throws std::length_error for a negative side or a size past index_t (rows * cols would wrap and the
  /// matrix be allocated too small), std::bad_alloc when memory runs out.
  DenseMatrix(index_t rows, index_t cols, T fill = T(0))
      : rows_(rows), cols_(cols), storage_(elements(rows, cols), fill) {}

  [[nodiscard]] index_t rows() const { return rows_; }
  [[nodiscard]] index_t cols() const { return cols_; }
  [[nodiscard]] T* data() { return storage_.data(); }
  [[nodiscard]] const T* data() const { return storage_.data(); }
  T& operator()(index_t i, index_t j) { return storage_[to_size(i + j * rows_)]; }
  const T& operator()(index_t i, index_t j) const { return storage_[to_size(i + j * rows_)]; }
  [[nodiscard]] DenseView<T> view() { return {data(), rows_, cols_, rows_ > 0 ? rows_ : 1}; }
  [[nodiscard]] DenseView<const T> view() const { return {data(), rows_, cols_, rows_ > 0 ? rows_ : 1}; }
  [[nodiscard]] AlignedVector<T>& storage() { return storage_; }
  [[nodiscard]] const AlignedVector<T>& storage() const { return storage_; }

 private:
  static std::size_t elements(index_t rows, index_t cols) {
    index_t count = 0;
    if (rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &count) ||
        count > static_cast<index_t>(std::numeric_limits<std::size_t>::max() / sizeof(T)))
      throw std::length_error("dense matrix size out of range");
    return to_size(count);
  }

  index_t rows_ = 0;
  index_t cols_ = 0;
  AlignedVector<T> storage_;  // on a cache line: see CacheAlignedAllocator
};

/// Non-owning view of a CSR matrix. indptr has rows + 1 entries; entries of row i are [indptr[i], indptr[i + 1]).
/// Inside the library indptr[0] may be non-zero (row_range(): a row range of a larger matrix); the entry points
/// (Source::csr, factorize(), transform(), ...) take whole matrices, indptr[0] = 0 (detail::check_compressed).
template <class T>
struct CsrView {
  index_t rows = 0;
  index_t cols = 0;
  const index_t* indptr = nullptr;
  const col_index_t* indices = nullptr;
  const T* values = nullptr;

  [[nodiscard]] index_t nnz() const { return rows > 0 ? indptr[rows] - indptr[0] : 0; }
  /// Rows [first, last) as a view sharing storage.
  [[nodiscard]] CsrView row_range(index_t first, index_t last) const {
    return {last - first, cols, indptr + first, indices, values};
  }
};

/// Owning CSR matrix; column indices within a row are sorted and unique.
template <class T>
class CsrMatrix {
 public:
  CsrMatrix() : indptr_(1, 0) {}
  CsrMatrix(index_t rows, index_t cols, std::vector<index_t> indptr, std::vector<col_index_t> indices,
            std::vector<T> values)
      : rows_(rows),
        cols_(cols),
        indptr_(std::move(indptr)),
        indices_(std::move(indices)),
        values_(std::move(values)) {}

  [[nodiscard]] index_t rows() const { return rows_; }
  [[nodiscard]] index_t cols() const { return cols_; }
  [[nodiscard]] index_t nnz() const { return static_cast<index_t>(values_.size()); }
  [[nodiscard]] const std::vector<index_t>& indptr() const { return indptr_; }
  [[nodiscard]] const std::vector<col_index_t>& indices() const { return indices_; }
  [[nodiscard]] const std::vector<T>& values() const { return values_; }
  [[nodiscard]] std::vector<T>& values() { return values_; }
  [[nodiscard]] CsrView<T> view() const { return {rows_, cols_, indptr_.data(), indices_.data(), values_.data()}; }

 private:
  index_t rows_ = 0;
  index_t cols_ = 0;
  std::vector<index_t> indptr_;
  std::vector<col_index_t> indices_;
  std::vector<T> values_;
};

/// The input matrix A as the solvers see it: a dense or a CSR view.
template <class T>
using MatrixRef = std::variant<DenseView<const T>, CsrView<T>>;

template <class T>
[[nodiscard]] index_t rows_of(const MatrixRef<T>& a) {
  return std::visit([](const auto& v) { return v.rows; }, a);
}
template <class T>
[[nodiscard]] index_t cols_of(const MatrixRef<T>& a) {
  return std::visit([](const auto& v) { return v.cols; }, a);
}
template <class T>
[[nodiscard]] bool is_sparse(const MatrixRef<T>& a) {
  return std::holds_alternative<CsrView<T>>(a);
}

}  // namespace dnmf
