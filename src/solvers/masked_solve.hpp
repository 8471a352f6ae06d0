// A masked factorisation on one process from the built problem: the start (random scaled to the observed
// entries' mean, NNDSVD of the dense W∘A, or given factors), the masked iteration, the final figures.
#pragma once

#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_problem.hpp"

namespace dnmf::solvers {

/// Factorises `problem` (options checked against its m x n); fills `factors` (Wt: k x m, H: k x n) and returns
/// the figures (W/H empty). UsageError for NNDSVD on a problem without dense storage.
template <class T>
FactorResult<T> solve_masked(const MaskedProblem<T>& problem, const FactorOptions& options, Factors<T>& factors,
                             const DenseMatrix<T>* W0 = nullptr, const DenseMatrix<T>* H0 = nullptr);

}  // namespace dnmf::solvers
