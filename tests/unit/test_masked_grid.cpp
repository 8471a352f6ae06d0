// The masked grid solver's parts on one process (the grids themselves: tests/mpi/test_mpi_masked.cpp): on a 1x1
// grid it reproduces the one-process masked solver for every algorithm and storage form; a block's checks name
// the entry's place in A; the words-per-iteration model; the unchecked block reads it relies on.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "solvers/masked_block.hpp"
#include "solvers/masked_grid.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "support/error_message.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf {
namespace {

using solvers::StoredMatrix;

constexpr Algorithm kAlgorithms[] = {Algorithm::mu, Algorithm::hals, Algorithm::bpp, Algorithm::kl};

/// Weights: `missing` of the entries 0, `heavy` of the rest 3, the others 1.
DenseMatrix<double> weights(index_t m, index_t n, double missing, double heavy, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  DenseMatrix<double> w(m, n);
  for (double& v : w.storage()) v = u(rng) < missing ? 0.0 : (u(rng) < heavy ? 3.0 : 1.0);
  return w;
}

FactorOptions options_for(Algorithm algorithm) {
  FactorOptions o;
  o.rank = 3;
  o.algorithm = algorithm;
  o.max_iterations = 20;
  o.tol = 0;
  o.seed = 4;
  return o;
}

/// The one-process masked solver and the grid solver on a 1x1 grid, from the same A and mask.
void expect_one_by_one_grid_equals_one_process(const MatrixRef<double>& a, const MatrixRef<double>* mask,
                                               const MissingValues& missing, bool direct, const std::string& what) {
  const StoredMatrix<double> sa{&a, false, "A"};
  const StoredMatrix<double> sm{mask, false, "M"};
  const solvers::MaskedProblem<double> problem = solvers::build_masked_problem<double>(sa, sm, missing);
  const index_t m = rows_of(a), n = cols_of(a);
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, m, n);
  solvers::MaskedBlock<double> block = solvers::build_masked_block<double>(sa, sm, missing, {0, m}, {0, n});
  solvers::agree_masked_block(block, grid, layout, "A");
  EXPECT_EQ(block.problem.observed, problem.observed) << what;
  EXPECT_EQ(block.problem.h_half.direct_gram, direct) << what;
  EXPECT_EQ(problem.h_half.direct_gram, direct) << what;
  EXPECT_EQ(block.problem.unobserved_rows, problem.unobserved_rows) << what;
  EXPECT_EQ(block.problem.unobserved_cols, problem.unobserved_cols) << what;
  for (const Algorithm algorithm : kAlgorithms) {
    const FactorOptions o = options_for(algorithm);
    solvers::Factors<double> one;
    const FactorResult<double> r1 = solvers::solve_masked<double>(problem, o, one);
    const solvers::Solution<double> r2 = solvers::solve_masked_grid<double>(block, grid, layout, o);
    const std::string label = what + " " + to_string(algorithm);
    EXPECT_LE(test::max_relative_difference(r2.pieces.wt, one.wt), 1e-12) << label;
    EXPECT_LE(test::max_relative_difference(r2.pieces.h, one.h), 1e-12) << label;
    EXPECT_NEAR(r2.result.rel_error, r1.rel_error, 1e-12) << label;
    ASSERT_EQ(r2.result.objective_history.size(), r1.objective_history.size()) << label;
    for (std::size_t t = 0; t < r1.objective_history.size(); ++t)
      EXPECT_NEAR(r2.result.objective_history[t], r1.objective_history[t], 1e-10 * std::abs(r1.objective_history[t]))
          << label << " iteration " << t + 1;
    EXPECT_EQ(r2.result.observed, r1.observed) << label;
    EXPECT_TRUE(r2.result.masked) << label;
    EXPECT_EQ(r2.iteration_traffic.bytes_sent, 0.0) << label;  // one rank sends nothing
  }
}

TEST(MaskedGrid, OneByOneGridEqualsOneProcessDense) {
  const DenseMatrix<double> a = test::random_dense<double>(23, 17, 1);
  const DenseMatrix<double> few = weights(23, 17, 0.1, 0.1, 2);  // corrections of YᵀY
  DenseMatrix<double> most = weights(23, 17, 0.5, 0.5, 3);       // Grams over the observed entries
  for (index_t j = 0; j < 17; ++j) most(4, j) = 0;               // an unobserved row
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  const MatrixRef<double> fr = DenseView<const double>(few.view());
  const MatrixRef<double> mr = DenseView<const double>(most.view());
  const MissingValues missing;
  expect_one_by_one_grid_equals_one_process(ar, &fr, missing, false, "few missing");
  expect_one_by_one_grid_equals_one_process(ar, &mr, missing, true, "mostly missing");
}

TEST(MaskedGrid, OneByOneGridEqualsOneProcessSparseAndNan) {
  DenseMatrix<double> a = test::random_dense<double>(23, 17, 5, 0.6);
  const CsrMatrix<double> s = test::to_csr(a);
  const MatrixRef<double> sr = s.view();
  MissingValues unstored;
  unstored.unstored = Unstored::missing;
  expect_one_by_one_grid_equals_one_process(sr, nullptr, unstored, true, "unstored missing");
  a(2, 3) = std::numeric_limits<double>::quiet_NaN();
  a(7, 1) = std::numeric_limits<double>::quiet_NaN();
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  MissingValues nan;
  nan.nan_missing = true;
  expect_one_by_one_grid_equals_one_process(ar, nullptr, nan, false, "NaN missing");
}

// The grid solver times its threads as one process does (a governor switching between all threads and one), so
// its results must not depend on the thread count: 1, 2 and 3 threads give the same bits. The block is large
// enough (420 x 700, k = 8: about 1e7 flops per iteration) for the governor's trials to run.
TEST(MaskedGrid, SameBitsForAnyThreadCount) {
  const index_t m = 420, n = 700;
  const DenseMatrix<double> a = test::random_dense<double>(m, n, 9);
  const DenseMatrix<double> w = weights(m, n, 0.1, 0.1, 10);
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  const MatrixRef<double> wr = DenseView<const double>(w.view());
  const StoredMatrix<double> sa{&ar, false, "A"}, sw{&wr, false, "M"};
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, m, n);
  solvers::MaskedBlock<double> block = solvers::build_masked_block<double>(sa, sw, MissingValues{}, {0, m}, {0, n});
  solvers::agree_masked_block(block, grid, layout, "A");
  const int saved = omp_get_max_threads();
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = options_for(algorithm);
    o.rank = 8;
    o.max_iterations = 8;
    const auto run = [&](int threads) {
      omp_set_num_threads(threads);
      return solvers::solve_masked_grid<double>(block, grid, layout, o);
    };
    const solvers::Solution<double> one = run(1);
    EXPECT_LT(one.result.objective_history.back(), one.result.objective_history.front()) << to_string(algorithm);
    for (const int threads : {2, 3}) {
      const solvers::Solution<double> other = run(threads);
      const std::string label = to_string(algorithm) + ", " + std::to_string(threads) + " threads";
      EXPECT_EQ(other.pieces.wt.storage(), one.pieces.wt.storage()) << label;
      EXPECT_EQ(other.pieces.h.storage(), one.pieces.h.storage()) << label;
      EXPECT_EQ(other.result.objective_history, one.result.objective_history) << label;
    }
  }
  omp_set_num_threads(saved);
}

TEST(MaskedGrid, ABlockNamesTheEntryByItsPlaceInA) {
  // Rows [10, 20) x columns [5, 15) of A: local (3, 4) is A's (13, 9).
  DenseMatrix<double> a(10, 10, 1.0), w(10, 10, 1.0);
  w(3, 4) = -2.0;
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  const MatrixRef<double> wr = DenseView<const double>(w.view());
  const StoredMatrix<double> sa{&ar, false, "A.npy"}, sw{&wr, false, "M.npy"};
  const MissingValues none;
  std::string m = test::error_message([&] { solvers::build_masked_block<double>(sa, sw, none, {10, 20}, {5, 15}); });
  EXPECT_EQ(m,
            "M.npy: weight at row 13, column 9 (0-based) is -2; mask weights must be finite and >= 0 "
            "(0 = missing)");
  w(3, 4) = 1.0;
  a(0, 2) = std::numeric_limits<double>::quiet_NaN();
  m = test::error_message([&] { solvers::build_masked_block<double>(sa, sw, none, {10, 20}, {5, 15}); });
  EXPECT_NE(m.find("A.npy: entry at row 10, column 7"), std::string::npos) << m;
  EXPECT_NE(m.find("can be fitted as missing values: --missing nan"), std::string::npos) << m;
  EXPECT_EQ(m.find("missing nan"), m.rfind("missing nan")) << "the hint once: " << m;
  // Stored transposed (a row-major source): the stored (4, 3) is A's (3, 4) of the block.
  w(3, 4) = -2.0;
  a(0, 2) = 1.0;
  DenseMatrix<double> wt(10, 10);
  for (index_t i = 0; i < 10; ++i)
    for (index_t j = 0; j < 10; ++j) wt(j, i) = w(i, j);
  const MatrixRef<double> wtr = DenseView<const double>(wt.view());
  const StoredMatrix<double> swt{&wtr, true, "M.npy"};
  m = test::error_message([&] { solvers::build_masked_block<double>(sa, swt, none, {10, 20}, {5, 15}); });
  EXPECT_NE(m.find("weight at row 13, column 9"), std::string::npos) << m;
  // A block with nothing observed is not an error by itself (another block may hold the observed entries).
  const DenseMatrix<double> zero(10, 10, 0.0);
  const MatrixRef<double> zr = DenseView<const double>(zero.view());
  const StoredMatrix<double> sz{&zr, false, "M.npy"};
  const solvers::MaskedBlock<double> b = solvers::build_masked_block<double>(sa, sz, none, {10, 20}, {5, 15});
  EXPECT_EQ(b.problem.observed, 0);
  EXPECT_EQ(b.non_unit, 100);
}

TEST(MaskedGrid, AgreeingRefusesNothingObserved) {
  const DenseMatrix<double> a(6, 5, 1.0), zero(6, 5, 0.0);
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  const MatrixRef<double> zr = DenseView<const double>(zero.view());
  const StoredMatrix<double> sa{&ar, false, "A.npy"}, sz{&zr, false, "M.npy"};
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, 6, 5);
  solvers::MaskedBlock<double> b = solvers::build_masked_block<double>(sa, sz, MissingValues{}, {0, 6}, {0, 5});
  EXPECT_THROW(solvers::agree_masked_block(b, grid, layout, "A.npy"), CollectiveError);
  b = solvers::build_masked_block<double>(sa, sz, MissingValues{}, {0, 6}, {0, 5});
  EXPECT_EQ(test::error_message([&] { solvers::agree_masked_block(b, grid, layout, "A.npy"); }),
            "A.npy: no entry is observed (every weight is 0 or every entry missing)");
}

TEST(MaskedGrid, WordsPerIterationModel) {
  // 2x2 grid, 100 x 100, k = 4: each rank's block is 50 x 50; allgathers 1/2·4·50 each; reduce-scatters
  // 1/2·record·50 each; Gram allreduces 2·2·(3/4)·16 = 48.
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({2, 2}, 100, 100, 4, Algorithm::mu, true),
                   100 + 100 + 200 + 200 + 48);
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({2, 2}, 100, 100, 4, Algorithm::mu, false), 600);
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({2, 2}, 100, 100, 4, Algorithm::kl, true), 600);  // no Gram
  // HALS and BPP move the packed k(k+1)/2 = 10 Gram values beside b's 4.
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({2, 2}, 100, 100, 4, Algorithm::hals, true), 200 + 350 + 350 + 48);
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({2, 2}, 100, 100, 4, Algorithm::bpp, false), 900);
  // A 1 x 2 grid: only the W half's partial sums cross ranks (H's block columns are whole on each rank).
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({1, 2}, 10, 20, 2, Algorithm::mu, false),
                   0.5 * 2 * 10 + 0.5 * 4 * 10);
  EXPECT_DOUBLE_EQ(solvers::masked_words_per_rank({1, 1}, 10, 20, 2, Algorithm::hals, true), 0);
}

class UncheckedBlockRead : public test::TempDirTest {};

TEST_F(UncheckedBlockRead, NpyAndMatrixMarketEntriesComeAsStored) {
  DenseMatrix<double> d(4, 3, 1.0);
  d(2, 1) = std::numeric_limits<double>::quiet_NaN();
  d(3, 2) = -7.0;
  const std::string npy = path("A.npy");
  io::write_npy<double>(npy, d.view());
  dist::SingleCommunicator self;
  EXPECT_THROW(io::read_block<double>(npy, {0, 4}, {0, 3}, self), Error);
  const io::LocalBlock<double> b = io::read_block<double>(npy, {1, 4}, {1, 3}, self, false);
  EXPECT_TRUE(std::isnan(b.dense(1, 0)));
  EXPECT_EQ(b.dense(2, 1), -7.0);
  EXPECT_EQ(b.dense(0, 0), 1.0);

  const std::string mtx = path("A.mtx");
  std::ofstream(mtx) << "%%MatrixMarket matrix coordinate real general\n4 3 3\n1 1 2.5\n3 2 nan\n4 3 -7\n";
  EXPECT_THROW(io::read_block<double>(mtx, {0, 4}, {0, 3}, self), Error);
  const io::LocalBlock<double> s = io::read_block<double>(mtx, {2, 4}, {0, 3}, self, false);
  ASSERT_TRUE(s.sparse);
  ASSERT_EQ(s.csr.nnz(), 2);
  EXPECT_TRUE(std::isnan(s.csr.view().values[0]));
  EXPECT_EQ(s.csr.view().values[1], -7.0);
}

}  // namespace
}  // namespace dnmf
