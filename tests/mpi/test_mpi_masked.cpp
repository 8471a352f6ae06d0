// Masked (weighted) NMF on the 2-D grid (issue 15): for every grid shape of the job's processes, every solver,
// dense and CSR input (unstored entries observed or missing), NaN as missing, a row-major source and float,
// the factors and figures equal the one-process masked run (f64: 1e-8); bad input fails on every rank with the
// same CollectiveError naming the entry's place in A.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/dnmf.hpp"
#include "dnmf/index.hpp"
#include "dnmf/mpi.hpp"
#include "support/finely_fitted.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

constexpr index_t kRows = 37, kCols = 29;

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// Every pr x pc grid of the job's processes (1x1 for one process).
std::vector<std::string> grid_shapes() {
  const int p = world_size();
  std::vector<std::string> shapes;
  for (int pr = 1; pr <= p; ++pr)
    if (p % pr == 0) shapes.push_back(std::to_string(pr) + "x" + std::to_string(p / pr));
  return shapes;
}

template <class T>
DenseMatrix<T> planted_matrix() {
  PlantedOptions p;
  p.rows = kRows;
  p.cols = kCols;
  p.rank = 3;
  p.noise = 0.01;
  p.seed = 11;
  const DenseMatrix<double> a = make_planted<double>(p).dense;
  DenseMatrix<T> out(a.rows(), a.cols());
  for (std::size_t e = 0; e < a.storage().size(); ++e) out.storage()[e] = static_cast<T>(a.storage()[e]);
  return out;
}

/// Weights: `missing` of the entries 0, `heavy` of the rest 2.5, the others 1 (a plain seeded engine).
template <class T>
DenseMatrix<T> weights(double missing, double heavy, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  DenseMatrix<T> w(kRows, kCols);
  for (T& v : w.storage()) v = u(rng) < missing ? T(0) : (u(rng) < heavy ? T(2.5) : T(1));
  return w;
}

FactorOptions masked_options(Algorithm algorithm) {
  FactorOptions o;
  o.rank = 3;
  o.algorithm = algorithm;
  o.max_iterations = 20;
  o.tol = 0;
  o.seed = 7;
  return o;
}

constexpr Algorithm kAlgorithms[] = {Algorithm::mu, Algorithm::hals, Algorithm::bpp, Algorithm::kl};

/// Runs `source` with `options` on one process and on every grid of the job; compares on rank 0.
template <class T>
void expect_grids_equal_one_process(const Source& source, const FactorOptions& options, double tolerance,
                                    const std::string& what) {
  const Factorization<T> one = factor<T>(source, options);
  ASSERT_TRUE(one.result.masked) << what;
  for (const std::string& shape : grid_shapes()) {
    Context context = mpi_context(MPI_COMM_WORLD);
    context.grid = shape;
    const Factorization<T> grid = factor<T>(source, options, context);
    const std::string label = what + " " + to_string(options.algorithm) + " on " + shape;
    EXPECT_TRUE(grid.result.masked) << label;
    EXPECT_EQ(grid.grid, shape) << label;
    EXPECT_EQ(grid.result.observed, one.result.observed) << label;
    EXPECT_EQ(grid.result.unobserved_rows, one.result.unobserved_rows) << label;
    EXPECT_EQ(grid.result.unobserved_cols, one.result.unobserved_cols) << label;
    EXPECT_EQ(grid.result.iterations, one.result.iterations) << label;
    EXPECT_NEAR(grid.result.rel_error, one.result.rel_error, tolerance * one.result.rel_error) << label;
    // The final objective, KL's included, is of the returned pair on both (in double: float's Frobenius objective
    // carries the Gram identity's cancellation, bounded below for the histories).
    if constexpr (std::is_same_v<T, double>) {
      EXPECT_NEAR(grid.result.objective, one.result.objective, tolerance * std::abs(one.result.objective)) << label;
    }
    ASSERT_EQ(grid.result.rel_error_history.size(), one.result.rel_error_history.size()) << label;
    // The per-iteration figure comes from the Gram identity e² = ||A||² - 2<WH, A> + <WᵀW, HHᵀ>, which in float
    // loses about eps·||A||² to cancellation, i.e. eps / (2e²) relative to e: allowed 4x that (1e-3 at least).
    const double e = one.result.rel_error_history.back();
    const double history =
        std::is_same_v<T, float> ? std::max(1e-3, 4.0 * std::numeric_limits<float>::epsilon() / (e * e)) : tolerance;
    EXPECT_NEAR(grid.result.rel_error_history.back(), one.result.rel_error_history.back(),
                history * one.result.rel_error_history.back())
        << label;
    if (world_rank() == 0) {
      EXPECT_LE(test::max_relative_difference(grid.result.W, one.result.W), tolerance) << label;
      EXPECT_LE(test::max_relative_difference(grid.result.H, one.result.H), tolerance) << label;
    }
  }
}

TEST(MpiMasked, DenseMaskWithCorrectedGramsEqualsOneProcess) {
  const DenseMatrix<double> a = planted_matrix<double>();
  const DenseMatrix<double> w = weights<double>(0.15, 0.1, 1);  // few non-unit weights: YᵀY corrected
  FactorOptions o;
  o.missing.mask = Source::dense<double>(w.view());
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions run = masked_options(algorithm);
    run.missing = o.missing;
    expect_grids_equal_one_process<double>(Source::dense<double>(a.view()), run, 1e-8, "dense, corrected");
  }
}

// A component with no observed curvature in a column (every observed row has y_l = 0) is left alone on a grid as
// on one process: the corrected Gram G_j = F - (the missing rows' share) left a rounding residue there, and HALS
// divided by it (listed_sweep.hpp, masked_grid.cpp).
TEST(MpiMasked, HalsLeavesAComponentWithZeroObservedCurvatureAloneOnEveryGrid) {
  const index_t m = kRows, n = kCols, k = 2;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    DenseMatrix<double> a(m, n), mask(m, n, 1.0);
    InitialFactors<double> start{DenseMatrix<double>(m, k), DenseMatrix<double>(k, n)};
    for (double& v : a.storage()) v = 1.0 + u(rng);
    for (double& v : start.W.storage()) v = 0.5 + u(rng);
    for (double& v : start.H.storage()) v = 0.5 + u(rng);
    for (index_t j = n / 2; j < n; ++j) mask(0, j) = 0;  // row 0 observes only columns where H(1, j) = 0
    for (index_t j = 0; j < n / 2; ++j) start.H(1, j) = 0;
    start.W(0, 1) = 0.3;
    FactorOptions o = masked_options(Algorithm::hals);
    o.rank = k;
    o.max_iterations = 1;
    o.w_first = true;
    o.normalize = false;
    o.init = InitMethod::given;
    o.missing.mask = Source::dense<double>(mask.view());
    for (const std::string& shape : grid_shapes()) {
      Context context = mpi_context(MPI_COMM_WORLD);
      context.grid = shape;
      const Factorization<double> run =
          factor<double>(Source::dense<double>(a.view()), o, context, Gather::to_root, &start);
      if (world_rank() == 0) EXPECT_EQ(run.result.W(0, 1), 0.3) << "seed " << seed << " on " << shape;
    }
  }
}

TEST(MpiMasked, MostlyMissingWithUnobservedRowAndColumnEqualsOneProcess) {
  const DenseMatrix<double> a = planted_matrix<double>();
  DenseMatrix<double> w = weights<double>(0.5, 0.5, 2);     // Grams summed over the observed entries
  for (index_t j = 0; j < kCols; ++j) w(kRows - 2, j) = 0;  // a row observed nowhere, in the last block row
  for (index_t i = 0; i < kRows; ++i) w(i, 5) = 0;          // a column observed nowhere
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = masked_options(algorithm);
    o.missing.mask = Source::dense<double>(w.view());
    expect_grids_equal_one_process<double>(Source::dense<double>(a.view()), o, 1e-8, "dense, direct");
  }
  FactorOptions o = masked_options(Algorithm::hals);
  o.missing.mask = Source::dense<double>(w.view());
  Context context = mpi_context(MPI_COMM_WORLD);
  const Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o, context);
  EXPECT_EQ(run.result.unobserved_rows, 1);
  EXPECT_EQ(run.result.unobserved_cols, 1);
  if (world_rank() == 0) {
    for (index_t l = 0; l < 3; ++l) {
      EXPECT_EQ(run.result.W(kRows - 2, l), 0.0);
      EXPECT_EQ(run.result.H(l, 5), 0.0);
    }
  }
}

TEST(MpiMasked, NanMissingAndRowMajorSourceEqualOneProcess) {
  DenseMatrix<double> a = planted_matrix<double>();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double& v : a.storage())
    if (u(rng) < 0.2) v = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> row_major(to_size(kRows * kCols));
  for (index_t i = 0; i < kRows; ++i)
    for (index_t j = 0; j < kCols; ++j) row_major[to_size(i * kCols + j)] = a(i, j);
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = masked_options(algorithm);
    o.missing.nan_missing = true;
    expect_grids_equal_one_process<double>(Source::dense<double>(a.view()), o, 1e-8, "NaN missing");
    expect_grids_equal_one_process<double>(Source::dense_row_major<double>(row_major.data(), kRows, kCols, kCols), o,
                                           1e-8, "NaN missing, row-major");
  }
}

TEST(MpiMasked, CsrWithUnstoredMissingOrAMaskEqualsOneProcess) {
  DenseMatrix<double> a = planted_matrix<double>();
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double& v : a.storage())
    if (u(rng) < 0.4) v = 0;
  const CsrMatrix<double> s = test::to_csr(a);
  const DenseMatrix<double> w = weights<double>(0.2, 0.2, 5);
  const CsrMatrix<double> sparse_mask = test::to_csr(w);
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = masked_options(algorithm);
    o.missing.unstored = Unstored::missing;
    expect_grids_equal_one_process<double>(Source::csr<double>(s.view()), o, 1e-8, "CSR, unstored missing");
    o.missing.mask = Source::csr<double>(sparse_mask.view());
    expect_grids_equal_one_process<double>(Source::csr<double>(s.view()), o, 1e-8, "CSR, unstored missing, mask");
    o.missing.unstored = Unstored::zero;
    expect_grids_equal_one_process<double>(Source::csr<double>(s.view()), o, 1e-8, "CSR, unstored zero, mask");
  }
}

TEST(MpiMasked, FloatWFirstAndPenaltiesEqualOneProcess) {
  const DenseMatrix<float> a = planted_matrix<float>();
  const DenseMatrix<float> w = weights<float>(0.2, 0.1, 6);
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = masked_options(algorithm);
    o.missing.mask = Source::dense<float>(w.view());
    expect_grids_equal_one_process<float>(Source::dense<float>(a.view()), o, 1e-4, "float");
  }
  const DenseMatrix<double> ad = planted_matrix<double>();
  const DenseMatrix<double> wd = weights<double>(0.2, 0.1, 6);
  for (const Algorithm algorithm : kAlgorithms) {
    FactorOptions o = masked_options(algorithm);
    o.missing.mask = Source::dense<double>(wd.view());
    o.w_first = true;
    o.penalties = {0.01, 0.02, 0.03, 0.04};
    o.tol = 1e-6;  // the stopping rule on the global objective: the same iteration count as one process
    o.max_iterations = 200;
    expect_grids_equal_one_process<double>(Source::dense<double>(ad.view()), o, 1e-8, "w first, penalties");
  }
}

// float32's tol test on the grid reads the objective's fall formed half by half, as one process does (each half's
// cross term at the old and the new x from the same summed record, the quadratic term from double Grams and list
// sums): below ~1% error the difference of two float32 objectives is rounding, and the grid stopped at random
// (MU after ~500 iterations at 2.7x float64's error, HALS at a third of its iterations). 500x400 rank 8 with 0.1%
// noise, a tenth missing, tol 1e-4: each grid stops within 10% of float64's one-process iteration count, at its
// error. MU's thousands of iterations run on two processes only (one process is the API test's; oversubscribed
// ranks make each iteration slow).
TEST(MpiMasked, Float32ToleranceStopsWhereFloat64Does) {
  const PlantedOptions p = test::finely_fitted_planted();
  const DenseMatrix<double> a64 = make_planted<double>(p).dense;
  const DenseMatrix<float> a32 = make_planted<float>(p).dense;
  const DenseMatrix<double> mask64 = test::tenth_missing<double>(p.rows, p.cols);
  const DenseMatrix<float> mask32 = test::tenth_missing<float>(p.rows, p.cols);
  for (const Algorithm algorithm : {Algorithm::mu, Algorithm::hals, Algorithm::bpp}) {
    if (algorithm == Algorithm::mu && world_size() != 2) continue;
    FactorOptions o;
    o.rank = 8;
    o.algorithm = algorithm;
    o.max_iterations = 8000;
    o.tol = 1e-4;
    o.seed = 5;
    o.missing.mask = Source::dense<double>(mask64.view());
    const FactorResult<double> r64 = factor<double>(Source::dense<double>(a64.view()), o).result;
    ASSERT_TRUE(r64.converged) << to_string(algorithm);
    o.missing.mask = Source::dense<float>(mask32.view());
    for (const std::string& shape : grid_shapes()) {
      Context context = mpi_context(MPI_COMM_WORLD);
      context.grid = shape;
      const FactorResult<float> r32 = factor<float>(Source::dense<float>(a32.view()), o, context).result;
      const std::string label = to_string(algorithm) + " on " + shape + ": " + std::to_string(r32.iterations) +
                                " iterations against " + std::to_string(r64.iterations);
      EXPECT_TRUE(r32.converged) << label;
      EXPECT_LE(r32.rel_error, 1.05 * r64.rel_error) << label;
      EXPECT_GE(r32.iterations, r64.iterations * 9 / 10) << label;
      EXPECT_LE(r32.iterations, r64.iterations * 11 / 10 + 2) << label;
    }
  }
}

TEST(MpiMasked, BlocksStayOnTheirRanksUntilGathered) {
  const DenseMatrix<double> a = planted_matrix<double>();
  const DenseMatrix<double> w = weights<double>(0.15, 0.1, 1);
  FactorOptions o = masked_options(Algorithm::bpp);
  o.missing.mask = Source::dense<double>(w.view());
  const Factorization<double> one = factor<double>(Source::dense<double>(a.view()), o);
  const Context context = mpi_context(MPI_COMM_WORLD);
  Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o, context, Gather::none);
  EXPECT_TRUE(run.result.W.storage().empty());
  // This rank's pieces are the one-process factors' rows and columns.
  for (index_t i = 0; i < run.w_block.cols(); ++i)
    for (index_t l = 0; l < 3; ++l) EXPECT_NEAR(run.w_block(l, i), one.result.W(run.w_row_first + i, l), 1e-8);
  for (index_t j = 0; j < run.h_block.cols(); ++j)
    for (index_t l = 0; l < 3; ++l)
      EXPECT_NEAR(run.h_block(l, j), one.result.H(l, run.h_col_first + j),
                  1e-8 * one.result.H(l, run.h_col_first + j) + 1e-8);
  gather(run, context);
  if (world_rank() == 0) {
    EXPECT_LE(test::max_relative_difference(run.result.W, one.result.W), 1e-8);
  }
  EXPECT_EQ(run.communication.processes, world_size());
}

/// The error every rank throws, checked to be the same on all of them.
template <class F>
std::string same_error_everywhere(F&& action, ErrorKind kind) {
  std::string message;
  bool collective = false;
  try {
    action();
    ADD_FAILURE() << "expected an error";
  } catch (const CollectiveError& e) {
    collective = true;
    message = e.what();
    EXPECT_EQ(e.kind(), kind) << message;
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(e.kind(), kind) << message;
  }
  if (world_size() > 1) {
    EXPECT_TRUE(collective) << "rank " << world_rank() << ": " << message;
  }
  // Rank 0's text reaches every rank: all must have thrown the same.
  int length = static_cast<int>(message.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(to_size(length), ' ');
  if (world_rank() == 0) root = message;
  MPI_Bcast(root.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(message, root) << "rank " << world_rank();
  return message;
}

TEST(MpiMasked, BadInputFailsOnEveryRankWithTheSameError) {
  const DenseMatrix<double> a = planted_matrix<double>();
  const Context context = mpi_context(MPI_COMM_WORLD);
  FactorOptions o = masked_options(Algorithm::mu);

  const DenseMatrix<double> wrong(kCols, kRows, 1.0);
  o.missing.mask = Source::dense<double>(wrong.view());
  std::string m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(a.view()), o, context); },
                                        ErrorKind::data);
  EXPECT_NE(m.find("the mask is 29x37 but <memory> is 37x29 (a mask must have A's shape)"), std::string::npos) << m;

  // A negative weight in the last block (the last rank's on every grid).
  DenseMatrix<double> w(kRows, kCols, 1.0);
  w(kRows - 1, kCols - 2) = -0.5;
  o.missing.mask = Source::dense<double>(w.view());
  m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(a.view()), o, context); },
                            ErrorKind::data);
  EXPECT_NE(m.find("weight at row 36, column 27 (0-based) is -0.5"), std::string::npos) << m;
  EXPECT_NE(m.find("mask weights must be finite and >= 0"), std::string::npos) << m;

  // An observed NaN without --missing nan, in the same block; a masked NaN is fine.
  DenseMatrix<double> bad = a;
  bad(kRows - 1, kCols - 1) = std::numeric_limits<double>::quiet_NaN();
  w(kRows - 1, kCols - 2) = 1.0;
  m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(bad.view()), o, context); },
                            ErrorKind::data);
  EXPECT_NE(m.find("row 36, column 28"), std::string::npos) << m;
  EXPECT_NE(m.find("can be fitted as missing values: --missing nan"), std::string::npos) << m;
  w(kRows - 1, kCols - 1) = 0.0;
  EXPECT_NO_THROW((void)factor<double>(Source::dense<double>(bad.view()), o, context));

  // Nothing observed at all.
  const DenseMatrix<double> none(kRows, kCols, 0.0);
  o.missing.mask = Source::dense<double>(none.view());
  m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(a.view()), o, context); },
                            ErrorKind::data);
  EXPECT_NE(m.find("no entry is observed"), std::string::npos) << m;

  // --unstored missing with a dense A.
  o.missing = MissingValues{};
  o.missing.unstored = Unstored::missing;
  m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(a.view()), o, context); },
                            ErrorKind::usage);
  EXPECT_NE(m.find("--unstored missing applies to a sparse matrix"), std::string::npos) << m;
}

TEST(MpiMasked, UnsupportedCombinationsStayRefused) {
  if (world_size() == 1) GTEST_SKIP() << "the grid's refusals";
  const DenseMatrix<double> a = planted_matrix<double>();
  const DenseMatrix<double> w = weights<double>(0.15, 0.1, 1);
  FactorOptions o = masked_options(Algorithm::mu);
  o.missing.mask = Source::dense<double>(w.view());
  Context context = mpi_context(MPI_COMM_WORLD);
  o.init = InitMethod::nndsvd;
  std::string m = same_error_everywhere([&] { (void)factor<double>(Source::dense<double>(a.view()), o, context); },
                                        ErrorKind::usage);
  EXPECT_NE(m.find("needs one process"), std::string::npos) << m;
}

}  // namespace
}  // namespace dnmf
