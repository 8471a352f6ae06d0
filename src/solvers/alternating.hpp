// The alternating iteration shared by every solver (DESIGN §3): H half, then W half, each through the
// kernel interface; fused into one pass over A where the layout allows.
#pragma once

#include "backend/kernels.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"

namespace dnmf::solvers {

/// Runs the iteration from `start` (host factors, Wt k x m and H k x n) and returns the host factors in
/// the same layout together with the history. `a` must already be resident on `kernels`.
/// `stats` is A's sum and squared norm. The result's W/H fields are left empty (the caller lays them out).
template <class T>
FactorResult<T> iterate(backend::Kernels<T>& kernels, const MatrixRef<T>& a, const FactorOptions& options,
                        const backend::MatrixStats& stats, Factors<T>& factors);

}  // namespace dnmf::solvers
