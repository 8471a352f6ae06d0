// The public entry points (dnmf/factor.hpp, source.hpp, context.hpp, inspect.hpp, nmfk(Source, ...)), used the
// way the CLI and the Python package use them. Only public headers: this suite is a client like any other.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/dnmf.hpp"
#include "dnmf/index.hpp"
#include "dnmf/output_set.hpp"
#include "support/finely_fitted.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf {
namespace {

/// A planted dense matrix (column-major) of the given rank, noise and seed.
template <class T>
DenseMatrix<T> planted_matrix(index_t rows, index_t cols, index_t rank, double noise, std::uint64_t seed) {
  PlantedOptions p;
  p.rows = rows;
  p.cols = cols;
  p.rank = rank;
  p.noise = noise;
  p.seed = seed;
  return make_planted<T>(p).dense;
}

using test::finely_fitted_planted;
using test::tenth_missing;

/// A planted rank-4 matrix, dense column-major, with a little noise.
DenseMatrix<double> planted_dense(index_t rows = 60, index_t cols = 40) {
  return planted_matrix<double>(rows, cols, 4, 0.01, 7);
}

FactorOptions options_k4(Algorithm algorithm = Algorithm::hals) {
  FactorOptions o;
  o.rank = 4;
  o.algorithm = algorithm;
  o.max_iterations = 60;
  o.tol = 0;
  return o;
}

/// Row-major copy (data[i * cols + j]) of a column-major matrix.
std::vector<double> row_major(const DenseMatrix<double>& a) {
  std::vector<double> r(to_size(a.rows() * a.cols()));
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t j = 0; j < a.cols(); ++j) r[to_size(i * a.cols() + j)] = a(i, j);
  return r;
}

DenseMatrix<double> transpose_of(const DenseMatrix<double>& a) {
  DenseMatrix<double> t(a.cols(), a.rows());
  for (index_t j = 0; j < a.cols(); ++j)
    for (index_t i = 0; i < a.rows(); ++i) t(j, i) = a(i, j);
  return t;
}

double column_sum(const DenseMatrix<double>& w, index_t c) {
  double s = 0;
  for (index_t i = 0; i < w.rows(); ++i) s += w(i, c);
  return s;
}

using ApiTest = test::TempDirTest;

TEST(Api, InMemoryDenseEqualsFactorize) {
  const DenseMatrix<double> a = planted_dense();
  const FactorOptions o = options_k4();
  const FactorResult<double> direct = factorize<double>(MatrixRef<double>{a.view()}, o);
  const Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_EQ(run.result.iterations, direct.iterations);
  EXPECT_LE(test::max_relative_difference(run.result.W, direct.W), 1e-12);
  EXPECT_LE(test::max_relative_difference(run.result.H, direct.H), 1e-12);
  EXPECT_EQ(run.m, 60);
  EXPECT_EQ(run.n, 40);
  EXPECT_EQ(run.format, "memory");
  EXPECT_EQ(run.grid, "1x1");
}

/// ½‖A − WH‖²_w + l1·Σ + ½·l2·‖·‖² of the returned W and H (weights 1 where `mask` is null), by plain loops.
double objective_of(const DenseMatrix<double>& a, const DenseMatrix<double>* mask, const Factorization<double>& run,
                    const Penalties& p) {
  const DenseMatrix<double>& w = run.result.W;
  const DenseMatrix<double>& h = run.result.H;
  double residual = 0, w1 = 0, w2 = 0, h1 = 0, h2 = 0;
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t j = 0; j < a.cols(); ++j) {
      double q = 0;
      for (index_t l = 0; l < w.cols(); ++l) q += w(i, l) * h(l, j);
      residual += (mask != nullptr ? (*mask)(i, j) : 1.0) * (a(i, j) - q) * (a(i, j) - q);
    }
  for (const double v : w.storage()) w1 += v, w2 += v * v;
  for (const double v : h.storage()) h1 += v, h2 += v * v;
  return 0.5 * residual + p.l1_w * w1 + 0.5 * p.l2_w * w2 + p.l1_h * h1 + 0.5 * p.l2_h * h2;
}

// The reported objective is that of the factors returned: with penalties, normalising W's columns changes the
// penalty terms (it was the pair's before normalising, 15-45x below the written factors' with l2 = 1), and an
// exactly fitted matrix's error is recomputed below the identity's floor, its objective with it (9e-13 reported
// for a true 1e-21). Column-major, row-major (a transposed source) and masked; --iters 0 too.
TEST(Api, ObjectiveIsTheReturnedFactors) {
  const DenseMatrix<double> a = planted_dense();
  const std::vector<double> rm = row_major(a);
  const DenseMatrix<double> mask = tenth_missing<double>(a.rows(), a.cols());
  for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp})
    for (const int iterations : {0, 20}) {
      FactorOptions o = options_k4(algo);
      o.max_iterations = iterations;
      o.penalties = {0.3, 1.0, 0.0, 0.7};
      const std::string what = to_string(algo) + " iterations " + std::to_string(iterations);
      const Factorization<double> plain = factor<double>(Source::dense<double>(a.view()), o);
      EXPECT_NEAR(plain.result.objective, objective_of(a, nullptr, plain, o.penalties), 1e-9 * plain.result.objective)
          << what;
      const Factorization<double> rows =
          factor<double>(Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols()), o);
      EXPECT_NEAR(rows.result.objective, objective_of(a, nullptr, rows, o.penalties), 1e-9 * rows.result.objective)
          << what << " row-major";
      FactorOptions masked = o;
      masked.missing.mask = Source::dense<double>(mask.view());
      const Factorization<double> m = factor<double>(Source::dense<double>(a.view()), masked);
      EXPECT_NEAR(m.result.objective, objective_of(a, &mask, m, o.penalties), 1e-9 * m.result.objective)
          << what << " masked";
    }
  // Exactly rank 4: the error is below the identity's floor and recomputed; the objective follows it.
  DenseMatrix<double> exact(80, 60, 0.0);
  const DenseMatrix<double> w = test::random_dense<double>(80, 4, 31), h = test::random_dense<double>(4, 60, 32);
  for (index_t j = 0; j < 60; ++j)
    for (index_t i = 0; i < 80; ++i)
      for (index_t l = 0; l < 4; ++l) exact(i, j) += w(i, l) * h(l, j);
  FactorOptions o = options_k4(Algorithm::bpp);
  o.max_iterations = 2000;
  o.extrapolate = true;
  const Factorization<double> run = factor<double>(Source::dense<double>(exact.view()), o);
  ASSERT_LT(run.result.rel_error, 1e-9);
  const double truth = objective_of(exact, nullptr, run, {});
  // Both are direct sums of residuals of about 1e-12 (each good to a few digits): 1% apart at most, where the
  // identity's figure was 1e8 times the truth.
  EXPECT_LE(std::abs(run.result.objective - truth), 1e-2 * truth) << run.result.objective << " vs " << truth;
}

// KL's reported objective is D(A‖WH) + the penalty terms of the factors returned, as the updates minimise (it
// was the divergence alone, 2.63 for a true 2.9e5 with l1 and l2 on both factors); plain, row-major and masked.
TEST(Api, KlObjectiveIncludesThePenaltiesOfTheReturnedFactors) {
  const DenseMatrix<double> a = planted_dense();
  const std::vector<double> rm = row_major(a);
  const DenseMatrix<double> mask = tenth_missing<double>(a.rows(), a.cols());
  FactorOptions o = options_k4(Algorithm::kl);
  o.max_iterations = 30;
  o.penalties = {0.3, 1.0, 0.2, 0.7};
  const auto expected = [&](const Factorization<double>& run, const DenseMatrix<double>* m) {
    const DenseMatrix<double>& w = run.result.W;
    const DenseMatrix<double>& h = run.result.H;
    double divergence = 0;
    for (index_t i = 0; i < a.rows(); ++i)
      for (index_t j = 0; j < a.cols(); ++j) {
        double q = 0;
        for (index_t l = 0; l < w.cols(); ++l) q += w(i, l) * h(l, j);
        const double v = a(i, j);
        divergence += (m != nullptr ? (*m)(i, j) : 1.0) * ((v > 0 ? v * std::log(v / q) : 0.0) - v + q);
      }
    double w1 = 0, w2 = 0, h1 = 0, h2 = 0;
    for (const double v : w.storage()) w1 += v, w2 += v * v;
    for (const double v : h.storage()) h1 += v, h2 += v * v;
    return divergence + 0.3 * w1 + 0.5 * w2 + 0.2 * h1 + 0.35 * h2;
  };
  const Factorization<double> plain = factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_NEAR(plain.result.objective, expected(plain, nullptr), 1e-9 * plain.result.objective);
  const Factorization<double> rows =
      factor<double>(Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols()), o);
  EXPECT_NEAR(rows.result.objective, expected(rows, nullptr), 1e-9 * rows.result.objective) << "row-major";
  FactorOptions masked = o;
  masked.missing.mask = Source::dense<double>(mask.view());
  const Factorization<double> m = factor<double>(Source::dense<double>(a.view()), masked);
  EXPECT_NEAR(m.result.objective, expected(m, &mask), 1e-9 * m.result.objective) << "masked";
  // No iteration: the divergence at the start, masked too (it was the Frobenius objective there; a helper session's
  // finding), in memory and streamed from a file.
  for (FactorOptions* run : {&o, &masked}) run->max_iterations = 0;
  const Factorization<double> plain0 = factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_NEAR(plain0.result.objective, expected(plain0, nullptr), 1e-9 * plain0.result.objective) << "0 iterations";
  const Factorization<double> m0 = factor<double>(Source::dense<double>(a.view()), masked);
  EXPECT_NEAR(m0.result.objective, expected(m0, &mask), 1e-9 * m0.result.objective) << "masked, 0 iterations";
}

// In float32 the figures that steer the iteration (tol > 0) take the identity's Gram term from Grams formed in
// double. From the float Grams, its squared error was 6e-5 to 1.3e-4 off the direct sum's at 3% error (600x400,
// rank 8): noise as large as HALS's change per iteration there, so the tol test stopped at random. Now about 7e-6.
TEST(Api, Float32IdentityTracksTheDirectErrorWhereItSteersTheIteration) {
  const DenseMatrix<float> a = planted_matrix<float>(600, 400, 8, 0.03, 11);
  const auto options = [](Algorithm algo) {
    FactorOptions o;
    o.rank = 8;
    o.algorithm = algo;
    o.max_iterations = 30;
    o.tol = 1e-30;  // never met: the run goes on to 30 iterations with its figures from double Grams
    o.seed = 3;
    return o;
  };
  // Σ w (a - (WH)_ij)² in double over the returned factors (w = 1 without a mask).
  const auto residual_of = [&](const Factorization<float>& run, const DenseMatrix<float>* mask) {
    double residual = 0;
    for (index_t j = 0; j < a.cols(); ++j)
      for (index_t i = 0; i < a.rows(); ++i) {
        double q = 0;
        for (index_t l = 0; l < 8; ++l)
          q += static_cast<double>(run.result.W(i, l)) * static_cast<double>(run.result.H(l, j));
        residual += (mask != nullptr ? (*mask)(i, j) : 1.0) * (a(i, j) - q) * (a(i, j) - q);
      }
    return residual;
  };
  double norm = 0;
  for (const float v : a.storage()) norm += static_cast<double>(v) * v;
  for (const Algorithm algo : {Algorithm::hals, Algorithm::bpp}) {
    const Factorization<float> run = factor<float>(Source::dense<float>(a.view()), options(algo));
    ASSERT_EQ(run.result.iterations, 30);
    const double direct = residual_of(run, nullptr) / norm;  // squared relative error
    ASSERT_GT(direct, 1e-4);  // above the floor where the final figure would be recomputed
    const double identity = run.result.rel_error * run.result.rel_error;
    EXPECT_LE(std::abs(identity - direct), 2e-5 * direct) << to_string(algo) << ": " << identity << " vs " << direct;
  }
  // Masked, the final error is computed directly and the objective now follows it (it was the last iteration's
  // float figure, 7e-4 off its own rel_error at 1% error).
  const DenseMatrix<float> mask = tenth_missing<float>(a.rows(), a.cols());
  for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp}) {
    FactorOptions o = options(algo);
    o.missing.mask = Source::dense<float>(mask.view());
    const Factorization<float> run = factor<float>(Source::dense<float>(a.view()), o);
    const double residual = residual_of(run, &mask);
    EXPECT_NEAR(run.result.objective, 0.5 * residual, 1e-6 * residual) << to_string(algo) << " masked";
  }
}

/// The tol-1e-4 options both float32 stopping tests run, and what they expect of the float32 run against the
/// float64 one: converged, within 5% of its error, within 10% of its iteration count.
FactorOptions stopping_options(Algorithm algo) {
  FactorOptions o;
  o.rank = 8;
  o.algorithm = algo;
  o.max_iterations = 8000;
  o.tol = 1e-4;
  o.seed = 5;
  return o;
}
template <class R64, class R32>
void expect_float32_stops_with_float64(const R64& r64, const R32& r32, const std::string& name) {
  ASSERT_TRUE(r64.converged) << name;
  EXPECT_TRUE(r32.converged) << name;
  EXPECT_LE(r32.rel_error, 1.05 * r64.rel_error) << name << ": " << r32.iterations << " vs " << r64.iterations;
  EXPECT_GE(r32.iterations, r64.iterations * 9 / 10) << name;
  EXPECT_LE(r32.iterations, r64.iterations * 11 / 10 + 2) << name;
}

// float32's tol test reads the objective's change formed half by half from each numerator's dot with the factor
// before and after its update, where the numerator's rounding cancels. From the difference of two float32
// objectives (noise ~1e-8·‖A‖² each) it stopped at random below ~1% error: MU here after 661 iterations at 2.1x
// float64's error (2935 iterations), HALS ran 136 iterations against 65. Now each stops within a few percent of
// float64's iteration count, at its error. Dense (fused pass and two passes) and CSR (update passes over A and its
// transpose).
TEST(Api, Float32ToleranceStopsWhereFloat64Does) {
  PlantedOptions p = finely_fitted_planted();
  const auto dense64 = make_planted<double>(p);
  const auto dense32 = make_planted<float>(p);
  p.density = 0.3;
  const auto sparse64 = make_planted<double>(p);
  const auto sparse32 = make_planted<float>(p);
  struct Case {
    const Planted<double>* a64;
    const Planted<float>* a32;
    Algorithm algo;
    bool fused;
    const char* name;
  };
  const Case cases[] = {{&dense64, &dense32, Algorithm::mu, true, "dense mu"},
                        {&dense64, &dense32, Algorithm::mu, false, "dense mu, two passes"},
                        {&dense64, &dense32, Algorithm::hals, true, "dense hals"},
                        {&dense64, &dense32, Algorithm::bpp, true, "dense bpp"},
                        {&sparse64, &sparse32, Algorithm::mu, true, "sparse mu"}};
  for (const Case& c : cases) {
    FactorOptions o = stopping_options(c.algo);
    o.fused = c.fused;
    expect_float32_stops_with_float64(factorize<double>(c.a64->matrix(), o), factorize<float>(c.a32->matrix(), o),
                                      c.name);
  }
}

TEST(Api, RowMajorAndCscAreFactoredWithoutCopyAndNormalisedLikeW) {
  const DenseMatrix<double> a = planted_dense();
  const std::vector<double> rm = row_major(a);
  const Factorization<double> run =
      factor<double>(Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols()), options_k4());
  ASSERT_EQ(run.result.W.rows(), 60);
  ASSERT_EQ(run.result.W.cols(), 4);
  ASSERT_EQ(run.result.H.rows(), 4);
  ASSERT_EQ(run.result.H.cols(), 40);
  const double direct =
      relative_error_direct<double>(MatrixRef<double>{a.view()}, run.result.W.view(), run.result.H.view());
  EXPECT_NEAR(direct, run.result.rel_error, 1e-8);
  EXPECT_LT(direct, 0.05);
  for (index_t c = 0; c < 4; ++c) EXPECT_NEAR(column_sum(run.result.W, c), 1.0, 1e-12);

  // CSC of A: the CSR arrays of Aᵀ.
  const CsrMatrix<double> at = test::to_csr(transpose_of(a));
  const Factorization<double> csc = factor<double>(
      Source::csc<double>(a.rows(), a.cols(), at.indptr().data(), at.indices().data(), at.values().data()),
      options_k4());
  const double csc_direct =
      relative_error_direct<double>(MatrixRef<double>{a.view()}, csc.result.W.view(), csc.result.H.view());
  EXPECT_NEAR(csc_direct, csc.result.rel_error, 1e-8);
  // The same transposed problem as the row-major run, so the same factors.
  EXPECT_LE(test::max_relative_difference(csc.result.W, run.result.W), 1e-8);
}

TEST_F(ApiTest, FileEqualsMemoryAndReportCarriesTheRun) {
  const DenseMatrix<double> a = planted_dense();
  const std::string file = path("A.npy");
  io::write_npy<double>(file, a.view());
  FactorOptions o = options_k4(Algorithm::mu);
  const Factorization<double> from_file = factor<double>(Source::file(file), o);
  const Factorization<double> from_memory = factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_EQ(from_file.result.W.storage(), from_memory.result.W.storage());
  EXPECT_EQ(from_file.result.H.storage(), from_memory.result.H.storage());
  EXPECT_EQ(from_file.format, "npy");

  const nlohmann::json report = nlohmann::json::parse(report_json(from_file));
  EXPECT_EQ(report["input"], file);
  EXPECT_EQ(report["m"], 60);
  EXPECT_EQ(report["n"], 40);
  EXPECT_EQ(report["k"], 4);
  EXPECT_EQ(report["algo"], "mu");
  EXPECT_EQ(report["iterations"], from_file.result.iterations);
  EXPECT_DOUBLE_EQ(report["rel_error"].get<double>(), from_file.result.rel_error);
  EXPECT_EQ(report["rel_error_history"].size(), to_size(from_file.result.iterations));
  EXPECT_EQ(report["nnz"], from_memory.nnz);
  EXPECT_FALSE(report.contains("memory"));
}

TEST(Api, FloatSourceRunsInDoubleByConversion) {
  const DenseMatrix<double> a = planted_dense();
  DenseMatrix<float> af(a.rows(), a.cols());
  for (index_t j = 0; j < a.cols(); ++j)
    for (index_t i = 0; i < a.rows(); ++i) af(i, j) = static_cast<float>(a(i, j));
  const Factorization<double> run = factor<double>(Source::dense<float>(af.view()), options_k4());
  EXPECT_LT(run.result.rel_error, 0.05);
  EXPECT_EQ(run.precision, "f64");
}

TEST(Api, ProgressIsToldEveryIterationAndCancelStopsCleanly) {
  const DenseMatrix<double> a = planted_dense();
  FactorOptions o = options_k4();
  int seen = 0;
  o.progress = [&seen](const IterationInfo& info) { seen = info.iteration; };
  o.cancel = [&seen] { return seen >= 3; };
  try {
    (void)factor<double>(Source::dense<double>(a.view()), o);
    FAIL() << "cancel was ignored";
  } catch (const Cancelled& e) {
    EXPECT_NE(std::string(e.what()).find("iteration 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seen, 3);
}

// Blocks of 65536 entries and more are checked in parts on the threads: the entry reported is still the first
// bad one in storage order (column-major dense, row by row CSR) at its place in A, for 1 or 2 threads.
TEST(Api, BadEntriesOfLargeInMemoryMatricesAreReportedWhereTheyAreForAnyThreadCount) {
  DenseMatrix<double> a = planted_dense(300, 300);
  a(120, 250) = -2.0;
  a(200, 100) = std::nan("");
  a(250, 100) = -1.0;
  const auto message = [](const Source& source, int threads) {
    FactorOptions o = options_k4();
    o.threads = threads;
    try {
      (void)factor<double>(source, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (int threads : {1, 2}) {
    const std::string dense = message(Source::dense<double>(a.view()), threads);
    EXPECT_NE(dense.find("row 200, column 100 (0-based) is NaN"), std::string::npos) << dense;
    const CsrMatrix<double> s = test::to_csr(a);
    const std::string csr = message(Source::csr<double>(s.view()), threads);
    EXPECT_NE(csr.find("row 120, column 250 (0-based) is -2"), std::string::npos) << csr;
    // Aᵀ's CSR given as A's CSC: the storage's first bad line is A's column 100, told in A's terms.
    DenseMatrix<double> at(300, 300);
    for (index_t j = 0; j < 300; ++j)
      for (index_t i = 0; i < 300; ++i) at(j, i) = a(i, j);
    const CsrMatrix<double> t = test::to_csr(at);
    const std::string csc =
        message(Source::csc<double>(300, 300, t.view().indptr, t.view().indices, t.view().values), threads);
    EXPECT_NE(csc.find("row 200, column 100 (0-based) is NaN"), std::string::npos) << csc;
  }
}

// factorize() on a view checks its entries as every other entry point does: a negative one was factorised
// silently, a NaN reported as "the matrix is all zeros".
TEST(Api, FactorizeRefusesBadEntriesNamingThem) {
  for (const double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    DenseMatrix<double> a = planted_dense();
    a(3, 4) = bad;
    for (const bool sparse : {false, true}) {
      const CsrMatrix<double> s = test::to_csr(a);
      const MatrixRef<double> ref = sparse ? MatrixRef<double>{s.view()} : MatrixRef<double>{a.view()};
      try {
        (void)factorize<double>(ref, options_k4());
        ADD_FAILURE() << bad << " was accepted";
      } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("row 3, column 4 (0-based)"), std::string::npos) << e.what();
      }
    }
  }
}

// A call's thread count is the call's: OpenMP's count for the rest of the program is what it was before.
TEST(Api, ThreadsOptionDoesNotOutliveTheCall) {
  const int before = omp_get_max_threads();
  const DenseMatrix<double> a = planted_dense();
  FactorOptions o = options_k4();
  o.threads = before + 1;
  (void)factorize<double>(a.view(), o);
  EXPECT_EQ(omp_get_max_threads(), before);
  (void)factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_EQ(omp_get_max_threads(), before);
  DenseMatrix<double> w(a.rows(), a.cols(), 1.0);
  w(0, 0) = 0;
  o.missing.mask = Source::dense<double>(w.view());
  (void)factor<double>(Source::dense<double>(a.view()), o);
  EXPECT_EQ(omp_get_max_threads(), before);
  NmfkOptions nk;
  nk.ks = {2};
  nk.perturbations = 2;
  nk.factor.threads = before + 1;
  (void)nmfk<double>(Source::dense<double>(a.view()), nk);
  EXPECT_EQ(omp_get_max_threads(), before);
}

// rows * cols past index_t wrapped and allocated a small buffer that the caller then wrote past (dnmf gen
// --rows 2^63-1 crashed); negative sides are no size either.
TEST(Api, DenseMatrixSizesThatCannotBeHeldAreLengthErrors) {
  EXPECT_THROW(DenseMatrix<double>(std::numeric_limits<index_t>::max(), 3), std::length_error);
  EXPECT_THROW(DenseMatrix<float>(index_t{1} << 40, index_t{1} << 40), std::length_error);
  EXPECT_THROW(DenseMatrix<double>(-1, 3), std::length_error);
  EXPECT_EQ(DenseMatrix<double>(0, 5).storage().size(), 0u);
}

TEST(Api, BadInputAndContextsAreClearErrors) {
  DenseMatrix<double> a = planted_dense();
  a(5, 7) = -1.0;
  try {
    (void)factor<double>(Source::dense<double>(a.view()), options_k4());
    FAIL() << "a negative entry was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("<memory>"), std::string::npos) << m;
    EXPECT_NE(m.find("row 5"), std::string::npos) << m;
    EXPECT_NE(m.find("column 7"), std::string::npos) << m;
  }
  const DenseMatrix<double> good = planted_dense();
  FactorOptions big = options_k4();
  big.rank = 41;
  EXPECT_THROW((void)factor<double>(Source::dense<double>(good.view()), big), CollectiveError);
  Context two_by_one;
  two_by_one.grid = "2x1";
  EXPECT_THROW((void)factor<double>(Source::dense<double>(good.view()), options_k4(), two_by_one), CollectiveError);
  Context device;
  device.device = 1;
  EXPECT_THROW((void)factor<double>(Source::dense<double>(good.view()), options_k4(), device), Error);
  Context budget;
  budget.memory_budget = 1 << 20;
  EXPECT_THROW((void)factor<double>(Source::dense<double>(good.view()), options_k4(), budget), Error);
  EXPECT_THROW(check_grid("2by2"), Error);
  EXPECT_NO_THROW(check_grid("auto"));
  EXPECT_EQ(parse_bytes("2K"), 2048);
  EXPECT_THROW((void)factor<double>(Source::file("matrix.txt"), options_k4()), Error);
}

// The masked solvers likewise: each half's cross term at the old and new x from its own numerator, the quadratic
// term from F summed in double. From the difference of two float32 figures masked MU stopped here after 641
// iterations at 2.2x float64's error (2950), HALS ran 362 iterations against 63, BPP stopped at 24 against 27.
TEST(Api, Float32ToleranceStopsWhereFloat64DoesWithAMask) {
  PlantedOptions p = finely_fitted_planted();
  const auto a64 = make_planted<double>(p);
  const auto a32 = make_planted<float>(p);
  const DenseMatrix<double> mask64 = tenth_missing<double>(p.rows, p.cols);
  const DenseMatrix<float> mask32 = tenth_missing<float>(p.rows, p.cols);
  for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp}) {
    FactorOptions o64 = stopping_options(algo), o32 = stopping_options(algo);
    o64.missing.mask = Source::dense<double>(mask64.view());
    o32.missing.mask = Source::dense<float>(mask32.view());
    expect_float32_stops_with_float64(factor<double>(Source::dense<double>(a64.dense.view()), o64).result,
                                      factor<float>(Source::dense<float>(a32.dense.view()), o32).result,
                                      to_string(algo));
  }
}

/// The relative falls (f_{t-1} - f_t) / f_{t-1} of an objective history at iterations [first, last).
std::vector<double> relative_falls(const std::vector<double>& objective, std::size_t first, std::size_t last) {
  std::vector<double> out;
  for (std::size_t t = first; t < last; ++t) out.push_back((objective[t - 1] - objective[t]) / objective[t - 1]);
  return out;
}

/// KL from seed 5 for exactly `iterations` iterations (tol 0).
FactorOptions kl_for(index_t rank, int iterations) {
  FactorOptions o;
  o.rank = rank;
  o.algorithm = Algorithm::kl;
  o.max_iterations = iterations;
  o.tol = 0;
  o.seed = 5;
  return o;
}

/// W·H in float64, and the same product rounded to float32.
std::pair<DenseMatrix<double>, DenseMatrix<float>> product_in_both(const DenseMatrix<double>& w,
                                                                   const DenseMatrix<double>& h) {
  DenseMatrix<double> a64(w.rows(), h.cols(), 0.0);
  for (index_t j = 0; j < h.cols(); ++j)
    for (index_t l = 0; l < w.cols(); ++l)
      for (index_t i = 0; i < w.rows(); ++i) a64(i, j) += w(i, l) * h(l, j);
  DenseMatrix<float> a32(w.rows(), h.cols());
  for (std::size_t e = 0; e < a64.storage().size(); ++e) a32.storage()[e] = static_cast<float>(a64.storage()[e]);
  return {std::move(a64), std::move(a32)};
}

/// float32's relative falls within 2% of float64's at iterations [first, last) of runs of `last` iterations, or
/// within `floor` where that is larger; float64 fitted to under 2% error.
void expect_falls_follow_float64(const FactorResult<double>& r64, const FactorResult<float>& r32, std::size_t first,
                                 std::size_t last, double floor, const std::string& what) {
  ASSERT_EQ(r32.objective_history.size(), last) << what;
  ASSERT_LT(r64.rel_error, 0.02) << what;
  const std::vector<double> f64 = relative_falls(r64.objective_history, first, last);
  const std::vector<double> f32 = relative_falls(r32.objective_history, first, last);
  for (std::size_t t = 0; t < f64.size(); ++t)
    ASSERT_NEAR(f32[t], f64[t], std::max(0.02 * std::abs(f64[t]), floor)) << what << ", iteration " << first + 1 + t;
}

// KL's objective in float32: the log term Σ a log(a/m) is summed from the float model m, and its model term Σ m
// was taken from the factors' exact sums, so m's rounding (~1e-7 of each entry, first order) did not cancel between
// them: near 1% error the relative fall per iteration read ±3e-3 of noise against a fall of 1.5e-3, and the tol
// test stopped at random (638 iterations at 3x float64's error, where float64 did not stop in 5000). With the model
// term summed from the same m the falls follow float64's: here within 2% at every iteration of a window, dense
// unmasked (every m formed by the ratio pass) and masked (the observed entries' q).
TEST(Api, Float32KlObjectiveFallsAsFloat64Does) {
  // Uniform dense factors: a slowly converging fit (about 1.2% error after 600 iterations, falling ~3e-4 per
  // iteration there).
  std::mt19937_64 engine(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  DenseMatrix<double> w(150, 5), h(5, 100);
  for (double& v : w.storage()) v = u(engine);
  for (double& v : h.storage()) v = u(engine);
  const auto [a64, a32] = product_in_both(w, h);
  const DenseMatrix<double> mask64 = tenth_missing<double>(150, 100);
  const DenseMatrix<float> mask32 = tenth_missing<float>(150, 100);
  for (const bool masked : {false, true}) {
    FactorOptions o = kl_for(5, 700);
    if (masked) o.missing.mask = Source::dense<double>(mask64.view());
    const FactorResult<double> r64 = factor<double>(Source::dense<double>(a64.view()), o).result;
    if (masked) o.missing.mask = Source::dense<float>(mask32.view());
    const FactorResult<float> r32 = factor<float>(Source::dense<float>(a32.view()), o).result;
    expect_falls_follow_float64(r64, r32, 600, 700, 0.0, masked ? "masked" : "dense");
  }
}

// Sparse input: the ratio pass forms m at the stored entries only, so the model term Σ m cannot come from those m
// alone: it is Σ m over all cells from the factors' sums in double, less the stored entries' m in double, plus
// their float m. Planted sparse factors give a product with exact zeros (left unstored), fitted to the noise.
TEST(Api, Float32KlObjectiveFallsAsFloat64DoesOnSparseInput) {
  std::mt19937_64 engine(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const index_t m = 150, n = 100, k = 5;
  DenseMatrix<double> w(m, k), h(k, n);
  // Each factor entry present with probability 0.4: an entry of the product is zero where its row and column
  // share no component (about 40% of them).
  for (double& v : w.storage()) v = u(engine) < 0.4 ? u(engine) : 0.0;
  for (double& v : h.storage()) v = u(engine) < 0.4 ? u(engine) : 0.0;
  auto [a64, a32] = product_in_both(w, h);
  for (std::size_t e = 0; e < a64.storage().size(); ++e) {  // 1.4% noise on the stored entries
    a64.storage()[e] *= 1 + 0.05 * (u(engine) - 0.5);
    a32.storage()[e] = static_cast<float>(a64.storage()[e]);
  }
  const CsrMatrix<double> s64 = test::to_csr(a64);
  const CsrMatrix<float> s32 = test::to_csr(a32);
  ASSERT_LT(s64.nnz(), m * n * 7 / 10) << "the product should leave many entries unstored";
  const FactorOptions o = kl_for(k, 160);
  const FactorResult<double> r64 = factor<double>(Source::csr<double>(s64.view()), o).result;
  const FactorResult<float> r32 = factor<float>(Source::csr<float>(s32.view()), o).result;
  // Iterations 61-160, where float64's relative fall goes from ~1e-3 to ~1e-6: float32's read ±3e-4 of noise there
  // with the model term from the factors' float sums (above float64's fall from about iteration 90). Within 2%, or
  // 3e-7 where float64's fall is below 1.5e-5: float32's own rounding of the iterates is of that order.
  expect_falls_follow_float64(r64, r32, 60, 160, 3e-7, "sparse");
}

// Subnormal mask weights make the weighted figures too small to fit: the message says the weights may be the cause
// (it blamed "the matrix's entries", of 0.1-2 here, and told to rescale the matrix alone).
TEST(Api, TooSmallWeightedEntriesNameTheWeights) {
  const DenseMatrix<double> a = planted_dense();
  DenseMatrix<double> mask = tenth_missing<double>(a.rows(), a.cols());
  for (double& w : mask.storage()) w *= 1e-310;
  FactorOptions o = options_k4();
  o.missing.mask = Source::dense<double>(mask.view());
  try {
    (void)factor<double>(Source::dense<double>(a.view()), o);
    ADD_FAILURE() << "weights of 1e-310 were accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::data) << m;
    EXPECT_NE(m.find("the weighted entries w·a (the mask's weights times A's entries) are too small"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("multiply the matrix or the mask's weights by a large constant"), std::string::npos) << m;
  }
}

// KL's floor on the model is of A's scale, whatever the weights: data of 1e-29 with a mask of weights 1e6 was
// refused as "the weighted entries w·a ... multiply the matrix or the mask's weights" (scaling the weights
// changed nothing), and so were --unstored missing runs with no mask at all.
TEST(Api, TooSmallDataForKlNamesTheMatrixAlone) {
  DenseMatrix<double> a = planted_dense();
  for (double& v : a.storage()) v *= 1e-29;
  DenseMatrix<double> mask = tenth_missing<double>(a.rows(), a.cols());
  for (double& w : mask.storage()) w *= 1e6;
  const CsrMatrix<double> s = test::to_csr(a);
  const auto message = [](const Source& source, const FactorOptions& o) {
    try {
      (void)factor<double>(source, o);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  FactorOptions masked = options_k4(Algorithm::kl);
  masked.missing.mask = Source::dense<double>(mask.view());
  FactorOptions unstored = options_k4(Algorithm::kl);
  unstored.missing.unstored = Unstored::missing;
  for (const std::string& m :
       {message(Source::dense<double>(a.view()), masked), message(Source::csr<double>(s.view()), unstored)}) {
    EXPECT_NE(m.find("the matrix's observed entries are too small for KL"), std::string::npos) << m;
    EXPECT_NE(m.find("multiply the matrix by a large constant first"), std::string::npos) << m;
    EXPECT_EQ(m.find("weight"), std::string::npos) << m;
  }
  const std::string plain = message(Source::dense<double>(a.view()), options_k4(Algorithm::kl));
  EXPECT_NE(plain.find("the matrix's entries are too small for KL"), std::string::npos) << plain;
}

// In float32 the weighted iterations' products carry a weight and three factor entries: uniform weights of 3e-45
// (subnormal in float) passed the scale check (its √w·a was 4e-23) and returned W·H = 0 or a wrong fit with exit
// 0, where float64 refused them. Refused now with the weights named; uniform weights of 1e-30 fit as weights of 1.
TEST(Api, Float32MaskOfTinyWeightsIsRefusedOrFitsAsUnitWeights) {
  DenseMatrix<float> a(30, 20);
  for (index_t i = 0; i < 30; ++i)
    for (index_t j = 0; j < 20; ++j) a(i, j) = 0.1f + static_cast<float>((i * 7 + j * 13) % 23) / 23.0f;
  const auto fit = [&](float weight) {
    DenseMatrix<float> mask(30, 20);
    for (float& w : mask.storage()) w = weight;
    mask(3, 4) = 0;  // one missing entry, so that the mask is not all ones
    FactorOptions o = options_k4();
    o.max_iterations = 50;
    o.missing.mask = Source::dense<float>(mask.view());
    return factor<float>(Source::dense<float>(a.view()), o);
  };
  try {
    (void)fit(3e-45f);
    ADD_FAILURE() << "float32 weights of 3e-45 were accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::data) << m;
    EXPECT_NE(m.find("too small for float32"), std::string::npos) << m;
    EXPECT_NE(m.find("mean weight"), std::string::npos) << m;
  }
  const auto unit = fit(1.0f), tiny = fit(1e-30f);
  EXPECT_NEAR(tiny.result.rel_error, unit.result.rel_error, 1e-4 * unit.result.rel_error);
}

// A mask of uniform weights `refused` (one entry in seven missing) on a 60 x 40 A of entries near `scale` is refused
// as bad data whose message holds each of `said`, for every algorithm in `algos`; weights `fitted` give the fit of
// unit weights to `tolerance` (relative).
template <class T>
void expect_weights_refused_or_fit_as_unit(T scale, T refused, T fitted, std::initializer_list<Algorithm> algos,
                                           std::initializer_list<const char*> said, double tolerance) {
  DenseMatrix<T> a(60, 40);
  for (index_t i = 0; i < 60; ++i)
    for (index_t j = 0; j < 40; ++j) a(i, j) = scale * (T(0.1) + static_cast<T>((i * 7 + j * 13) % 23) / T(23));
  const auto fit = [&](T weight, Algorithm algo) {
    DenseMatrix<T> mask(60, 40);
    for (index_t i = 0; i < 60; ++i)
      for (index_t j = 0; j < 40; ++j) mask(i, j) = (i * 3 + j * 5) % 7 == 0 ? T(0) : weight;
    FactorOptions o = options_k4(algo);
    o.max_iterations = 30;
    o.missing.mask = Source::dense<T>(mask.view());
    return factor<T>(Source::dense<T>(a.view()), o);
  };
  for (const Algorithm algo : algos) {
    try {
      (void)fit(refused, algo);
      ADD_FAILURE() << "weights of " << refused << " were accepted (" << to_string(algo) << ")";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.kind(), ErrorKind::data) << m;
      for (const char* text : said) EXPECT_NE(m.find(text), std::string::npos) << m;
    }
    const auto unit = fit(T(1), algo), scaled = fit(fitted, algo);
    EXPECT_NEAR(scaled.result.rel_error, unit.result.rel_error, tolerance * unit.result.rel_error) << to_string(algo);
  }
}

// The other end (a helper session's finding): float32 weights of 1e30 on entries of 1e5 passed the scale check
// (it read A's line sums and √(w·a²), not the weight each numerator carries), and BPP's NNLS threw on an
// infinite right-hand side inside an OpenMP region: std::terminate, exit 134, a Python interpreter killed. Refused
// now before any iteration with the weights named, on every solver; weights of 1e20 fit as weights of 1.
TEST(Api, Float32MaskOfHugeWeightsIsRefusedOrFitsAsUnitWeights) {
  expect_weights_refused_or_fit_as_unit<float>(
      1e5f, 1e30f, 1e20f, {Algorithm::bpp, Algorithm::hals, Algorithm::mu},
      {"too large for float32", "mean weight", "the mask's weights by a large constant"}, 1e-4);
}

// Float64 weights of 1e305, each finite, summed to inf: the division guard (scaled by the mean weight) became
// infinite, MU returned W·H = 0 and HALS a wrong fit, both with exit 0 and "converged" (a helper session's
// finding). Refused now, naming the weights; weights of 1e303 fit as weights of 1 on every solver.
TEST(Api, MaskWeightsWhoseSumOverflowsAreRefused) {
  expect_weights_refused_or_fit_as_unit<double>(1.0, 1e305, 1e303,
                                                {Algorithm::mu, Algorithm::hals, Algorithm::bpp, Algorithm::kl},
                                                {"the mask's weights sum beyond double precision's range"}, 1e-10);
}

// A KL fit of data with one entry of 1e20 among entries near 1 reported objective null (inf) with exit 0: where
// the model is below 1.1e-16 of an entry, (m − a)/a rounds to -1 and log1p(-1) is -inf. The divergence is finite,
// and the reference here sums each cell's a·log(a/m) − a + m in long double, the model floored as the iterations
// floor it.
TEST(Api, KlObjectiveStaysFiniteWhereTheModelIsFarBelowAnEntry) {
  DenseMatrix<double> a(30, 20);
  for (index_t i = 0; i < 30; ++i)
    for (index_t j = 0; j < 20; ++j) a(i, j) = 0.5 + static_cast<double>((i * 5 + j * 3) % 11) / 11.0;
  a(7, 5) = 1e20;
  FactorOptions o = options_k4(Algorithm::kl);
  o.rank = 2;
  o.max_iterations = 20;
  o.tol = 0;
  const Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o);
  ASSERT_TRUE(std::isfinite(run.result.objective)) << run.result.objective;
  long double reference = 0;
  for (index_t i = 0; i < 30; ++i)
    for (index_t j = 0; j < 20; ++j) {
      long double m = 0;
      for (index_t l = 0; l < 2; ++l)
        m += static_cast<long double>(run.result.W(i, l)) * static_cast<long double>(run.result.H(l, j));
      m = std::max(m, 1e-30L);
      const long double v = a(i, j);
      reference += v * std::log(v / m) - v + m;
    }
  EXPECT_NEAR(run.result.objective, static_cast<double>(reference), 1e-9 * static_cast<double>(reference));
}

// KL's final objective from Σ a·log(a/m) − Σ a + Σ m cancels to about ε·Σ a on a near-exact fit: a constant 1e10
// (400 x 300, k = 1) read -7.0 in float64, a matrix of ones -3.9e-4 in float32, for divergences of 1e-15 and
// 3e-7. Each cell's term is now summed as a non-negative number below that noise.
TEST(Api, KlObjectiveOfANearExactFitIsTheDivergenceNotItsRounding) {
  const auto check = [](auto zero, double value, double bound) {
    using T = decltype(zero);
    DenseMatrix<T> a(400, 300);
    for (T& v : a.storage()) v = static_cast<T>(value);
    FactorOptions o = options_k4(Algorithm::kl);
    o.rank = 1;
    const Factorization<T> run = factor<T>(Source::dense<T>(a.view()), o);
    double reference = 0;
    for (index_t i = 0; i < 400; ++i)
      for (index_t j = 0; j < 300; ++j) {
        const double m = static_cast<double>(run.result.W(i, 0)) * static_cast<double>(run.result.H(0, j));
        const double r = (m - value) / value;
        reference += value * (std::abs(r) < 1e-3 ? r * r / 2 : r - std::log1p(r));
      }
    EXPECT_GE(run.result.objective, 0.0) << value;
    EXPECT_LE(run.result.objective, bound) << value;
    EXPECT_NEAR(run.result.objective, reference, 0.5 * reference + 1e-20 * value) << value;
  };
  check(0.0, 1e10, 1e-6);
  check(0.0f, 1.0, 1e-5);
}

// Misuse a C++ caller can make with values outside the API's contracts (a helper session's findings): each was a
// crash or a silently wrong result.
TEST(Api, NullArraysAndValuesOutsideTheEnumerationsAreUsageErrors) {
  const DenseMatrix<double> good = planted_dense();
  const auto usage_message = [](const auto& call) {
    try {
      call();
    } catch (const UsageError& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("another exception: ") + e.what();
    }
    return std::string("accepted");
  };
  // A null data or values pointer for a non-empty matrix (SIGSEGV in the first product); empty ones stay fine.
  const std::vector<index_t> indptr = {0, 1, 2, 3};
  const std::vector<col_index_t> indices = {0, 1, 2};
  EXPECT_NE(usage_message([] {
              (void)Source::dense<double>(DenseView<const double>(nullptr, 4, 3, 4));
            }).find("dense matrix: no data array (a null pointer) for its 12 entries"),
            std::string::npos);
  EXPECT_NE(usage_message([] { (void)Source::dense_row_major<float>(nullptr, 2, 3, 3); }).find("no data array"),
            std::string::npos);
  EXPECT_NE(usage_message([&] {
              (void)Source::csr<double>(CsrView<double>{3, 3, indptr.data(), indices.data(), nullptr});
            }).find("sparse CSR matrix: no values array (a null pointer) for its 3 stored entries"),
            std::string::npos);
  EXPECT_NE(usage_message([&] {
              (void)Source::csc<double>(3, 3, indptr.data(), indices.data(), nullptr);
            }).find("sparse CSC matrix: no values array"),
            std::string::npos);
  EXPECT_NE(usage_message([] {
              (void)factorize<double>(MatrixRef<double>{DenseView<const double>(nullptr, 4, 3, 4)}, FactorOptions{});
            }).find("no data array"),
            std::string::npos);
  EXPECT_NO_THROW((void)Source::dense<double>(DenseView<const double>(nullptr, 0, 3, 1)));
  // The writers and the entry check read through the same pointers (SIGSEGV); they refuse them as the entry
  // points do, naming the file (and write no file).
  const std::string out = ::testing::TempDir() + "dnmf_null_write";
  const CsrView<double> no_values{3, 3, indptr.data(), indices.data(), nullptr};
  for (const auto& [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"npy", [&] { io::write_npy<double>(out + ".npy", DenseView<const double>(nullptr, 3, 3, 3)); }},
           {"npy row-major", [&] { io::write_npy_row_major<double>(out + ".npy", nullptr, 3, 3); }},
           {"mtx", [&] { io::write_mtx<double>(out + ".mtx", no_values); }},
           {"dcsr", [&] { io::write_dcsr<double>(out + ".dcsr", no_values); }},
           {"check", [&] { io::check_nonnegative<double>(DenseView<const double>(nullptr, 3, 3, 3), out); }},
           {"check csr", [&] { io::check_nonnegative<double>(no_values, out); }}}) {
    EXPECT_NE(usage_message(call).find(out), std::string::npos) << what;
    EXPECT_NE(usage_message(call).find("(a null pointer)"), std::string::npos) << what;
  }
  EXPECT_NE(usage_message([&] {
              io::check_nonnegative<double>(CsrView<double>{3, 3, nullptr, nullptr, nullptr}, out);
            }).find("no indptr array"),
            std::string::npos);
  // So do transform and the direct error, for W and H (SIGSEGV in W's transpose and in the error's sums).
  const DenseMatrix<double> full(4, 3, 1.0), w(4, 2, 1.0), h(2, 3, 1.0);
  const DenseView<const double> null_w(nullptr, 4, 2, 4), null_h(nullptr, 2, 3, 2);
  for (const auto& [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"transform: W", [&] { (void)transform<double>(MatrixRef<double>{full.view()}, null_w); }},
           {"transform: W", [&] { (void)transform<double>(Source::dense<double>(full.view()), null_w, {}); }},
           {"relative_error_direct: W",
            [&] { (void)relative_error_direct<double>(MatrixRef<double>{full.view()}, null_w, h.view()); }},
           {"relative_error_direct: H",
            [&] { (void)relative_error_direct<double>(MatrixRef<double>{full.view()}, w.view(), null_h); }}}) {
    const std::string message = usage_message(call);
    EXPECT_EQ(message.rfind(what + ": no data array (a null pointer)", 0), 0u) << message;
  }
  for (const char* ext : {".npy", ".mtx", ".dcsr"}) EXPECT_FALSE(std::filesystem::exists(out + ext)) << ext;
  // A shape of 2^80 entries: its count overflowed index_t inside the check (undefined behaviour; UBSan saw it).
  static const double some[4] = {};
  const index_t huge = index_t{1} << 40;
  EXPECT_NO_THROW((void)Source::dense<double>(DenseView<const double>(some, huge, huge, huge)));
  EXPECT_EQ(detail::entry_count(huge, huge), std::numeric_limits<index_t>::max());
  // A CSR wider than its 32-bit column indices reach: refused (factorize allocated a k x 2^31 H first).
  const std::vector<index_t> one_row = {0, 1};
  const std::vector<col_index_t> first_column = {0};
  const std::vector<double> one_value = {1.0};
  const CsrView<double> wide{1, (index_t{1} << 31) + 5, one_row.data(), first_column.data(), one_value.data()};
  for (const auto& call :
       std::vector<std::function<void()>>{[&] { (void)Source::csr<double>(wide); },
                                          [&] { (void)factorize<double>(MatrixRef<double>{wide}, FactorOptions{}); }}) {
    try {
      call();
      ADD_FAILURE() << "a CSR of 2^31 + 5 columns was accepted";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("2147483653 columns do not fit the 32-bit indices"), std::string::npos)
          << e.what();
    }
  }
  // An algorithm or backend cast from an integer outside the enumeration: the algorithm had run no update and
  // returned the start as its result; the backend was taken for cuda with an empty message.
  FactorOptions o = options_k4();
  o.algorithm = static_cast<Algorithm>(7);
  EXPECT_NE(usage_message([&] {
              (void)factor<double>(Source::dense<double>(good.view()), o);
            }).find("unknown algorithm (value 7): use mu, kl, hals or bpp"),
            std::string::npos);
  EXPECT_NE(usage_message([&] {
              (void)factorize<double>(MatrixRef<double>{good.view()}, o);
            }).find("unknown algorithm (value 7)"),
            std::string::npos);
  o = options_k4();
  o.init = static_cast<InitMethod>(42);
  EXPECT_NE(usage_message([&] {
              (void)factor<double>(Source::dense<double>(good.view()), o);
            }).find("unknown init method (value 42): use random, nndsvd, nndsvda or given"),
            std::string::npos);
  Context context;
  context.backend = static_cast<BackendKind>(9);
  EXPECT_NE(usage_message([&] {
              (void)factor<double>(Source::dense<double>(good.view()), options_k4(), context);
            }).find("unknown backend (value 9): use cpu, reference or cuda"),
            std::string::npos);
  // NMFk's enumerations too: perturbation 9 drew uniform noise and was reported as poisson. nmfk's option errors
  // are the processes' common error, of kind usage.
  const auto nmfk_usage = [](const auto& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.kind() == ErrorKind::usage ? std::string(e.what()) : std::string("another kind: ") + e.what();
    }
    return std::string("accepted");
  };
  NmfkOptions nk;
  nk.ks = {2};
  nk.perturbations = 2;
  nk.perturbation = static_cast<Perturbation>(9);
  {
    const std::string message = nmfk_usage([&] { (void)nmfk<double>(Source::dense<double>(good.view()), nk); });
    EXPECT_NE(message.find("unknown perturbation (value 9;"), std::string::npos) << message;
  }
  nk.perturbation = Perturbation::uniform;
  nk.rule = static_cast<SelectionRule>(9);
  {
    const std::string message = nmfk_usage([&] { (void)nmfk<double>(Source::dense<double>(good.view()), nk); });
    EXPECT_NE(message.find("unknown selection rule (value 9;"), std::string::npos) << message;
  }
}

// factor() names the source in its messages and keeps the failure's class: a NumericalError stays one (it was
// rethrown as a plain Error of kind numerical, which `catch (const NumericalError&)` missed). A failure every
// process detects together stays a CollectiveError, of the same kind.
TEST(Api, FactorKeepsTheClassOfTheErrorItNames) {
  DenseMatrix<double> huge = planted_matrix<double>(60, 40, 4, 0.01, 7);
  for (double& v : huge.storage()) v *= 1e160;  // squares overflow double: a NumericalError
  try {
    (void)factor<double>(Source::dense<double>(huge.view()), options_k4());
    ADD_FAILURE() << "entries of 1e160 were factored";
  } catch (const NumericalError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("<memory>: ", 0), 0U) << e.what();
  }
  DenseMatrix<float> huge32 = planted_matrix<float>(60, 40, 4, 0.01, 7);
  for (float& v : huge32.storage()) v *= 1e30F;  // products overflow float: a DataError with the remedy
  try {
    (void)factor<float>(Source::dense<float>(huge32.view()), options_k4());
    ADD_FAILURE() << "float32 entries of 1e30 were factored";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("<memory>: ", 0), 0U) << e.what();
  }
  DenseMatrix<double> zeros(20, 10, 0.0);
  try {
    (void)factor<double>(Source::dense<double>(zeros.view()), options_k4());
    ADD_FAILURE() << "an all-zero matrix was factored";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
  }
  const DenseMatrix<double> good = planted_dense();
  FactorOptions o = options_k4();
  o.max_iterations = 3;
  const Factorization<double> run = factor<double>(Source::dense<double>(good.view()), o);
  EXPECT_EQ(run.result.observed, good.rows() * good.cols()) << "an unmasked run observes every entry";
  EXPECT_EQ(factorize<double>(MatrixRef<double>{good.view()}, o).observed, good.rows() * good.cols());
}

// A compressed source whose arrays do not describe a matrix would send the kernels outside them: refused when
// the source is made, naming the line and the fault.
TEST(Api, CompressedSourcesWithABadStructureAreRefused) {
  const std::vector<index_t> indptr = {0, 2, 3, 5};
  const std::vector<col_index_t> indices = {0, 3, 1, 2, 4};
  const std::vector<double> values = {1, 2, 3, 4, 5};
  EXPECT_NO_THROW((void)Source::csr<double>(CsrView<double>{3, 5, indptr.data(), indices.data(), values.data()}));
  EXPECT_NO_THROW((void)Source::csc<double>(5, 3, indptr.data(), indices.data(), values.data()));
  auto message = [&](const std::vector<index_t>& p, const std::vector<col_index_t>& i, index_t inner, bool csc) {
    try {
      if (csc) {
        (void)Source::csc<double>(inner, 3, p.data(), i.data(), values.data());
      } else {
        (void)Source::csr<double>(CsrView<double>{3, inner, p.data(), i.data(), values.data()});
      }
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({0, 2, 1, 5}, indices, 5, false).find("indptr decreases at row 1"), std::string::npos);
  EXPECT_NE(message({1, 2, 3, 5}, indices, 5, false).find("indptr[0] is 1"), std::string::npos);
  EXPECT_NE(message(indptr, {0, 3, 1, 2, 5}, 5, false).find("index 5 in row 2 is out of range 0..4"),
            std::string::npos);
  EXPECT_NE(message(indptr, {0, 3, 1, 2, 4}, 4, true).find("index 4 in column 2 is out of range 0..3"),
            std::string::npos);
  EXPECT_NE(message(indptr, {3, 0, 1, 2, 4}, 5, false).find("indices of row 0 are not sorted and unique (3 then 0)"),
            std::string::npos);
  EXPECT_NE(message(indptr, {0, 3, 1, 2, 2}, 5, true).find("indices of column 2 are not sorted"), std::string::npos);
  EXPECT_NE(message(indptr, {0, 3, -1, 2, 4}, 5, false).find("index -1 in row 1 is out of range 0..4"),
            std::string::npos);
  // In range at both ends of its line, out of range inside it (the order is broken there too).
  EXPECT_NE(message({0, 3, 3, 5}, {0, 9, 4, 2, 4}, 5, false).find("index 9 in row 0 is out of range 0..4"),
            std::string::npos);
  // Lines that start lower than the previous one ends are fine, empty lines between them too; a repeat inside a
  // line after an empty one is not (the whole-array count of descents must match the lines' starts exactly).
  EXPECT_EQ(message({0, 2, 2, 5}, {3, 4, 0, 1, 2}, 5, false), "accepted");
  EXPECT_EQ(message({0, 0, 2, 5}, {3, 4, 0, 1, 2}, 5, true), "accepted");
  EXPECT_NE(
      message({0, 2, 2, 5}, {3, 4, 0, 0, 2}, 5, false).find("indices of row 2 are not sorted and unique (0 then 0)"),
      std::string::npos);
  EXPECT_NE(
      message({0, 2, 2, 5}, {1, 4, 2, 1, 3}, 5, false).find("indices of row 2 are not sorted and unique (2 then 1)"),
      std::string::npos);
}

// Views handed to the entry points directly are checked as sources are: a leading dimension that would overlap a
// dense matrix's lines (a different matrix, silently, or reads before the array) and a CSR structure that would
// send the kernels outside the arrays (a crash in factorize()'s transpose) are refused, naming the problem.
TEST_F(ApiTest, ViewsWithABadLayoutAreRefusedByEveryEntryPoint) {
  const std::vector<double> data(30, 1.0);  // room for a 6 x 5 column-major matrix
  const auto usage = [](auto&& call) {
    try {
      call();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const index_t ld : {index_t{3}, index_t{0}, index_t{-1}}) {
    const DenseView<const double> a(data.data(), 6, 5, ld);
    EXPECT_NE(usage([&] { (void)Source::dense<double>(a); }).find("leading dimension"), std::string::npos) << ld;
    EXPECT_NE(usage([&] { (void)factorize<double>(MatrixRef<double>{a}, options_k4()); }).find("would overlap"),
              std::string::npos)
        << ld;
    EXPECT_NE(usage([&] { (void)Source::dense_row_major<double>(data.data(), 5, 6, ld); }).find("each row"),
              std::string::npos)
        << ld;
  }
  EXPECT_EQ(usage([&] { (void)Source::dense<double>(DenseView<const double>(data.data(), 6, 1, 0)); }), "accepted")
      << "one column never steps by ld";
  const DenseView<const double> good(data.data(), 6, 5, 6);
  const DenseView<const double> w_overlapping(data.data(), 6, 2, 1);
  EXPECT_NE(usage([&] { (void)transform<double>(MatrixRef<double>{good}, w_overlapping); }).find("transform: W"),
            std::string::npos);
  EXPECT_NE(usage([&] { io::write_npy<double>(path("overlap.npy"), w_overlapping); }).find("overlap.npy"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path("overlap.npy")));
  EXPECT_NE(usage([&] {
              (void)transform<double>(MatrixRef<double>{good}, DenseView<const double>(data.data(), 5, 2, 5));
            }).find("W has 5 rows but A has 6"),
            std::string::npos);

  // A column index far outside the matrix, through factorize() and transform() (Source::csr refuses it already).
  const std::vector<index_t> indptr = {0, 1, 2, 3, 4};
  const std::vector<col_index_t> indices = {0, 1, 1000000, 3};
  const std::vector<double> values = {1, 2, 3, 4};
  const CsrView<double> bad{4, 4, indptr.data(), indices.data(), values.data()};
  FactorOptions o = options_k4();
  o.rank = 2;
  EXPECT_THROW((void)factorize<double>(MatrixRef<double>{bad}, o), DataError);
  const std::vector<double> w(8, 1.0);
  EXPECT_THROW((void)transform<double>(MatrixRef<double>{bad}, DenseView<const double>(w.data(), 4, 2, 4)), DataError);

  // nmfk() on a view checks it as factorize() does (an overlapping ld ran silently; a bad CSR crashed).
  NmfkOptions nk;
  nk.ks = {1};
  nk.perturbations = 2;
  EXPECT_NE(usage([&] {
              (void)nmfk<double>(MatrixRef<double>{DenseView<const double>(data.data(), 6, 5, 3)}, nk);
            }).find("would overlap"),
            std::string::npos);
  const std::vector<index_t> far_end = {0, 100000000, 2};
  const std::vector<col_index_t> two = {0, 1};
  const CsrView<double> broken{2, 2, far_end.data(), two.data(), values.data()};
  EXPECT_THROW((void)nmfk<double>(MatrixRef<double>{broken}, nk), DataError);
  // The writers check a CSR view before writing it: the Matrix Market writer read outside the arrays, and the
  // others wrote files their own readers refuse. Nothing is left behind.
  for (const std::string name : {"bad.mtx", "bad.dcsr", "bad.h5"}) {
    const auto write = [&](const CsrView<double>& v) {
      if (name == "bad.mtx") io::write_mtx<double>(path(name), v);
      if (name == "bad.dcsr") io::write_dcsr<double>(path(name), v);
      if (name == "bad.h5") io::write_h5_csr<double>(path(name), "/X", v);
    };
    for (const CsrView<double>& v : {broken, bad}) {
      try {
        write(v);
        ADD_FAILURE() << name << ": a bad CSR was written";
      } catch (const DataError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path(name), 0), 0u) << e.what();
      } catch (const Error& e) {
        if (name != "bad.h5" || std::string(e.what()).find("HDF5") == std::string::npos) ADD_FAILURE() << e.what();
      }
      EXPECT_FALSE(std::filesystem::exists(path(name))) << name;
    }
  }
  // A CSR source without its indptr array is refused, not read.
  EXPECT_THROW((void)Source::csr<double>(CsrView<double>{2, 2, nullptr, two.data(), values.data()}), DataError);

  // A Factorization that factor() did not make has no distribution to gather or write.
  Factorization<double> empty;
  EXPECT_NE(
      usage([&] { write_factors_h5<double>(empty, path("f.h5"), Context()); }).find("does not come from factor()"),
      std::string::npos);
  EXPECT_NE(usage([&] { gather<double>(empty, Context()); }).find("does not come from factor()"), std::string::npos);
}

// HDF5 names only an errno when it cannot create a file; the error says what is wrong with the folder.
TEST_F(ApiTest, FactorsIntoAMissingFolderAreAClearError) {
  const DenseMatrix<double> a = planted_dense();
  const Factorization<double> run = factor<double>(Source::dense(a.view()), options_k4(), Context());
  // Every rank takes part in the write, so its failure arrives as the ranks' common error, of kind io (exit 4).
  const auto io_error = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.kind() == ErrorKind::io ? e.what() : "not an io error";
    }
    return "no error";
  };
  const std::string absent = path("absent") + "/f.h5";
  EXPECT_EQ(io_error([&] { write_factors_h5<double>(run, absent, Context()); }),
            absent + ": cannot create: the directory '" + path("absent") + "' does not exist");
  io::write_npy<double>(path("plain.npy"), a.view());
  const std::string under_file = path("plain.npy") + "/f.h5";
  EXPECT_EQ(io_error([&] { write_factors_h5<double>(run, under_file, Context()); }),
            under_file + ": cannot create: '" + path("plain.npy") + "' is not a directory");
  write_factors_h5<double>(run, path("f.h5"), Context());  // and where the folder is there, it is written
  EXPECT_TRUE(std::filesystem::exists(path("f.h5")));
}

// A row-major source is factored as its transpose; its blocks are written as W and H of A, the ones gather()
// collects (write_factors_h5 refused such a run and sent the user to gather(), which writes no file).
TEST_F(ApiTest, FactorsOfATransposedSourceAreWrittenAsThoseOfA) {
  const DenseMatrix<double> a = planted_dense();
  const std::vector<double> rm = row_major(a);
  Factorization<double> run = factor<double>(Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols()),
                                             options_k4(), Context(), Gather::none);
  write_factors_h5<double>(run, path("t.h5"), Context());
  gather<double>(run, Context());
  const io::LoadedMatrix<double> w = io::load_matrix<double>(path("t.h5") + ":/W");
  const io::LoadedMatrix<double> h = io::load_matrix<double>(path("t.h5") + ":/H");
  ASSERT_EQ(w.dense.rows(), a.rows());
  ASSERT_EQ(w.dense.cols(), 4);
  ASSERT_EQ(h.dense.rows(), 4);
  ASSERT_EQ(h.dense.cols(), a.cols());
  for (index_t l = 0; l < 4; ++l) {
    for (index_t i = 0; i < a.rows(); ++i) ASSERT_EQ(w.dense(i, l), run.result.W(i, l)) << i << "," << l;
    for (index_t j = 0; j < a.cols(); ++j) ASSERT_EQ(h.dense(l, j), run.result.H(l, j)) << l << "," << j;
  }
}

TEST_F(ApiTest, InspectAndConvertReadEveryFormat) {
  const DenseMatrix<double> a = planted_dense();
  const CsrMatrix<double> s = test::to_csr(a);
  io::write_mtx<double>(path("S.mtx"), s.view());
  const MatrixInfo info = inspect(path("S.mtx"));
  EXPECT_TRUE(info.sparse);
  EXPECT_EQ(info.stats.rows, 60);
  EXPECT_EQ(info.stats.stored, s.nnz());
  EXPECT_EQ(info.stats.negative, 0);
  double sum = 0;
  for (double v : s.values()) sum += v;
  EXPECT_NEAR(info.stats.sum, sum, 1e-9 * sum);

  const io::MatrixShape converted = io::convert_matrix<double>(path("S.mtx"), path("S.dcsr"));
  EXPECT_EQ(converted.stored, s.nnz());
  const CsrMatrix<double> back = io::read_dcsr<double>(path("S.dcsr"));
  EXPECT_EQ(back.values(), s.values());
  EXPECT_EQ(back.indices(), s.indices());
  EXPECT_EQ(io::read_shape(path("S.dcsr")).rows, 60);
  EXPECT_THROW((void)io::convert_matrix<double>(path("S.mtx"), path("S.npy")), Error);
}

TEST(Api, NmfkOnASourceFindsThePlantedRank) {
  const DenseMatrix<double> a = planted_matrix<double>(80, 60, 3, 0.01, 11);
  NmfkOptions o;
  o.ks = {2, 3, 4, 5};
  o.perturbations = 6;
  o.factor.algorithm = Algorithm::hals;
  o.factor.max_iterations = 400;
  const NmfkResult<double> r = nmfk<double>(Source::dense<double>(a.view()), o);
  ASSERT_TRUE(r.selection.selected_k.has_value()) << r.selection.message;
  EXPECT_EQ(*r.selection.selected_k, 3);
  const std::vector<double> rm = row_major(a);
  EXPECT_THROW((void)nmfk<double>(Source::dense_row_major<double>(rm.data(), 80, 60, 60), o), CollectiveError);
  // A source of the other precision is converted, as factor() converts it (it was refused): float32 data in a
  // float64 sweep finds the same k; a value float32 cannot hold is refused by name.
  DenseMatrix<float> af(80, 60);
  for (index_t j = 0; j < 60; ++j)
    for (index_t i = 0; i < 80; ++i) af(i, j) = static_cast<float>(a(i, j));
  const NmfkResult<double> from_float = nmfk<double>(Source::dense<float>(af.view()), o);
  ASSERT_TRUE(from_float.selection.selected_k.has_value()) << from_float.selection.message;
  EXPECT_EQ(*from_float.selection.selected_k, 3);
  DenseMatrix<double> beyond = a;
  beyond(7, 5) = 1e40;
  try {
    (void)nmfk<float>(Source::dense<double>(beyond.view()), o);
    ADD_FAILURE() << "1e40 was narrowed to float32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 7, column 5"), std::string::npos) << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
  }

  // The group grid, in NmfkOptions or in the Context: checked wherever it is given (it was ignored in the options).
  o.ks = {2, 3};
  o.perturbations = 2;
  o.factor.max_iterations = 5;
  const Source source = Source::dense<double>(a.view());
  const auto message = [&](const NmfkOptions& options, const Context& context) -> std::string {
    try {
      (void)nmfk<double>(source, options, context);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::usage ? e.what() : "not a usage error";
    }
    return "no error";
  };
  Context two_by_one;
  two_by_one.grid = "2x1";
  NmfkOptions bad = o;
  bad.grid = "x";
  EXPECT_NE(message(bad, Context()).find("expected auto or PRxPC"), std::string::npos);
  bad.grid = "2x1";
  EXPECT_NE(message(bad, Context()).find("as many ranks as each group"), std::string::npos);
  EXPECT_NE(message(o, two_by_one).find("as many ranks as each group"), std::string::npos);
  bad.grid = "1x1";
  EXPECT_NE(message(bad, two_by_one).find("disagree"), std::string::npos);
  EXPECT_EQ(message(bad, Context()), "no error");
}

// Two runs into one new folder: the second found it absent too, and when the first committed meanwhile its own
// commit failed after all its work ("Directory not empty", a helper session's finding). It replaces the first's
// set as it would one found there at the start: the last run wins, and nothing is left behind.
TEST_F(ApiTest, ASetCommittedMeanwhileIsReplacedByTheLaterCommit) {
  const std::string out = path("fresh");
  dnmf::OutputSet later(out);
  {
    dnmf::OutputSet earlier(out);
    std::ofstream(earlier.file("report.json")) << "earlier";
    earlier.commit();
  }
  std::ofstream(later.file("report.json")) << "later";
  EXPECT_NO_THROW(later.commit());
  std::ifstream in(path("fresh/report.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "later");
  for (const auto& entry : std::filesystem::directory_iterator(path("")))
    EXPECT_EQ(entry.path().filename().string().find("fresh."), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace dnmf
