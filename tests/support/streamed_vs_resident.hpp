// Test harness for "the streamed solve equals the resident one": the same options, the same solve around
// either operand, and one comparison, so the host, CPU and CUDA streaming tests hold every operand to the
// same bar.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/options.hpp"
#include "solvers/solve.hpp"
#include "support/random_matrices.hpp"

namespace dnmf::test {

/// One solve: this rank's solution, the operand's pass counts, and (set by streamed callers) its tile count.
struct Outcome {
  solvers::Solution<double> solution;
  backend::OperandStats stats;
  std::size_t tiles = 0;
};

/// Options that run exactly `iters` iterations (tol 0) of `algo` at rank `rank` from seed 11.
inline FactorOptions options_for(Algorithm algo, int iters, index_t rank = 4) {
  FactorOptions o;
  o.rank = rank;
  o.algorithm = algo;
  o.max_iterations = iters;
  o.tol = 0;
  o.seed = 11;
  return o;
}

/// Solves this rank's block `a` of `grid` with `kernels`, host-side work on `host`; the stats are read after.
inline Outcome solve_on(backend::Kernels<double>& kernels, backend::Kernels<double>& host, backend::Operand<double>& a,
                        const dist::Grid& grid, const dist::Layout& layout, const FactorOptions& options) {
  Outcome run;
  run.solution = solvers::solve<double>(kernels, host, a, nullptr, grid, layout, options);
  run.stats = a.operand_stats();
  return run;
}

/// Solves the whole of `a` in this process (a 1 x 1 grid).
inline Outcome solve_with(backend::Kernels<double>& kernels, backend::Kernels<double>& host,
                          backend::Operand<double>& a, const FactorOptions& options) {
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, a.rows(), a.cols());
  return solve_on(kernels, host, a, grid, layout, options);
}

/// Whether expect_same also compares the final (post-normalisation) errors.
enum class FinalError { compared, not_compared };

/// Expects `streamed` to equal `resident` within 1e-10 relative: factors, error history, final error, fused.
inline void expect_same(const Outcome& streamed, const Outcome& resident, const std::string& what,
                        FinalError final_error = FinalError::compared) {
  const auto& s = streamed.solution;
  const auto& r = resident.solution;
  EXPECT_LE(max_relative_difference(s.pieces.wt, r.pieces.wt), 1e-10) << what;
  EXPECT_LE(max_relative_difference(s.pieces.h, r.pieces.h), 1e-10) << what;
  const auto& sh = s.result.rel_error_history;
  const auto& rh = r.result.rel_error_history;
  ASSERT_EQ(sh.size(), rh.size()) << what;
  for (std::size_t i = 0; i < sh.size(); ++i)
    EXPECT_NEAR(sh[i], rh[i], 1e-10 * rh[i]) << what << " iteration " << i + 1;
  if (final_error == FinalError::compared) {
    EXPECT_NEAR(s.result.rel_error, r.result.rel_error, 1e-10 * r.result.rel_error) << what;
  }
  EXPECT_EQ(s.result.fused, r.result.fused) << what;
}

}  // namespace dnmf::test
