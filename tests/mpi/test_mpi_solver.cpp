// The distributed solver under mpirun against the one-process result. Every rank cuts its block out of the
// same deterministic matrix (make_layout's ranges), runs solvers::solve() on the cpu kernels with a resident
// block, and gather_factors() brings W and H to rank 0, which compares them with dnmf::factorize() on the
// whole matrix: every algorithm, dense and CSR, every grid shape of this job's size, fused and two-pass.
// Then the bytes each rank sends per iteration against DESIGN §4's model (dist::words_per_rank).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/solve.hpp"
#include "support/grid_shapes.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

using dist::GridShape;

// The test matrix: positive entries with zeros scattered in (more for the CSR cases), and on a grid of more
// than one rank the whole block of rank (pr-1, 0) zeroed, so that block holds no non-zeros at all.
DenseMatrix<double> test_matrix(index_t m, index_t n, GridShape shape, bool sparse, std::uint64_t seed) {
  DenseMatrix<double> a = test::random_dense<double>(m, n, seed, sparse ? 0.6 : 0.1);
  if (shape.size() > 1) {
    const dist::Layout empty = dist::make_layout(shape, shape.rows - 1, 0, m, n);
    for (index_t j = empty.a_cols.first; j < empty.a_cols.last; ++j)
      for (index_t i = empty.a_rows.first; i < empty.a_rows.last; ++i) a(i, j) = 0;
  }
  return a;
}

// A_ij of one rank, dense or CSR, with local indices.
struct LocalBlock {
  DenseMatrix<double> dense;
  CsrMatrix<double> csr;
  bool sparse = false;
  [[nodiscard]] MatrixRef<double> ref() const {
    return sparse ? MatrixRef<double>{csr.view()} : MatrixRef<double>{dense.view()};
  }
};

LocalBlock cut_block(const DenseMatrix<double>& a, const dist::Layout& l, bool sparse) {
  DenseMatrix<double> block(l.a_rows.size(), l.a_cols.size());
  for (index_t j = 0; j < block.cols(); ++j)
    for (index_t i = 0; i < block.rows(); ++i) block(i, j) = a(l.a_rows.first + i, l.a_cols.first + j);
  LocalBlock out;
  out.sparse = sparse;
  if (sparse)
    out.csr = test::to_csr(block);
  else
    out.dense = std::move(block);
  return out;
}

struct GridRun {
  FactorResult<double> result;
  DenseMatrix<double> W, H;  // on rank 0 only
  dist::Traffic traffic;
  index_t local_nnz = 0;
};

// One distributed factorisation of `a` on `shape` (the whole world). A failure on one rank would leave the
// others waiting in a collective, so an exception ends the job at once instead of at the CTest timeout.
GridRun run_on_grid(const DenseMatrix<double>& a, bool sparse, GridShape shape, const FactorOptions& options) {
  dist::Communicator& world = dist::world();
  try {
    const dist::Grid grid(world, shape);
    const dist::Layout layout = dist::make_layout(grid, a.rows(), a.cols());
    const LocalBlock block = cut_block(a, layout, sparse);
    auto kernels = backend::make_kernels<double>(BackendKind::cpu);
    auto host = backend::make_kernels<double>(BackendKind::cpu);
    const CsrMatrix<double> whole_csr = sparse && shape.size() == 1 ? test::to_csr(a) : CsrMatrix<double>{};
    const MatrixRef<double> whole = sparse ? MatrixRef<double>{whole_csr.view()} : MatrixRef<double>{a.view()};
    backend::ResidentOperand<double> operand(*kernels, kernels->make_resident(block.ref()));
    solvers::Solution<double> s =
        solvers::solve(*kernels, *host, operand, shape.size() == 1 ? &whole : nullptr, grid, layout, options);
    GridRun run;
    solvers::gather_factors(grid, layout, s.pieces, run.W, run.H, 0);
    run.result = std::move(s.result);
    run.traffic = s.iteration_traffic;
    run.local_nnz = sparse ? block.csr.nnz() : block.dense.rows() * block.dense.cols();
    return run;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] %s on grid %s: %s\n", world.rank(), sparse ? "csr" : "dense", shape.str().c_str(),
                 e.what());
    world.abort(3);
  }
  std::abort();  // not reached: abort() ends the job
}

// The single pass runs when no reduction separates a tile's numerator from its update: dense blocks on a
// grid with one row (H side) or one column (W side), CSR blocks (row tiles only) on a grid with one column.
bool expect_fused(bool sparse, GridShape shape, bool requested) {
  if (!requested) return false;
  return sparse ? shape.cols == 1 : shape.rows == 1 || shape.cols == 1;
}

using EqualityParam = std::tuple<Algorithm, bool /*sparse*/, bool /*fused*/, bool /*extrapolate*/>;

class GridEquality : public testing::TestWithParam<EqualityParam> {};

TEST_P(GridEquality, FactorsEqualTheOneProcessResult) {
  const auto [algorithm, sparse, fused, extrapolate] = GetParam();
  const index_t m = 37, n = 29;  // primes: no grid of 2 to 6 ranks divides them
  FactorOptions o;
  o.rank = 4;
  o.algorithm = algorithm;
  o.max_iterations = 30;
  o.tol = 1e-4;  // some runs (hals) stop early: the stop decision must be the same on every grid
  o.seed = 11;
  o.fused = fused;
  o.extrapolate = extrapolate;  // β is rank 0's on every rank, so the steps are the one process's
  for (const GridShape shape : test::grid_shapes(dist::world().size())) {
    SCOPED_TRACE("grid " + shape.str());
    const DenseMatrix<double> a = test_matrix(m, n, shape, sparse, 2024);
    const GridRun run = run_on_grid(a, sparse, shape, o);
    if (sparse && shape.size() > 1 && dist::world().rank() == (shape.rows - 1) * shape.cols) {
      EXPECT_EQ(run.local_nnz, 0) << "the block meant to be empty holds non-zeros";
    }
    if (dist::world().rank() != 0) continue;
    FactorResult<double> ref;
    if (sparse) {
      const CsrMatrix<double> csr = test::to_csr(a);
      ref = factorize<double>(MatrixRef<double>{csr.view()}, o);
    } else {
      ref = factorize<double>(MatrixRef<double>{a.view()}, o);
    }
    EXPECT_EQ(run.result.fused, expect_fused(sparse, shape, fused));
    EXPECT_EQ(run.result.iterations, ref.iterations);
    EXPECT_EQ(run.result.converged, ref.converged);
    ASSERT_EQ(run.W.rows(), m);
    ASSERT_EQ(run.H.cols(), n);
    EXPECT_LT(test::max_relative_difference(run.W, ref.W), 1e-8);
    EXPECT_LT(test::max_relative_difference(run.H, ref.H), 1e-8);
    EXPECT_NEAR(run.result.rel_error, ref.rel_error, 1e-8 * ref.rel_error + 1e-14);
    ASSERT_EQ(run.result.rel_error_history.size(), ref.rel_error_history.size());
    for (std::size_t t = 0; t < ref.rel_error_history.size(); ++t)
      EXPECT_NEAR(run.result.rel_error_history[t], ref.rel_error_history[t], 1e-8 * ref.rel_error_history[t])
          << "iteration " << t + 1;
  }
}

std::string equality_name(const testing::TestParamInfo<EqualityParam>& info) {
  const auto [algorithm, sparse, fused, extrapolate] = info.param;
  return to_string(algorithm) + (sparse ? "_csr" : "_dense") + (fused ? "_fused" : "_nofuse") +
         (extrapolate ? "_extrapolated" : "");
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, GridEquality,
                         testing::Combine(testing::Values(Algorithm::mu, Algorithm::kl, Algorithm::hals,
                                                          Algorithm::bpp),
                                          testing::Bool(), testing::Bool(), testing::Values(false)),
                         equality_name);
INSTANTIATE_TEST_SUITE_P(Extrapolated, GridEquality,
                         testing::Combine(testing::Values(Algorithm::hals, Algorithm::bpp), testing::Bool(),
                                          testing::Bool(), testing::Values(true)),
                         equality_name);

// More ranks along a grid direction than the matrix has rows (columns): some blocks have no rows (columns)
// at all, and their ranks still take part in every collective with empty pieces.
TEST(GridEqualityEdges, BlocksWithoutRowsOrColumns) {
  const int p = dist::world().size();
  if (p < 4) GTEST_SKIP() << "needs 4 or more processes";
  const index_t short_side = p - 2;  // p x 1 leaves two ranks without rows; 1 x p two without columns
  for (const bool sparse : {false, true})
    for (const Algorithm algorithm : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp})
      for (const GridShape shape : {GridShape{p, 1}, GridShape{1, p}}) {
        SCOPED_TRACE(to_string(algorithm) + (sparse ? " csr " : " dense ") + shape.str());
        FactorOptions o;
        o.rank = 2;
        o.algorithm = algorithm;
        o.max_iterations = 10;
        o.tol = 0;
        const DenseMatrix<double> a = shape.rows > 1 ? test::random_dense<double>(short_side, 9, 3, 0.2)
                                                     : test::random_dense<double>(9, short_side, 3, 0.2);
        const GridRun run = run_on_grid(a, sparse, shape, o);
        if (dist::world().rank() != 0) continue;
        FactorResult<double> ref;
        if (sparse) {
          const CsrMatrix<double> csr = test::to_csr(a);
          ref = factorize<double>(MatrixRef<double>{csr.view()}, o);
        } else {
          ref = factorize<double>(MatrixRef<double>{a.view()}, o);
        }
        EXPECT_LT(test::max_relative_difference(run.W, ref.W), 1e-8);
        EXPECT_LT(test::max_relative_difference(run.H, ref.H), 1e-8);
      }
}

using TrafficParam = std::tuple<Algorithm, bool /*sparse*/, bool /*fused*/>;

class GridTraffic : public testing::TestWithParam<TrafficParam> {};

// Bytes each rank sends per iteration (the setup's collectives included, spread over the iterations) within
// 10% of words_per_rank(shape, m, n, k) · sizeof(double).
TEST_P(GridTraffic, BytesPerRankMatchTheModel) {
  const auto [algorithm, sparse, fused] = GetParam();
  const index_t m = 211, n = 173;
  FactorOptions o;
  o.rank = 5;
  o.algorithm = algorithm;
  o.max_iterations = 30;
  o.tol = 0;
  o.seed = 3;
  o.fused = fused;
  for (const GridShape shape : test::grid_shapes(dist::world().size())) {
    SCOPED_TRACE("grid " + shape.str());
    const DenseMatrix<double> a = test_matrix(m, n, shape, sparse, 7);
    const GridRun run = run_on_grid(a, sparse, shape, o);
    ASSERT_EQ(run.result.iterations, o.max_iterations);
    const double measured = run.traffic.bytes_sent / run.result.iterations;
    // KL's halves also allreduce the other factor's row sums (k words each), which the grid's model (written to
    // compare grids, where they are the same for every shape) leaves out.
    const double p = shape.size();
    const double kl_words = algorithm == Algorithm::kl ? 2 * 2 * (p - 1) / p * static_cast<double>(o.rank) : 0.0;
    const double model = (dist::words_per_rank(shape, m, n, o.rank) + kl_words) * sizeof(double);
    if (shape.size() == 1) {
      EXPECT_EQ(measured, 0.0) << "one process sends nothing";
      continue;
    }
    EXPECT_NEAR(measured / model, 1.0, 0.10)
        << "rank " << dist::world().rank() << ": " << measured << " bytes/iteration, model " << model;
    // Over all ranks the model's m/pr and n/pc are exact averages: the totals agree more closely.
    const double total = dist::world().sum(measured);
    EXPECT_NEAR(total / (model * shape.size()), 1.0, 0.05);
  }
}

std::string traffic_name(const testing::TestParamInfo<TrafficParam>& info) {
  const auto [algorithm, sparse, fused] = info.param;
  return to_string(algorithm) + (sparse ? "_csr" : "_dense") + (fused ? "_fused" : "_nofuse");
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, GridTraffic,
                         testing::Combine(testing::Values(Algorithm::mu, Algorithm::kl, Algorithm::hals,
                                                          Algorithm::bpp),
                                          testing::Bool(), testing::Values(true)),
                         traffic_name);
INSTANTIATE_TEST_SUITE_P(TwoPass, GridTraffic,
                         testing::Values(TrafficParam{Algorithm::mu, false, false},
                                         TrafficParam{Algorithm::mu, true, false}),
                         traffic_name);

}  // namespace
}  // namespace dnmf
