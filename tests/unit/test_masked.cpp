// Masked (weighted) NMF through factorize(): an independent float64 reference over the observed entries for every
// algorithm and storage form, masked entries ignored whatever their value, all-ones weights, planted recovery of
// missing entries, and the bad inputs (shape, weights, NaN, unobserved rows and columns).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/planted.hpp"
#include "dnmf/source.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "support/error_message.hpp"

namespace dnmf {
namespace {

using Mat = DenseMatrix<double>;

// A plain seeded engine, independent of the library's generator.
struct Uniform {
  explicit Uniform(std::uint64_t seed) : engine(seed) {}
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(engine); }
  std::mt19937_64 engine;
};

// ---- the reference: plain loops over the observed entries, written from the weighted objective ----

double model(const Mat& w, const Mat& h, index_t i, index_t j) {
  double s = 0;
  for (index_t l = 0; l < w.cols(); ++l) s += w(i, l) * h(l, j);
  return s;
}

// Exact NNLS min 0.5 xᵀGx - bᵀx, x >= 0 for small k: every passive set solved by Gaussian elimination, the
// best feasible solution kept (the problem is convex, so that is the minimum).
std::vector<double> exact_nnls(const std::vector<double>& g, const std::vector<double>& b, index_t k) {
  std::vector<double> best(k, 0.0);
  double best_value = 0;
  for (unsigned set = 1; set < (1u << k); ++set) {
    std::vector<index_t> p;
    for (index_t l = 0; l < k; ++l)
      if ((set >> l) & 1u) p.push_back(l);
    const auto s = static_cast<index_t>(p.size());
    std::vector<double> m(s * (s + 1));
    for (index_t r = 0; r < s; ++r) {
      for (index_t c = 0; c < s; ++c) m[r * (s + 1) + c] = g[p[r] + p[c] * k];
      m[r * (s + 1) + s] = b[p[r]];
    }
    bool singular = false;
    for (index_t c = 0; c < s && !singular; ++c) {
      index_t piv = c;
      for (index_t r = c + 1; r < s; ++r)
        if (std::abs(m[r * (s + 1) + c]) > std::abs(m[piv * (s + 1) + c])) piv = r;
      if (std::abs(m[piv * (s + 1) + c]) < 1e-300) singular = true;
      for (index_t q = 0; q <= s; ++q) std::swap(m[c * (s + 1) + q], m[piv * (s + 1) + q]);
      for (index_t r = 0; r < s && !singular; ++r) {
        if (r == c) continue;
        const double f = m[r * (s + 1) + c] / m[c * (s + 1) + c];
        for (index_t q = 0; q <= s; ++q) m[r * (s + 1) + q] -= f * m[c * (s + 1) + q];
      }
    }
    if (singular) continue;
    std::vector<double> x(k, 0.0);
    bool feasible = true;
    for (index_t r = 0; r < s; ++r) {
      x[p[r]] = m[r * (s + 1) + s] / m[r * (s + 1) + r];
      feasible &= x[p[r]] >= 0;
    }
    if (!feasible) continue;
    double value = 0;
    for (index_t r = 0; r < k; ++r) {
      value -= b[r] * x[r];
      for (index_t c = 0; c < k; ++c) value += 0.5 * x[r] * g[r + c * k] * x[c];
    }
    if (value < best_value) {
      best_value = value;
      best = x;
    }
  }
  return best;
}

// One half-step of the reference: every column j of x (k x cols) from y (k x rows), entries (i, j) of a and wt.
// `get(i, j)` returns {a, w} in the half's orientation.
template <class Get>
void reference_half(Algorithm algo, const Mat& y, Mat& x, index_t rows, Get get) {
  const index_t k = y.rows();
  const double eps = 1e-16;
  for (index_t j = 0; j < x.cols(); ++j) {
    std::vector<double> g(k * k, 0.0), b(k, 0.0), s(k, 0.0), ratio(k, 0.0);
    for (index_t i = 0; i < rows; ++i) {
      const auto [a, w] = get(i, j);
      if (w == 0) continue;
      double q = 0;
      for (index_t l = 0; l < k; ++l) q += y(l, i) * x(l, j);
      for (index_t l = 0; l < k; ++l) {
        b[l] += w * a * y(l, i);
        s[l] += w * y(l, i);
        if (a != 0) ratio[l] += w * a / q * y(l, i);
        for (index_t c = 0; c < k; ++c) g[l + c * k] += w * y(l, i) * y(c, i);
      }
    }
    if (algo == Algorithm::bpp) {
      const std::vector<double> sol = exact_nnls(g, b, k);
      for (index_t l = 0; l < k; ++l) x(l, j) = sol[l];
    } else if (algo == Algorithm::hals) {
      for (index_t l = 0; l < k; ++l) {
        if (!(g[l + l * k] > eps)) continue;
        double grad = b[l];
        for (index_t c = 0; c < k; ++c) grad -= g[l + c * k] * x(c, j);
        x(l, j) = std::max(0.0, x(l, j) + grad / g[l + l * k]);
      }
    } else {
      std::vector<double> next(k);
      for (index_t l = 0; l < k; ++l) {
        if (algo == Algorithm::kl) {
          next[l] = x(l, j) * ratio[l] / (s[l] + eps);
        } else {
          double den = eps;
          for (index_t c = 0; c < k; ++c) den += g[l + c * k] * x(c, j);
          next[l] = x(l, j) * b[l] / den;
        }
      }
      for (index_t l = 0; l < k; ++l) x(l, j) = next[l];
    }
  }
}

// Weighted NMF by the reference: H half then W half, `iters` times. a, weight: m x n (weight 0: missing).
void reference_run(Algorithm algo, const Mat& a, const Mat& weight, Mat& w, Mat& h, int iters) {
  const index_t m = a.rows(), n = a.cols(), k = w.cols();
  Mat wt(k, m);
  for (index_t i = 0; i < m; ++i)
    for (index_t l = 0; l < k; ++l) wt(l, i) = w(i, l);
  for (int it = 0; it < iters; ++it) {
    reference_half(algo, wt, h, m, [&](index_t i, index_t j) { return std::pair{a(i, j), weight(i, j)}; });
    reference_half(algo, h, wt, n, [&](index_t j, index_t i) { return std::pair{a(i, j), weight(i, j)}; });
  }
  for (index_t i = 0; i < m; ++i)
    for (index_t l = 0; l < k; ++l) w(i, l) = wt(l, i);
}

double max_rel_diff(const Mat& x, const Mat& y) {
  double diff = 0, scale = 0;
  for (std::size_t e = 0; e < x.storage().size(); ++e) {
    diff = std::max(diff, std::abs(x.storage()[e] - y.storage()[e]));
    scale = std::max(scale, std::abs(y.storage()[e]));
  }
  return diff / scale;
}

// ---- test data ----

struct Case {
  Mat a, weight;
  Mat w0, h0;
};

// A random positive m x n with weights: `missing` of the entries 0, a few 0.5 and 2, the rest 1.
Case make_case(index_t m, index_t n, index_t k, double missing, std::uint64_t seed) {
  Uniform rng(seed);
  Case c{Mat(m, n), Mat(m, n), Mat(m, k), Mat(k, n)};
  for (auto& v : c.a.storage()) v = 0.1 + rng.uniform();
  for (auto& v : c.weight.storage()) {
    const double u = rng.uniform();
    v = u < missing ? 0.0 : (u < missing + 0.05 ? 0.5 : (u < missing + 0.1 ? 2.0 : 1.0));
  }
  for (auto& v : c.w0.storage()) v = 0.1 + rng.uniform();
  for (auto& v : c.h0.storage()) v = 0.1 + rng.uniform();
  return c;
}

FactorOptions masked_options(Algorithm algo, index_t k, int iters, const Mat& weight) {
  FactorOptions o;
  o.rank = k;
  o.algorithm = algo;
  o.max_iterations = iters;
  o.tol = 0;
  o.init = InitMethod::given;
  o.normalize = false;
  o.missing.mask = Source::dense<double>(weight.view());
  return o;
}

// A case's observed entries as CSR (unstored = missing) and their weights as 0/1.
struct StoredEntries {
  explicit StoredEntries(const Case& c) : weight(c.a.rows(), c.a.cols(), 0.0), rows(c.a.rows()), cols(c.a.cols()) {
    for (index_t i = 0; i < rows; ++i) {
      for (index_t j = 0; j < cols; ++j)
        if (c.weight(i, j) > 0) {
          indices.push_back(static_cast<col_index_t>(j));
          values.push_back(c.a(i, j));
          weight(i, j) = 1.0;
        }
      indptr.push_back(static_cast<index_t>(values.size()));
    }
  }
  [[nodiscard]] CsrView<double> view() const { return {rows, cols, indptr.data(), indices.data(), values.data()}; }
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<double> values;
  Mat weight;
  index_t rows, cols;
};

const Algorithm kAll[] = {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp};

// Dense A, mostly weight 1 (the Gram corrections) and mostly missing (the Grams summed over observed entries).
// Ranks 3 and 8 and 16: the kernels' 4-wide lanes with and without a tail (listed_products.hpp).
TEST(Masked, DenseMatchesReferenceForEveryAlgorithm) {
  struct Shape {
    index_t m, n, k;
    double missing;
  };
  for (const Shape sh : {Shape{40, 30, 3, 0.2}, Shape{40, 30, 3, 0.6}, Shape{40, 30, 8, 0.2}, Shape{80, 60, 8, 0.6},
                         Shape{60, 50, 16, 0.2}}) {
    const double missing = sh.missing;
    for (const Algorithm algo : kAll) {
      if (algo == Algorithm::bpp && sh.k > 8) continue;  // the reference NNLS tries all 2^k passive sets
      SCOPED_TRACE(to_string(algo) + " missing " + std::to_string(missing) + " k " + std::to_string(sh.k));
      // Large enough that every row and column keeps more observed entries than k (else BPP's answer is not
      // unique and the comparison meaningless).
      const Case c = make_case(sh.m, sh.n, sh.k, missing, 11);
      const FactorOptions o = masked_options(algo, sh.k, 20, c.weight);
      const FactorResult<double> r = factorize<double>(c.a.view(), o, &c.w0, &c.h0);
      Mat w = c.w0, h = c.h0;
      reference_run(algo, c.a, c.weight, w, h, 20);
      EXPECT_LT(max_rel_diff(r.W, w), 1e-10);
      EXPECT_LT(max_rel_diff(r.H, h), 1e-10);
      EXPECT_TRUE(r.masked);
      index_t observed = 0;
      for (const double v : c.weight.storage()) observed += v > 0 ? 1 : 0;
      EXPECT_EQ(r.observed, observed);
      // The reported error is the weighted error over observed entries, computed here directly.
      double num = 0, den = 0;
      for (index_t j = 0; j < c.a.cols(); ++j)
        for (index_t i = 0; i < c.a.rows(); ++i) {
          const double wt = c.weight(i, j), res = c.a(i, j) - model(w, h, i, j);
          num += wt * res * res;
          den += wt * c.a(i, j) * c.a(i, j);
        }
      EXPECT_NEAR(r.rel_error, std::sqrt(num / den), 1e-9);
    }
  }
}

// Sparse A whose unstored entries are missing: the stored entries are the observed ones (weights from a mask).
TEST(Masked, SparseUnstoredMissingMatchesReference) {
  for (const index_t k : {3, 8})
    for (const Algorithm algo : kAll) {
      SCOPED_TRACE(to_string(algo) + " k " + std::to_string(k));
      const Case c = make_case(k == 3 ? 20 : 40, k == 3 ? 15 : 30, k, 0.4, 21);
      const StoredEntries stored(c);
      const Mat& weight = stored.weight;
      FactorOptions o = masked_options(algo, k, 20, weight);
      o.missing.mask.reset();
      o.missing.unstored = Unstored::missing;
      const FactorResult<double> r = factorize<double>(stored.view(), o, &c.w0, &c.h0);
      Mat w = c.w0, h = c.h0;
      reference_run(algo, c.a, weight, w, h, 20);
      EXPECT_LT(max_rel_diff(r.W, w), 1e-10);
      EXPECT_LT(max_rel_diff(r.H, h), 1e-10);
      EXPECT_EQ(r.observed, static_cast<index_t>(stored.values.size()));
    }
}

// Sparse A with --unstored missing and a weighted mask beside it: a stored entry takes the mask's weight, 0 where
// the mask has none, and a mask entry where A stores nothing observes nothing. The mask's weights are looked up
// in A's rows as the mask is read (a dense mask, and a sparse one with entries A does not store).
TEST(Masked, SparseUnstoredMissingWithAMaskTakesTheMasksWeights) {
  const Case c = make_case(30, 20, 4, 0.4, 23);
  const StoredEntries stored(c);
  Uniform rng(5);
  Mat mask(30, 20, 0.0), effective(30, 20, 0.0);
  for (index_t j = 0; j < 20; ++j)
    for (index_t i = 0; i < 30; ++i) {
      const double u = rng.uniform();
      mask(i, j) = u < 0.2 ? 0.0 : (u < 0.4 ? 2.5 : 1.0);
      effective(i, j) = stored.weight(i, j) * mask(i, j);
    }
  const StoredEntries mask_rows(Case{mask, mask, c.w0, c.h0});  // the mask's non-zero entries as a CSR
  for (const Algorithm algo : kAll) {
    SCOPED_TRACE(to_string(algo));
    Mat w = c.w0, h = c.h0;
    reference_run(algo, c.a, effective, w, h, 20);
    for (const bool sparse_mask : {false, true}) {
      FactorOptions o = masked_options(algo, 4, 20, mask);
      o.missing.unstored = Unstored::missing;
      if (sparse_mask) o.missing.mask = Source::csr<double>(mask_rows.view());
      const FactorResult<double> r = factorize<double>(stored.view(), o, &c.w0, &c.h0);
      EXPECT_LT(max_rel_diff(r.W, w), 1e-10) << sparse_mask;
      EXPECT_LT(max_rel_diff(r.H, h), 1e-10) << sparse_mask;
    }
  }
}

// Float runs the same rules: close to the float64 reference at float's precision.
TEST(Masked, FloatFollowsTheReference) {
  for (const index_t k : {3, 8})
    for (const Algorithm algo : kAll) {
      // At k = 8 on this random (not low-rank) matrix, float HALS leaves the float64 reference by more than
      // this tolerance within 5 steps, before and after the lane kernels alike (its step b_l - (G x)_l cancels to
      // a small part of b_l); rank 8's lanes are checked in float for the other rules and in double for all.
      if (algo == Algorithm::hals && k == 8) continue;
      SCOPED_TRACE(to_string(algo) + " k " + std::to_string(k));
      const index_t m = k == 3 ? 24 : 40, n = k == 3 ? 17 : 30;
      const Case c = make_case(m, n, k, 0.25, 31);
      DenseMatrix<float> a(m, n), weight(m, n), w0(m, k), h0(k, n);
      std::copy(c.a.storage().begin(), c.a.storage().end(), a.storage().begin());
      std::copy(c.weight.storage().begin(), c.weight.storage().end(), weight.storage().begin());
      std::copy(c.w0.storage().begin(), c.w0.storage().end(), w0.storage().begin());
      std::copy(c.h0.storage().begin(), c.h0.storage().end(), h0.storage().begin());
      FactorOptions o = masked_options(algo, k, 5, c.weight);
      o.missing.mask = Source::dense<float>(weight.view());
      const FactorResult<float> r = factorize<float>(a.view(), o, &w0, &h0);
      Mat w = c.w0, h = c.h0;
      reference_run(algo, c.a, c.weight, w, h, 5);
      Mat rw(m, k);
      std::copy(r.W.storage().begin(), r.W.storage().end(), rw.storage().begin());
      EXPECT_LT(max_rel_diff(rw, w), 2e-3);
    }
}

// HALS leaves a component alone where its weighted curvature is zero (no observed row has y_l > 0). With a 0/1
// mask the sweep forms it as F_ll minus the missing rows' share, two equal sums in different orders, and divided
// the residue (about 1e-13 F_ll) into one of the gradient: W(0, 1) moved from 0.3 to 2.3, or to 0.
TEST(Masked, HalsLeavesAComponentWithZeroObservedCurvatureAlone) {
  const index_t m = 30, n = 40, k = 2;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Uniform rng(seed);
    Mat a(m, n), weight(m, n, 1.0), w0(m, k), h0(k, n);
    for (double& v : a.storage()) v = 1.0 + rng.uniform();
    for (double& v : w0.storage()) v = 0.5 + rng.uniform();
    for (double& v : h0.storage()) v = 0.5 + rng.uniform();
    for (index_t j = n / 2; j < n; ++j) weight(0, j) = 0;  // row 0 observes only the first half of the columns,
    for (index_t j = 0; j < n / 2; ++j) h0(1, j) = 0;      // where component 1 of H is zero
    w0(0, 1) = 0.3;
    FactorOptions o = masked_options(Algorithm::hals, k, 1, weight);
    o.w_first = true;
    const FactorResult<double> r = factorize<double>(a.view(), o, &w0, &h0);
    EXPECT_EQ(r.W(0, 1), 0.3);
  }
}

// The zero-curvature rule must not freeze real curvatures that are merely small: a column whose weights are all
// 1e-11 has curvatures of 1e-11·F_ll (a first threshold of 1e-10·F_ll left it at its random start, residual 0.86).
TEST(Masked, HalsFitsAColumnOfTinyWeightsAsTheReferenceDoes) {
  const index_t m = 60, n = 45, k = 4;
  Case c = make_case(m, n, k, 0.1, 77);
  for (index_t i = 0; i < m; ++i) c.weight(i, 0) = 1e-11;
  const FactorOptions o = masked_options(Algorithm::hals, k, 20, c.weight);
  const FactorResult<double> r = factorize<double>(c.a.view(), o, &c.w0, &c.h0);
  Mat w = c.w0, h = c.h0;
  reference_run(Algorithm::hals, c.a, c.weight, w, h, 20);
  double diff = 0, scale = 0;
  for (index_t l = 0; l < k; ++l) {
    diff = std::max(diff, std::abs(r.H(l, 0) - h(l, 0)));
    scale = std::max(scale, std::abs(h(l, 0)));
  }
  EXPECT_LT(diff, 1e-4 * scale) << "column 0 of H";
  EXPECT_LT(max_rel_diff(r.W, w), 1e-6);
}

// float32 BPP with a 0/1 mask: G_j = F - (the missing rows' share) took F from a float product unless --tol was
// positive, so the iterates depended on tol, and where a column observes fewer entries than k (a singular G_j)
// F's rounding filled G_j's null space: the masked error rose from 8e-4 to 5e-2 in one exact NNLS step.
TEST(Masked, FloatBppDoesNotDependOnTolAndKeepsItsFit) {
  const index_t m = 9, n = 9, k = 8, rank = 5;
  Uniform rng(9009);
  Mat u(m, rank), v(rank, n);
  for (double& x : u.storage()) x = rng.uniform();
  for (double& x : v.storage()) x = rng.uniform();
  DenseMatrix<float> a(m, n), weight(m, n);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0.1 * rng.uniform();
      for (index_t l = 0; l < rank; ++l) s += u(i, l) * v(l, j);
      a(i, j) = static_cast<float>(s);
      weight(i, j) = rng.uniform() < 0.3 ? 0.0f : 1.0f;
    }
  const auto run = [&](double tol, int iters) {
    FactorOptions o;
    o.rank = k;
    o.algorithm = Algorithm::bpp;
    o.max_iterations = iters;
    o.tol = tol;
    o.missing.mask = Source::dense<float>(weight.view());
    return factorize<float>(a.view(), o);
  };
  for (const int iters : {3, 8, 32}) {
    const FactorResult<float> zero = run(0, iters), tiny = run(1e-300, iters);
    EXPECT_EQ(zero.W.storage(), tiny.W.storage()) << iters;
    EXPECT_EQ(zero.H.storage(), tiny.H.storage()) << iters;
    double err = 0, norm = 0;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        if (weight(i, j) == 0) continue;
        double s = 0;
        for (index_t l = 0; l < k; ++l) s += static_cast<double>(zero.W(i, l)) * static_cast<double>(zero.H(l, j));
        err += (a(i, j) - s) * (a(i, j) - s);
        norm += static_cast<double>(a(i, j)) * a(i, j);
      }
    // With F summed in double this data fits 2.8e-6 after 3 iterations; with the float F, 1.2e-4.
    EXPECT_LT(std::sqrt(err / norm), 2e-5) << iters << " iterations";
  }
}

// A zero-weight entry may hold anything, even a huge value, NaN or a negative number: nothing changes.
TEST(Masked, ZeroWeightEntriesAreIgnored) {
  for (const Algorithm algo : kAll) {
    SCOPED_TRACE(to_string(algo));
    const Case c = make_case(24, 17, 3, 0.2, 41);
    const FactorOptions o = masked_options(algo, 3, 20, c.weight);
    const FactorResult<double> base = factorize<double>(c.a.view(), o, &c.w0, &c.h0);
    for (const double odd : {1e300, -5.0, std::numeric_limits<double>::quiet_NaN()}) {
      Mat a = c.a;
      for (std::size_t e = 0; e < a.storage().size(); ++e)
        if (c.weight.storage()[e] == 0) a.storage()[e] = odd;
      const FactorResult<double> r = factorize<double>(a.view(), o, &c.w0, &c.h0);
      EXPECT_EQ(r.W.storage(), base.W.storage());
      EXPECT_EQ(r.H.storage(), base.H.storage());
      EXPECT_EQ(r.rel_error_history, base.rel_error_history);
    }
  }
}

// The masked iteration's guard scales with the observed entries as the unmasked one's does: data 1e-12 times as
// large is fitted to the same relative error, with the starting factors scaled by 1e-6 (MU, HALS, BPP; KL too,
// whose model floor of 1e-30 stays far below this).
TEST(Masked, ScaledDataGivesTheSameFit) {
  for (const Algorithm algo : kAll) {
    SCOPED_TRACE(to_string(algo));
    const Case c = make_case(24, 17, 3, 0.2, 43);
    const FactorOptions o = masked_options(algo, 3, 30, c.weight);
    const FactorResult<double> base = factorize<double>(c.a.view(), o, &c.w0, &c.h0);
    Mat a = c.a, w0 = c.w0, h0 = c.h0;
    for (double& v : a.storage()) v *= 1e-12;
    for (double& v : w0.storage()) v *= 1e-6;
    for (double& v : h0.storage()) v *= 1e-6;
    const FactorResult<double> r = factorize<double>(a.view(), o, &w0, &h0);
    EXPECT_NEAR(r.rel_error, base.rel_error, 1e-9 * base.rel_error);
    EXPECT_LT(r.rel_error, 0.5);
  }
}

// Weights of 1 everywhere are no mask: factorize() gives the unmasked run's results exactly, and the masked
// iteration itself (forced) agrees with it to rounding.
TEST(Masked, AllOnesWeightsReproduceTheUnmaskedRun) {
  for (const Algorithm algo : kAll) {
    SCOPED_TRACE(to_string(algo));
    const Case c = make_case(24, 17, 3, 0.0, 51);
    const Mat ones(24, 17, 1.0);
    FactorOptions o = masked_options(algo, 3, 20, ones);
    const FactorResult<double> masked = factorize<double>(c.a.view(), o, &c.w0, &c.h0);
    FactorOptions plain = o;
    plain.missing = MissingValues{};
    const FactorResult<double> unmasked = factorize<double>(c.a.view(), plain, &c.w0, &c.h0);
    EXPECT_EQ(masked.W.storage(), unmasked.W.storage());
    EXPECT_EQ(masked.H.storage(), unmasked.H.storage());
    EXPECT_EQ(masked.rel_error, unmasked.rel_error);

    const MatrixRef<double> a = DenseView<const double>(c.a.view());
    const MatrixRef<double> mask = DenseView<const double>(ones.view());
    const solvers::MaskedProblem<double> p =
        solvers::build_masked_problem<double>({&a, false, "A"}, {&mask, false, "M"}, o.missing);
    ASSERT_TRUE(p.all_unit);
    solvers::Factors<double> f;
    const FactorResult<double> forced = solvers::solve_masked<double>(p, o, f, &c.w0, &c.h0);
    Mat w(24, 3);
    for (index_t i = 0; i < 24; ++i)
      for (index_t l = 0; l < 3; ++l) w(i, l) = f.wt(l, i);
    EXPECT_LT(max_rel_diff(w, unmasked.W), 1e-10);
    EXPECT_LT(max_rel_diff(f.h, unmasked.H), 1e-10);
    EXPECT_NEAR(forced.rel_error, unmasked.rel_error, 1e-10);
  }
}

// Planted rank 8, 300 x 200, 30% of the entries missing at random: W·H fills them in within 2%.
TEST(Masked, PlantedRecoveryOfMissingEntries) {
  PlantedOptions po;
  po.rows = 300;
  po.cols = 200;
  po.rank = 8;
  po.seed = 3;
  const Planted<double> planted = make_planted<double>(po);
  Uniform rng(77);
  Mat weight(300, 200);
  for (auto& v : weight.storage()) v = rng.uniform() < 0.3 ? 0.0 : 1.0;
  for (const Algorithm algo : {Algorithm::bpp}) {
    SCOPED_TRACE(to_string(algo));
    FactorOptions o;
    o.rank = 8;
    o.algorithm = algo;
    o.max_iterations = 300;
    o.tol = 1e-12;
    o.seed = 2;
    o.missing.mask = Source::dense<double>(weight.view());
    const FactorResult<double> r = factorize<double>(planted.matrix(), o);
    double num = 0, den = 0;
    for (index_t j = 0; j < 200; ++j)
      for (index_t i = 0; i < 300; ++i) {
        if (weight(i, j) != 0) continue;
        const double truth = planted.dense(i, j), d = model(r.W, r.H, i, j) - truth;
        num += d * d;
        den += truth * truth;
      }
    EXPECT_LT(std::sqrt(num / den), 0.02);
    EXPECT_EQ(r.observed, static_cast<index_t>(std::count(weight.storage().begin(), weight.storage().end(), 1.0)));
  }
}

TEST(Masked, BadInputIsNamed) {
  const Case c = make_case(6, 5, 2, 0.2, 61);
  FactorOptions o;
  o.rank = 2;
  o.max_iterations = 3;
  const Mat other(5, 6, 1.0);
  o.missing.mask = Source::dense<double>(other.view());
  std::string msg = test::error_message([&] { factorize<double>(c.a.view(), o); });
  EXPECT_NE(msg.find("the mask is 5x6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("6x5"), std::string::npos) << msg;

  for (const double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Mat weight(6, 5, 1.0);
    weight(2, 3) = bad;
    o.missing.mask = Source::dense<double>(weight.view());
    msg = test::error_message([&] { factorize<double>(c.a.view(), o); });
    EXPECT_NE(msg.find("weight at row 2, column 3"), std::string::npos) << msg;
    EXPECT_THROW(factorize<double>(c.a.view(), o), DataError);
  }

  // NaN in A: an error naming --missing nan, unless NaN is declared missing.
  Mat a = c.a;
  a(1, 4) = std::numeric_limits<double>::quiet_NaN();
  o.missing = MissingValues{};
  o.missing.mask = Source::dense<double>(c.weight.view());
  Mat weight(6, 5, 1.0);
  weight(0, 0) = 0;
  o.missing.mask = Source::dense<double>(weight.view());
  msg = test::error_message([&] { factorize<double>(a.view(), o); });
  EXPECT_NE(msg.find("--missing nan"), std::string::npos) << msg;
  o.missing.nan_missing = true;
  const FactorResult<double> r = factorize<double>(a.view(), o);
  EXPECT_EQ(r.observed, 6 * 5 - 2);

  // TF32 products: the masked device runs in full float precision, and report.json said tf32 was on.
  FactorOptions tf32 = o;
  tf32.tf32 = true;
  msg = test::error_message([&] { factorize<double>(a.view(), tf32); });
  EXPECT_NE(msg.find("--tf32 is not available with missing values"), std::string::npos) << msg;

  // --unstored missing needs a sparse A.
  o.missing = MissingValues{};
  o.missing.unstored = Unstored::missing;
  EXPECT_THROW(factorize<double>(c.a.view(), o), UsageError);

  // Nothing observed.
  const Mat zeros(6, 5, 0.0);
  o.missing = MissingValues{};
  o.missing.mask = Source::dense<double>(zeros.view());
  msg = test::error_message([&] { factorize<double>(c.a.view(), o); });
  EXPECT_NE(msg.find("no entry is observed"), std::string::npos) << msg;
}

// A row and a column with no observed entry: their factor rows are zero (never NaN) and counted.
// sqrt(Σ w (a - WH)² / Σ w a²) over the observed entries, by plain loops (W: m x k, H: k x n).
double weighted_rel_error(const Mat& a, const Mat& weight, const Mat& w, const Mat& h) {
  double num = 0, den = 0;
  for (index_t j = 0; j < a.cols(); ++j)
    for (index_t i = 0; i < a.rows(); ++i) {
      const double res = a(i, j) - model(w, h, i, j);
      num += weight(i, j) * res * res;
      den += weight(i, j) * a(i, j) * a(i, j);
    }
  return std::sqrt(num / den);
}

// MU records iteration t's figures once the first half of t + 1 has formed them at its old factor
// (masked_iterate.cpp): each entry of the history must still be the error of the factors after that many
// iterations, and a run the stopping rule ends must return the factors of the iteration it stopped at, bit for
// bit those of a run of exactly that many iterations. Both update orders; dense with a mask and sparse with
// unstored entries missing.
TEST(Masked, MuHistoryAndStopAreThoseOfTheIterationRecorded) {
  const Case c = make_case(40, 30, 4, 0.2, 31);
  const StoredEntries stored(c);
  constexpr int kIters = 8;
  for (const bool sparse : {false, true})
    for (const bool w_first : {false, true}) {
      SCOPED_TRACE(std::string(sparse ? "sparse" : "dense") + (w_first ? ", w first" : ", h first"));
      const Mat& weight = sparse ? stored.weight : c.weight;
      FactorOptions o = masked_options(Algorithm::mu, 4, kIters, weight);
      o.w_first = w_first;
      if (sparse) {
        o.missing.mask.reset();
        o.missing.unstored = Unstored::missing;
      }
      const auto run = [&](int iters, double tol) {
        o.max_iterations = iters;
        o.tol = tol;
        return sparse ? factorize<double>(stored.view(), o, &c.w0, &c.h0)
                      : factorize<double>(c.a.view(), o, &c.w0, &c.h0);
      };
      const FactorResult<double> full = run(kIters, 0);
      ASSERT_EQ(full.rel_error_history.size(), static_cast<std::size_t>(kIters));
      for (int t = 1; t <= kIters; ++t) {
        const FactorResult<double> r = run(t, 0);
        EXPECT_NEAR(full.rel_error_history[to_size(t - 1)], weighted_rel_error(c.a, weight, r.W, r.H), 1e-12) << t;
      }
      // A tolerance the change at iteration 5 meets: the run stops there at the latest, three before its end.
      const std::vector<double>& obj = full.objective_history;
      const FactorResult<double> stopped = run(kIters, std::abs(obj[4] - obj[3]) / std::abs(obj[3]) * (1 + 1e-9));
      EXPECT_TRUE(stopped.converged);
      ASSERT_LE(stopped.iterations, 5);
      ASSERT_GE(stopped.iterations, 2);
      const FactorResult<double> plain = run(stopped.iterations, 0);
      EXPECT_TRUE(std::equal(stopped.W.storage().begin(), stopped.W.storage().end(), plain.W.storage().begin()));
      EXPECT_TRUE(std::equal(stopped.H.storage().begin(), stopped.H.storage().end(), plain.H.storage().begin()));
      ASSERT_EQ(stopped.rel_error_history.size(), plain.rel_error_history.size());
      for (std::size_t t = 0; t < plain.rel_error_history.size(); ++t)
        EXPECT_NEAR(stopped.rel_error_history[t], plain.rel_error_history[t], 1e-13);
      EXPECT_EQ(stopped.rel_error, plain.rel_error);
    }
}

TEST(Masked, UnobservedRowsAndColumnsGetZeroFactors) {
  for (const Algorithm algo : kAll) {
    SCOPED_TRACE(to_string(algo));
    const Case c = make_case(12, 9, 2, 0.1, 71);
    Mat weight = c.weight;
    for (index_t j = 0; j < 9; ++j) weight(4, j) = 0;
    for (index_t i = 0; i < 12; ++i) weight(i, 6) = 0;
    FactorOptions o;
    o.rank = 2;
    o.algorithm = algo;
    o.max_iterations = 30;
    o.missing.mask = Source::dense<double>(weight.view());
    const FactorResult<double> r = factorize<double>(c.a.view(), o);
    EXPECT_EQ(r.unobserved_rows, 1);
    EXPECT_EQ(r.unobserved_cols, 1);
    for (index_t l = 0; l < 2; ++l) {
      EXPECT_EQ(r.W(4, l), 0.0);
      EXPECT_EQ(r.H(l, 6), 0.0);
    }
    for (const double v : r.W.storage()) EXPECT_TRUE(std::isfinite(v));
    for (const double v : r.H.storage()) EXPECT_TRUE(std::isfinite(v));
    EXPECT_TRUE(std::isfinite(r.rel_error));
  }
}

}  // namespace
}  // namespace dnmf
