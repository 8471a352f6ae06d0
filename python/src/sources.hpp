// dnmf Python bindings: dnmf::Source from numpy arrays and scipy.sparse parts, borrowed without copying.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>

#include "dnmf/source.hpp"

namespace dnmf::python {

/// A 2-D array as the bindings accept it: any dtype and strides (checked by the constructors below), read-only
/// and memory-mapped arrays included.
using AnyMatrix = nanobind::ndarray<nanobind::ro, nanobind::ndim<2>, nanobind::device::cpu>;
/// A 1-D array of any dtype (the parts of a sparse matrix).
using AnyVector = nanobind::ndarray<nanobind::ro, nanobind::ndim<1>, nanobind::device::cpu>;

/// A dense float32/float64 array in C or Fortran order, borrowed: a Fortran-order array is A's column-major
/// storage, a C-order one Aᵀ's (Source::dense_row_major). The source keeps the array alive. TypeError for
/// another dtype or non-contiguous strides (the Python layer converts those once, before this call).
Source dense_source(const AnyMatrix& array);

/// A CSR matrix (`by_rows`) or a CSC matrix of rows x cols from scipy.sparse's indptr, indices and data. The
/// values are borrowed; int32 indices are borrowed, int64 ones narrowed once (ValueError when a value does
/// not fit); indptr is widened to int64 once when it is int32 (rows + 1 entries).
Source sparse_source(std::int64_t rows, std::int64_t cols, const AnyVector& indptr, const AnyVector& indices,
                     const AnyVector& data, bool by_rows);

/// True when the source's in-memory values are float32.
bool holds_float(const Source& source);

}  // namespace dnmf::python
