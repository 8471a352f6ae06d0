// CSR products through cuSPARSE's generic SpMM, in the backend's k x d column-major layout.
#pragma once

#include "backend/cuda/context.hpp"
#include "backend/cuda/resident.hpp"
#include "backend/kernels.hpp"

namespace dnmf::backend::cuda {

/// out = Y·A (Side::H, out k x cols) or Y·Aᵀ (Side::W, out k x rows), plus beta·out, for a CSR A on the device.
///
/// A column-major k x d matrix with leading dimension ld is, read row-major, the d x k matrix of its
/// transpose with the same ld. So outᵀ = op(A)·Yᵀ is one SpMM on row-major dense operands:
/// Side::W: outᵀ (rows x k) = A · Yᵀ (cols x k); Side::H: outᵀ (cols x k) = Aᵀ · Yᵀ (rows x k), asked for as a
/// transposed CSR product or, where cuSPARSE refuses that, as a CSC product (A's arrays read as Aᵀ in CSC).
template <class T>
void spmm(Context& context, const DeviceCsr& a, Side side, CView<T> y, View<T> out, T beta);

}  // namespace dnmf::backend::cuda
