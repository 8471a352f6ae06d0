// Initial factors: random (counter-based), NNDSVD / NNDSVDa, or given by the caller.
#pragma once

#include "backend/kernels.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/options.hpp"

namespace dnmf::solvers {

/// The two factors in the solvers' layout: Wt is k x m (W stored row-major), H is k x n.
template <class T>
struct Factors {
  DenseMatrix<T> wt;
  DenseMatrix<T> h;
};

/// Builds the initial factors on the host. `host_kernels` serves NNDSVD's products with A; `stats` is
/// A's sum and squared norm (the random init is scaled to A's mean). Given factors are checked for
/// shape and sign (dnmf::Error otherwise).
template <class T>
Factors<T> initialise(backend::Kernels<T>& host_kernels, const MatrixRef<T>& a, const FactorOptions& options,
                      const backend::MatrixStats& stats, const DenseMatrix<T>* w0, const DenseMatrix<T>* h0);

}  // namespace dnmf::solvers
