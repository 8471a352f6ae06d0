// The extrapolated iteration (FactorOptions::extrapolate): its step-size schedule, an independent float64
// implementation of extrapolated HALS, the same iterates on every path, fewer BPP iterations, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/planted.hpp"
#include "solvers/extrapolation.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

FactorOptions extrapolated(Algorithm algo, index_t k, int iters) {
  FactorOptions o;
  o.rank = k;
  o.algorithm = algo;
  o.max_iterations = iters;
  o.tol = 0;
  o.seed = 7;
  o.extrapolate = true;
  return o;
}

TEST(ExtrapolationSchedule, GrowsWhileTheObjectiveFallsAndShrinksBelowANewCeilingWhenItRises) {
  solvers::ExtrapolationSchedule s;
  EXPECT_DOUBLE_EQ(s.beta(), 0.5);
  s.record(10);
  EXPECT_DOUBLE_EQ(s.beta(), 0.5 * 1.05);
  s.record(9);
  EXPECT_DOUBLE_EQ(s.beta(), 0.5 * 1.05 * 1.05);
  const double before = s.beta();
  s.record(9.5);  // a rise: β shrinks, and may grow back only up to the β that caused it
  EXPECT_EQ(s.restarts(), 1);
  EXPECT_DOUBLE_EQ(s.beta(), before / 1.5);
  for (int i = 0; i < 40; ++i) s.record(8 - 0.01 * i);
  EXPECT_LE(s.beta(), before * std::pow(1.01, 40) + 1e-15);
  EXPECT_GT(s.beta(), before / 1.5);
  for (int i = 0; i < 2000; ++i) s.record(-i);
  EXPECT_DOUBLE_EQ(s.beta(), 1.0);  // the ceiling's cap
  EXPECT_EQ(s.restarts(), 1);
}

// Plain float64 HALS with extrapolation, written from the formulas (Ang & Gillis 2019), independent of the
// library: each iteration updates H, coordinate by coordinate, from Ŵ = W + β(W − W_prev) (W itself in the
// first), then W from the new H starting at W; β follows the objective 0.5||A − WH||² as the schedule's
// constants say, written out here again.
struct PlainRun {
  DenseMatrix<double> w, h;
  int restarts = 0;
  int reverts = 0;
};

double half_squared_error(const DenseMatrix<double>& a, const DenseMatrix<double>& w, const DenseMatrix<double>& h) {
  double sum = 0;
  for (index_t j = 0; j < a.cols(); ++j)
    for (index_t i = 0; i < a.rows(); ++i) {
      double wh = 0;
      for (index_t p = 0; p < w.cols(); ++p) wh += w(i, p) * h(p, j);
      sum += (a(i, j) - wh) * (a(i, j) - wh);
    }
  return 0.5 * sum;
}

// One HALS sweep over every column of x (k x d) for the problem with factor y (r x k), data b (r x d).
void hals_sweep(DenseMatrix<double>& x, const DenseMatrix<double>& y, const DenseMatrix<double>& b) {
  const index_t k = x.rows(), r = y.rows();
  std::vector<double> g(k * k, 0.0);
  for (index_t p = 0; p < k; ++p)
    for (index_t q = 0; q < k; ++q)
      for (index_t i = 0; i < r; ++i) g[p + q * k] += y(i, p) * y(i, q);
  for (index_t j = 0; j < x.cols(); ++j) {
    std::vector<double> numer(k, 0.0);
    for (index_t l = 0; l < k; ++l)
      for (index_t i = 0; i < r; ++i) numer[l] += y(i, l) * b(i, j);
    for (index_t l = 0; l < k; ++l) {
      if (!(g[l + l * k] > 1e-16)) continue;  // a dead component is left alone (solvers/hals.hpp)
      double gx = 0;
      for (index_t q = 0; q < k; ++q) gx += g[l + q * k] * x(q, j);
      x(l, j) = std::max(0.0, x(l, j) + (numer[l] - gx) / g[l + l * k]);
    }
  }
}

DenseMatrix<double> transpose(const DenseMatrix<double>& x) {
  DenseMatrix<double> t(x.cols(), x.rows());
  for (index_t j = 0; j < x.cols(); ++j)
    for (index_t i = 0; i < x.rows(); ++i) t(j, i) = x(i, j);
  return t;
}

PlainRun plain_extrapolated_hals(const DenseMatrix<double>& a, DenseMatrix<double> w, DenseMatrix<double> h,
                                 int iters) {
  const DenseMatrix<double> at = transpose(a);
  double norm = 0;  // ||A||²
  for (const double v : a.storage()) norm += v * v;
  double beta = 0.5, ceiling = 1.0, previous = INFINITY, kept_error = INFINITY;
  DenseMatrix<double> w_prev = w;
  PlainRun run;
  for (int it = 0; it < iters; ++it) {
    DenseMatrix<double> w_hat = w;
    if (it > 0)
      for (index_t i = 0; i < w.rows(); ++i)
        for (index_t l = 0; l < w.cols(); ++l) w_hat(i, l) = w(i, l) + beta * (w(i, l) - w_prev(i, l));
    w_prev = w;
    const DenseMatrix<double> h_before = h;
    hals_sweep(h, w_hat, a);  // H (k x n) against Ŵ (m x k) and A
    DenseMatrix<double> wt = transpose(w);
    hals_sweep(wt, transpose(h), at);  // Wᵀ (k x m) against Hᵀ (n x k) and Aᵀ
    w = transpose(wt);
    const double objective = half_squared_error(a, w, h);
    // A step that doubled a relative error of 0.1 or more, or left nothing of W·H, is dropped: back to the pair
    // before it, β shrunk as after a rise.
    const double error = std::sqrt(2 * objective / norm);
    if (it > 0 && error > kept_error && ((error >= 2 * kept_error && error >= 0.1) || error >= 1 - 1e-6)) {
      w = w_prev;
      h = h_before;
      ++run.restarts;
      ++run.reverts;
      ceiling = beta;
      beta /= 1.5;
      continue;
    }
    kept_error = error;
    if (objective > previous) {
      ++run.restarts;
      ceiling = beta;
      beta /= 1.5;
    } else {
      beta = std::min(ceiling, 1.05 * beta);
      ceiling = std::min(1.0, 1.01 * ceiling);
    }
    previous = objective;
  }
  run.w = std::move(w);
  run.h = std::move(h);
  return run;
}

TEST(Extrapolation, HalsMatchesAnIndependentFloat64Implementation) {
  const DenseMatrix<double> a = test::random_dense<double>(40, 30, 3, 0.1);
  const DenseMatrix<double> w0 = test::random_dense<double>(40, 5, 4);
  const DenseMatrix<double> h0 = test::random_dense<double>(5, 30, 5);
  const PlainRun plain = plain_extrapolated_hals(a, w0, h0, 40);
  FactorOptions o = extrapolated(Algorithm::hals, 5, 40);
  o.init = InitMethod::given;
  o.normalize = false;
  for (const bool fused : {true, false}) {
    o.fused = fused;
    const auto r = factorize<double>(a.view(), o, &w0, &h0);
    EXPECT_LE(test::max_relative_difference(r.W, plain.w), 1e-9) << "fused=" << fused;
    EXPECT_LE(test::max_relative_difference(r.H, plain.h), 1e-9) << "fused=" << fused;
    EXPECT_EQ(r.extrapolation_restarts, plain.restarts);
    EXPECT_EQ(r.extrapolation_reverts, plain.reverts);
  }
  o.extrapolate = false;  // the steps matter: the plain iteration ends elsewhere
  const auto unextrapolated = factorize<double>(a.view(), o, &w0, &h0);
  EXPECT_GT(test::max_relative_difference(unextrapolated.W, plain.w), 1e-4);
}

// CSR takes the W-side pass, whose P̂ comes from P and P_prev (no product); dense takes Ŵ's own product. In both
// storage orders and for both solvers the iterates must agree.
TEST(Extrapolation, SameIteratesFromTheWSidePassAsFromTheProductOfW) {
  PlantedOptions po{.rows = 90, .cols = 70, .rank = 4, .density = 0.3, .noise = 0.05, .seed = 4};
  const auto sparse = make_planted<double>(po);
  const CsrView<double> csr = std::get<CsrView<double>>(sparse.matrix());
  DenseMatrix<double> dense(csr.rows, csr.cols, 0.0);
  for (index_t i = 0; i < csr.rows; ++i)
    for (index_t p = csr.indptr[i]; p < csr.indptr[i + 1]; ++p) dense(i, csr.indices[p]) = csr.values[p];
  for (const Algorithm algo : {Algorithm::hals, Algorithm::bpp})
    for (const bool w_first : {false, true}) {
      FactorOptions o = extrapolated(algo, 5, 25);
      o.w_first = w_first;
      const auto from_csr = factorize<double>(sparse.matrix(), o);
      const auto from_dense = factorize<double>(dense.view(), o);
      const std::string what = to_string(algo) + (w_first ? " w_first" : "");
      EXPECT_LE(test::max_relative_difference(from_csr.W, from_dense.W), 1e-9) << what;
      EXPECT_LE(test::max_relative_difference(from_csr.H, from_dense.H), 1e-9) << what;
      EXPECT_EQ(from_csr.extrapolation_restarts, from_dense.extrapolation_restarts) << what;
    }
}

int iterations_to(const std::vector<double>& history, double target) {
  for (std::size_t t = 0; t < history.size(); ++t)
    if (history[t] <= target) return static_cast<int>(t + 1);
  return 1 << 30;
}

// Counts with power-law row and column sums, as a term-document matrix has: the kind of problem on which the
// alternating iteration crawls and extrapolation pays (docs/benchmarks.md, time to solution).
CsrMatrix<double> text_like(index_t m, index_t n, index_t draws, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto power_law = [&](index_t count, double exponent) {
    std::vector<double> cumulative(to_size(count));
    double sum = 0;
    for (index_t i = 0; i < count; ++i) cumulative[to_size(i)] = sum += std::pow(static_cast<double>(i + 1), -exponent);
    return [cumulative, sum, &rng]() {
      const double u = std::uniform_real_distribution<double>(0, sum)(rng);
      return static_cast<index_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    };
  };
  auto row = power_law(m, 0.8);
  auto col = power_law(n, 1.1);
  DenseMatrix<double> counts(m, n, 0.0);
  for (index_t d = 0; d < draws; ++d) {
    const index_t i = std::min(row(), m - 1);
    const index_t j = std::min(col(), n - 1);
    counts(i, j) += 1;
  }
  return test::to_csr(counts);
}

// BPP solves each half exactly, so the steps are all that changes: on this matrix they cut the iterations to
// 1.001x the plain iteration's final error by half or more in either update order (32-33 against 93-151 when
// written). HALS gains on some problems and loses on others (docs/algorithms.md), so only BPP is held to a count.
TEST(Extrapolation, BppNeedsFewerIterationsWhereTheIterationCrawls) {
  const CsrMatrix<double> a = text_like(600, 400, 40000, 8);
  for (const bool w_first : {false, true}) {
    FactorOptions o = extrapolated(Algorithm::bpp, 8, 300);
    o.w_first = w_first;
    o.extrapolate = false;
    const auto plain = factorize<double>(a.view(), o);
    o.extrapolate = true;
    const auto fast = factorize<double>(a.view(), o);
    const double target = 1.001 * plain.rel_error_history.back();
    const int plain_needs = iterations_to(plain.rel_error_history, target);
    const int fast_needs = iterations_to(fast.rel_error_history, target);
    EXPECT_LT(2 * fast_needs, plain_needs)
        << "w_first=" << w_first << ", " << fast.extrapolation_restarts << " restarts";
    for (double v : fast.W.storage()) ASSERT_TRUE(std::isfinite(v) && v >= 0);
    for (double v : fast.H.storage()) ASSERT_TRUE(std::isfinite(v) && v >= 0);
  }
}

// A helper session's finding: float32 BPP on a planted matrix with one entry of 1e8 among entries near 1 (the
// data of `dnmf gen --rows 60 --cols 40 --rank 4 --noise 0.01`, entry (43, 6) set) returned W = H = 0 with exit 0
// when extrapolated: the float identity read the error as 0, β grew to 1 with no rise seen, and a step zeroed the
// factors, a fixed point. The step is now dropped, and the fit ends where the plain iteration's does; the float64
// fit of the same data reverts nothing.
TEST(Extrapolation, AStepThatZeroesTheFactorsIsDropped) {
  auto p = make_planted<double>({.rows = 60, .cols = 40, .rank = 4, .density = 1.0, .noise = 0.01, .seed = 1});
  p.dense(43, 6) = 1e8;
  DenseMatrix<float> a(60, 40);
  for (std::size_t q = 0; q < a.storage().size(); ++q) a.storage()[q] = static_cast<float>(p.dense.storage()[q]);
  FactorOptions o = extrapolated(Algorithm::bpp, 4, 60);
  o.seed = 9;
  const auto fast = factorize<float>(MatrixRef<float>{a.view()}, o);
  EXPECT_GE(fast.extrapolation_reverts, 1);
  // A reverted iteration repeats the kept figures, which is no convergence: with tol > 0 the fit had stopped
  // there, "converged".
  o.tol = 1e-9;
  const auto with_tol = factorize<float>(MatrixRef<float>{a.view()}, o);
  EXPECT_LT(with_tol.rel_error, 1e-5) << with_tol.iterations << " iterations";
  o.tol = 0;
  o.extrapolate = false;
  const auto plain = factorize<float>(MatrixRef<float>{a.view()}, o);
  EXPECT_LT(fast.rel_error, 1e-5) << fast.extrapolation_reverts << " reverts";
  EXPECT_LT(fast.rel_error, 10 * plain.rel_error + 1e-6);
  for (const double e : fast.rel_error_history) EXPECT_LT(e, 0.5);  // no iteration reports the vanished pair
  o.extrapolate = true;
  const auto f64 = factorize<double>(p.matrix(), o);
  EXPECT_EQ(f64.extrapolation_reverts, 0);
  EXPECT_LT(f64.rel_error, 1e-6);
}

// Two clamped-zero objectives are no convergence (a review's finding): an extrapolated iteration's change is the
// objectives' difference, and a float32 BPP fit whose identity read 0 (one entry of 1e7 among entries near 1)
// stopped "converged" at iteration 2 with error 2.8e-5, where 60 iterations reach 2e-6.
TEST(Extrapolation, ClampedZeroObjectivesDoNotStopTheFit) {
  std::mt19937_64 g(21);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 1);
  DenseMatrix<double> w(60, 4), h(4, 40);
  for (double& v : w.storage()) v = u(g) < 0.5 ? 0 : u(g);
  for (double& v : h.storage()) v = u(g) < 0.5 ? 0 : u(g);
  DenseMatrix<float> a(60, 40);
  for (index_t i = 0; i < 60; ++i)
    for (index_t j = 0; j < 40; ++j) {
      double s = 0;
      for (index_t l = 0; l < 4; ++l) s += w(i, l) * h(l, j);
      a(i, j) = static_cast<float>(std::max(0.0, s * (1 + 0.01 * noise(g))));
    }
  a(43, 6) = 1e7f;
  FactorOptions o = extrapolated(Algorithm::bpp, 4, 60);
  o.seed = 21;
  o.tol = 1e-4;
  const auto r = factorize<float>(MatrixRef<float>{a.view()}, o);
  EXPECT_LT(r.rel_error, 1e-5) << r.iterations << " iterations, converged " << r.converged;
}

TEST(Extrapolation, RefusedWhereItDoesNotApply) {
  const DenseMatrix<double> a = test::random_dense<double>(12, 9, 1);
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
    try {
      (void)factorize<double>(a.view(), extrapolated(algo, 2, 5));
      FAIL() << to_string(algo) << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("hals and bpp"), std::string::npos) << e.what();
    }
  }
  FactorOptions o = extrapolated(Algorithm::hals, 2, 5);
  o.missing.nan_missing = true;
  try {
    (void)factorize<double>(a.view(), o);
    FAIL() << "missing values accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing values"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dnmf
