// See sources.hpp.

#include "sources.hpp"

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "gil.hpp"

namespace nb = nanobind;

namespace dnmf::python {
namespace {

/// What a Source borrows from Python (the arrays, which hold their owners) and what was converted for it. The
/// last reference may be dropped by a C++ copy of the source on a thread without the GIL, so the release takes
/// it.
struct Held {
  std::vector<AnyMatrix> matrices;
  std::vector<AnyVector> vectors;
  std::vector<index_t> indptr;
  std::vector<col_index_t> indices;
};

std::shared_ptr<Held> make_held() {
  return {new Held, [](Held* held) {
            GilAcquire gil;
            delete held;
          }};
}

std::string dtype_name(const nb::dlpack::dtype& t) {
  const char* kind = t.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float)  ? "float"
                     : t.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int)  ? "int"
                     : t.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt) ? "uint"
                                                                                         : "other";
  return std::string(kind) + std::to_string(t.bits);
}

template <class T, class Array>
bool is(const Array& a) {
  return a.dtype() == nb::dtype<T>();
}

template <class T>
Source dense_of(const AnyMatrix& a) {
  const auto rows = static_cast<index_t>(a.shape(0));
  const auto cols = static_cast<index_t>(a.shape(1));
  const auto* data = static_cast<const T*>(a.data());
  auto held = make_held();
  held->matrices.push_back(a);
  std::shared_ptr<const void> keep = held;
  // A single row or column is contiguous in either order; strides of length-1 dimensions say nothing.
  const bool fortran = (rows <= 1 || a.stride(0) == 1) && (cols <= 1 || a.stride(1) == rows);
  const bool c_order = (cols <= 1 || a.stride(1) == 1) && (rows <= 1 || a.stride(0) == cols);
  if (fortran) return Source::dense(DenseView<const T>(data, rows, cols, rows > 0 ? rows : 1), keep);
  if (c_order) return Source::dense_row_major(data, rows, cols, cols > 0 ? cols : 1, keep);
  throw nb::type_error("dnmf: the array is neither C- nor Fortran-contiguous (pass np.ascontiguousarray(X))");
}

/// Whether a vector's entries lie next to each other (an empty or one-entry vector's stride says nothing: numpy
/// gives an empty one stride 0).
bool contiguous(const AnyVector& v) { return v.shape(0) <= 1 || v.stride(0) == 1; }

/// Entry i of an int32 or int64 vector, whatever its stride.
std::int64_t entry(const AnyVector& v, std::size_t i) {
  const std::size_t at = i * static_cast<std::size_t>(v.stride(0));
  if (is<std::int32_t>(v)) return static_cast<const std::int32_t*>(v.data())[at];
  return static_cast<const std::int64_t*>(v.data())[at];
}

void check_index_dtype(const AnyVector& v, const char* what) {
  if (!is<std::int32_t>(v) && !is<std::int64_t>(v))
    throw nb::type_error(
        ("dnmf: " + std::string(what) + " of dtype " + dtype_name(v.dtype()) + " (expected int32 or int64)").c_str());
}

/// indptr as int64: borrowed when it is contiguous int64 already, else copied into `widened`.
const index_t* indptr_of(const AnyVector& indptr, std::vector<index_t>& widened) {
  check_index_dtype(indptr, "indptr");
  if (is<std::int64_t>(indptr) && contiguous(indptr)) return static_cast<const index_t*>(indptr.data());
  widened.resize(indptr.shape(0));
  for (std::size_t i = 0; i < widened.size(); ++i) widened[i] = entry(indptr, i);
  return widened.data();
}

/// indices as int32: borrowed when they are contiguous int32 already, else copied into `narrowed`.
const col_index_t* indices_of(const AnyVector& indices, std::vector<col_index_t>& narrowed) {
  check_index_dtype(indices, "indices");
  if (is<std::int32_t>(indices) && contiguous(indices)) return static_cast<const col_index_t*>(indices.data());
  narrowed.resize(indices.shape(0));
  for (std::size_t i = 0; i < narrowed.size(); ++i) {
    const std::int64_t v = entry(indices, i);
    if (v < 0 || v > std::numeric_limits<col_index_t>::max())
      throw Error("sparse matrix: index " + std::to_string(v) + " at position " + std::to_string(i) +
                  " does not fit the int32 indices dnmf uses");
    narrowed[i] = static_cast<col_index_t>(v);
  }
  return narrowed.data();
}

template <class T>
Source sparse_of(std::int64_t rows, std::int64_t cols, const index_t* indptr, const col_index_t* indices,
                 const AnyVector& data, bool by_rows, std::shared_ptr<const void> keep) {
  const auto* values = static_cast<const T*>(data.data());
  if (by_rows) return Source::csr<T>(CsrView<T>{rows, cols, indptr, indices, values}, std::move(keep));
  return Source::csc<T>(rows, cols, indptr, indices, values, std::move(keep));
}

}  // namespace

Source dense_source(const AnyMatrix& array) {
  if (is<double>(array)) return dense_of<double>(array);
  if (is<float>(array)) return dense_of<float>(array);
  throw nb::type_error(
      ("dnmf: dense input of dtype " + dtype_name(array.dtype()) + " (expected float32 or float64)").c_str());
}

Source sparse_source(std::int64_t rows, std::int64_t cols, const AnyVector& indptr, const AnyVector& indices,
                     const AnyVector& data, bool by_rows) {
  if (rows < 0 || cols < 0) throw Error("sparse matrix: negative shape");
  const std::int64_t outer = by_rows ? rows : cols;
  if (static_cast<std::int64_t>(indptr.shape(0)) != outer + 1)
    throw Error("sparse matrix: indptr has " + std::to_string(indptr.shape(0)) + " entries, expected " +
                std::to_string(outer + 1));
  if (indices.shape(0) != data.shape(0))
    throw Error("sparse matrix: " + std::to_string(indices.shape(0)) + " indices but " + std::to_string(data.shape(0)) +
                " values");
  if (!contiguous(data)) throw nb::type_error("dnmf: sparse values must be contiguous");
  if (!is<double>(data) && !is<float>(data))
    throw nb::type_error(
        ("dnmf: sparse values of dtype " + dtype_name(data.dtype()) + " (expected float32 or float64)").c_str());

  // Converted parts live in the owner, beside the arrays whose memory is borrowed.
  auto held = make_held();
  held->vectors = {indptr, indices, data};
  const index_t* p = indptr_of(indptr, held->indptr);
  const col_index_t* i = indices_of(indices, held->indices);
  // Source::csr/csc check the structure against indptr's end; that end must be the arrays' length first.
  if (outer > 0 && p[outer] != static_cast<index_t>(data.shape(0)))
    throw DataError(std::string("sparse ") + (by_rows ? "CSR" : "CSC") + " matrix: indptr ends at " +
                    std::to_string(p[outer]) + " but there are " + std::to_string(data.shape(0)) + " stored entries");
  std::shared_ptr<const void> keep = held;
  if (is<double>(data)) return sparse_of<double>(rows, cols, p, i, data, by_rows, std::move(keep));
  return sparse_of<float>(rows, cols, p, i, data, by_rows, std::move(keep));
}

bool holds_float(const Source& source) { return source.holds_float(); }

}  // namespace dnmf::python
