// The alternating iteration shared by every solver (DESIGN §3-4): H half, then W half, each through the
// kernel interface and the communicator; fused into one pass over A where the layout and grid allow.
#pragma once

#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/grid.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"

namespace dnmf::solvers {

/// Runs the iteration on this rank's block `a` (layout.a_rows x layout.a_cols, on `kernels`) from its
/// factor pieces `factors` (host; Wt: k x layout.w_rows, H: k x layout.h_cols) and leaves the final pieces
/// there. `stats` is A's global sum and squared norm. Every rank of `grid` calls it together. The result's
/// W/H fields are left empty (the caller lays them out); the history is the global one, on every rank.
/// `a_is_transpose`: `a`, `layout`, `options`' penalties and `factors` are those of Aᵀ for the caller's A (a
/// row-major or CSC source). Either way the caller's H is updated first in each iteration, or its W with
/// options.w_first (the iteration runs on the transposed view of `a` where that is what the order needs).
template <class T>
FactorResult<T> iterate(backend::Kernels<T>& kernels, backend::Operand<T>& a, const dist::Grid& grid,
                        const dist::Layout& layout, const FactorOptions& options, const backend::MatrixStats& stats,
                        Factors<T>& factors, bool a_is_transpose = false);

}  // namespace dnmf::solvers
