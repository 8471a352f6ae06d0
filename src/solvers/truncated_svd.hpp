// Leading singular triplets of A by randomised subspace iteration, for NNDSVD initialisation.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kernels.hpp"

namespace dnmf::solvers {

/// A ≈ U diag(sigma) Vᵀ restricted to the leading `rank` triplets (float64, column-major U m x r, V n x r).
struct TruncatedSvd {
  index_t rank = 0;
  std::vector<double> sigma;
  std::vector<double> u;
  std::vector<double> v;
};

/// Randomised range finder with `power_iterations` re-orthonormalised power steps (Halko, Martinsson &
/// Tropp 2011), products taken through the kernel interface so that dense and CSR A are both served.
/// `transposed`: `a` holds the transpose of the matrix whose triplets are wanted (a C-order array or a CSC
/// matrix handed over as its transpose); the sketch is then drawn on that matrix's side, so that both storage
/// orders get the same triplets up to the order of sums. U has its rows, V its columns.
template <class T>
TruncatedSvd truncated_svd(backend::Kernels<T>& kernels, const MatrixRef<T>& a, index_t rank, std::uint64_t seed,
                           int power_iterations = 4, bool transposed = false);

}  // namespace dnmf::solvers
