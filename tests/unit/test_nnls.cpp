// Tests for nnls_bpp against an independent Lawson-Hanson reference, KKT conditions and adversarial data.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/nnls.hpp"
#include "solvers/cholesky.hpp"
#include "solvers/nnls_buffers.hpp"
#include "solvers/passive_lanes.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

using dnmf::DenseView;
using dnmf::index_t;
using dnmf::NnlsOptions;
using dnmf::NnlsStats;
using Vec = std::vector<double>;

// A batch of NNLS problems sharing G: column-major k x k G and k x n B, in double.
struct Problem {
  int k = 0;
  int n = 0;
  Vec g;
  Vec b;
  const double* col(int j) const { return b.data() + dnmf::to_size(j) * k; }
};

Vec gaussian(std::mt19937_64& rng, std::size_t count) {
  std::normal_distribution<double> dist;
  Vec v(count);
  for (double& x : v) x = dist(rng);
  return v;
}

// G = C'C for an m x k column-major C.
Vec gram(const Vec& c, int m, int k) {
  Vec g(dnmf::to_size(k) * k, 0.0);
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < k; ++i) {
      double s = 0;
      for (int r = 0; r < m; ++r) s += c[r + dnmf::to_size(i) * m] * c[r + dnmf::to_size(j) * m];
      g[i + dnmf::to_size(j) * k] = s;
    }
  }
  return g;
}

// B = C' Cc for an m x n right-hand side matrix Cc.
Vec project(const Vec& c, int m, int k, const Vec& rhs, int n) {
  Vec b(dnmf::to_size(k) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < k; ++i) {
      double s = 0;
      for (int r = 0; r < m; ++r) s += c[r + dnmf::to_size(i) * m] * rhs[r + dnmf::to_size(j) * m];
      b[i + dnmf::to_size(j) * k] = s;
    }
  }
  return b;
}

// Well-conditioned G from a tall Gaussian C. Columns of B mix three kinds: C'c for random c (mixed signs),
// all-negative (answer zero) and all-positive; column scales vary over six decades.
Problem random_problem(int k, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int m = 2 * k + 10;
  const Vec c = gaussian(rng, dnmf::to_size(m) * k);
  Problem p;
  p.k = k;
  p.n = n;
  p.g = gram(c, m, k);
  p.b = project(c, m, k, gaussian(rng, dnmf::to_size(m) * n), n);
  std::uniform_real_distribution<double> expo(-3, 3);
  for (int j = 0; j < n; ++j) {
    double* bj = p.b.data() + dnmf::to_size(j) * k;
    const double scale = std::pow(10.0, expo(rng));
    for (int i = 0; i < k; ++i) {
      if (j % 7 == 3) {
        bj[i] = -std::abs(bj[i]);
      } else if (j % 11 == 5) {
        bj[i] = std::abs(bj[i]);
      }
      bj[i] *= scale;
    }
  }
  return p;
}

// ---- Independent reference: Lawson-Hanson active set on the normal equations -------------------------------

// Solves G_PP z_P = b_P by Gaussian elimination with partial pivoting; z is zero off P.
Vec solve_passive(const Vec& g, const double* b, int k, const std::vector<char>& passive) {
  std::vector<int> idx;
  for (int i = 0; i < k; ++i) {
    if (passive[i]) idx.push_back(i);
  }
  const int m = static_cast<int>(idx.size());
  Vec a(dnmf::to_size(m) * (m + 1));  // row-major augmented matrix
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < m; ++c) a[r * (m + 1) + c] = g[idx[r] + dnmf::to_size(idx[c]) * k];
    a[r * (m + 1) + m] = b[idx[r]];
  }
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int r = c + 1; r < m; ++r) {
      if (std::abs(a[r * (m + 1) + c]) > std::abs(a[piv * (m + 1) + c])) piv = r;
    }
    for (int q = 0; q <= m; ++q) std::swap(a[c * (m + 1) + q], a[piv * (m + 1) + q]);
    for (int r = c + 1; r < m; ++r) {
      const double f = a[r * (m + 1) + c] / a[c * (m + 1) + c];
      for (int q = c; q <= m; ++q) a[r * (m + 1) + q] -= f * a[c * (m + 1) + q];
    }
  }
  Vec z(k, 0.0);
  for (int r = m - 1; r >= 0; --r) {
    double s = a[r * (m + 1) + m];
    for (int q = r + 1; q < m; ++q) s -= a[r * (m + 1) + q] * z[idx[q]];
    z[idx[r]] = s / a[r * (m + 1) + r];
  }
  return z;
}

Vec lawson_hanson(const Vec& g, const double* b, int k) {
  Vec x(k, 0.0);
  std::vector<char> passive(k, 0), blocked(k, 0);
  double bmax = 0, gmax = 0;
  for (int i = 0; i < k; ++i) bmax = std::max(bmax, std::abs(b[i]));
  for (double v : g) gmax = std::max(gmax, std::abs(v));
  for (int outer = 0; outer < 10 * k + 10; ++outer) {
    double xmax = 0;
    for (double v : x) xmax = std::max(xmax, v);
    const double tol = 1e-13 * (bmax + k * gmax * xmax);
    int best = -1;
    double best_w = tol;
    for (int i = 0; i < k; ++i) {
      if (passive[i] || blocked[i]) continue;
      double w = b[i];
      for (int q = 0; q < k; ++q) w -= g[i + dnmf::to_size(q) * k] * x[q];
      if (w > best_w) {
        best_w = w;
        best = i;
      }
    }
    if (best < 0) break;
    passive[best] = 1;
    for (int inner = 0; inner < 3 * k + 3; ++inner) {
      const Vec z = solve_passive(g, b, k, passive);
      if (inner == 0 && !(z[best] > 0)) {
        // Rounding made the entering variable useless (a dependent column); keep it out for good.
        passive[best] = 0;
        blocked[best] = 1;
        break;
      }
      bool all_positive = true;
      double alpha = 1;
      for (int i = 0; i < k; ++i) {
        if (passive[i] && !(z[i] > 0)) {
          all_positive = false;
          alpha = std::min(alpha, x[i] / (x[i] - z[i]));
        }
      }
      if (all_positive) {
        x = z;
        break;
      }
      for (int i = 0; i < k; ++i) {
        x[i] += alpha * (z[i] - x[i]);
        if (passive[i] && x[i] <= 0) {
          passive[i] = 0;
          x[i] = 0;
        }
      }
    }
    std::fill(blocked.begin(), blocked.end(), 0);
  }
  return x;
}

// ---- Checks ------------------------------------------------------------------------------------------------

template <class X>
double objective(const Vec& g, const double* b, const X* x, int k) {
  double f = 0;
  for (int i = 0; i < k; ++i) {
    double gx = 0;
    for (int q = 0; q < k; ++q) gx += g[i + dnmf::to_size(q) * k] * x[q];
    f += 0.5 * x[i] * gx - b[i] * x[i];
  }
  return f;
}

// KKT conditions of min 0.5 x'Gx - b'x, x >= 0: x >= 0, gradient Gx - b >= 0, x_i (Gx - b)_i = 0, with
// tolerances relative to ||G|| ||x|| + ||b||.
template <class X>
testing::AssertionResult kkt(const Vec& g, const double* b, const X* x, int k, double tol) {
  double gmax = 0, xmax = 0, bmax = 0;
  for (double v : g) gmax = std::max(gmax, std::abs(v));
  for (int i = 0; i < k; ++i) {
    if (!std::isfinite(x[i]) || x[i] < 0) {
      return testing::AssertionFailure() << "x[" << i << "] = " << x[i] << " is not finite and >= 0";
    }
    xmax = std::max(xmax, static_cast<double>(x[i]));
    bmax = std::max(bmax, std::abs(b[i]));
  }
  const double scale = k * gmax * xmax + bmax;
  for (int i = 0; i < k; ++i) {
    double grad = -b[i];
    for (int q = 0; q < k; ++q) grad += g[i + dnmf::to_size(q) * k] * x[q];
    if (grad < -tol * scale) {
      return testing::AssertionFailure() << "gradient[" << i << "] = " << grad << " < -" << tol * scale;
    }
    if (std::abs(x[i] * grad) > tol * scale * xmax) {
      return testing::AssertionFailure() << "complementarity x[" << i << "] * gradient = " << x[i] * grad;
    }
  }
  return testing::AssertionSuccess();
}

// ||x - ref||_inf <= tol * (||ref||_inf + ||b||_inf / ||G||_max); the second term covers ref = 0.
template <class X>
testing::AssertionResult close_to(const Vec& g, const double* b, const X* x, const Vec& ref, double tol) {
  const int k = static_cast<int>(ref.size());
  double rmax = 0, bmax = 0, gmax = 0, err = 0;
  for (double v : g) gmax = std::max(gmax, std::abs(v));
  for (int i = 0; i < k; ++i) {
    rmax = std::max(rmax, std::abs(ref[i]));
    bmax = std::max(bmax, std::abs(b[i]));
    err = std::max(err, std::abs(x[i] - ref[i]));
  }
  const double bound = tol * (rmax + bmax / gmax);
  if (err <= bound) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "max error " << err << " > " << bound;
}

// Runs nnls_bpp on p in precision T; x (k x n) is the warm start on entry and the answer on exit.
template <class T>
NnlsStats run(const Problem& p, std::vector<T>& x, const NnlsOptions& options = {}) {
  const std::vector<T> g(p.g.begin(), p.g.end());
  const std::vector<T> b(p.b.begin(), p.b.end());
  x.resize(p.b.size(), T(0));
  return dnmf::nnls_bpp<T>(DenseView<const T>(g.data(), p.k, p.k), DenseView<const T>(b.data(), p.k, p.n),
                           DenseView<T>(x.data(), p.k, p.n), options);
}

template <class T>
void expect_all_kkt(const Problem& p, const std::vector<T>& x, double tol) {
  for (int j = 0; j < p.n; ++j) {
    EXPECT_TRUE(kkt(p.g, p.col(j), x.data() + dnmf::to_size(j) * p.k, p.k, tol)) << "column " << j;
  }
}

// Finite, non-negative, and objective within tol of the reference's (normalised by the size of the terms).
template <class T>
void expect_no_worse(const Problem& p, const std::vector<T>& x, double tol) {
  for (int j = 0; j < p.n; ++j) {
    const T* xj = x.data() + dnmf::to_size(j) * p.k;
    for (int i = 0; i < p.k; ++i) {
      ASSERT_TRUE(std::isfinite(xj[i]) && xj[i] >= 0) << "x(" << i << ", " << j << ") = " << xj[i];
    }
    const Vec ref = lawson_hanson(p.g, p.col(j), p.k);
    const double f_ref = std::min(0.0, objective(p.g, p.col(j), ref.data(), p.k));
    const double f = objective(p.g, p.col(j), xj, p.k);
    EXPECT_LE(f, f_ref + tol * std::abs(f_ref) + 1e-300) << "column " << j;
  }
}

// ---- Random well-conditioned problems -----------------------------------------------------------------------

class NnlsRandom : public testing::TestWithParam<int> {};

TEST_P(NnlsRandom, MatchesLawsonHansonDouble) {
  const int k = GetParam();
  const Problem p = random_problem(k, 300, 1000 + k);
  // The default (lane solves up to k = 32, the inverse above) and, without lanes, the inverse for every k: the
  // independent reference checks the answers of every path.
  NnlsOptions no_lanes;
  no_lanes.lane_solves = false;
  for (const bool lanes : {true, false}) {
    SCOPED_TRACE(lanes ? "default" : "without lane solves");
    std::vector<double> x;
    const NnlsStats stats = run(p, x, lanes ? NnlsOptions{} : no_lanes);
    EXPECT_EQ(stats.columns, 300);
    EXPECT_EQ(stats.rounds_cap_hits, 0);
    EXPECT_EQ(stats.nonfinite_zeroed, 0);
    EXPECT_EQ(stats.dead_variables, 0);
    if (lanes && k <= 32) {
      // k <= 2 has too few distinct sets for a group under four columns
      if (k > 2) {
        EXPECT_GT(stats.lane_columns, 0);
      }
      EXPECT_EQ(stats.inverse_groups, 0);
    } else {
      EXPECT_EQ(stats.lane_columns, 0);
      EXPECT_GT(stats.inverse_groups, 0);
    }
    for (int j = 0; j < p.n; ++j) {
      const Vec ref = lawson_hanson(p.g, p.col(j), k);
      EXPECT_TRUE(close_to(p.g, p.col(j), x.data() + dnmf::to_size(j) * k, ref, 1e-8)) << "column " << j;
    }
    expect_all_kkt(p, x, 1e-10);
    // Columns with all-negative B must come back exactly zero: nothing ever enters the passive set.
    for (int j = 3; j < p.n; j += 7) {
      for (int i = 0; i < k; ++i) EXPECT_EQ(x[i + dnmf::to_size(j) * k], 0.0);
    }
  }
}

TEST_P(NnlsRandom, MatchesLawsonHansonFloat) {
  const int k = GetParam();
  const Problem p = random_problem(k, 300, 2000 + k);
  std::vector<float> x;
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.rounds_cap_hits, 0);
  for (int j = 0; j < p.n; ++j) {
    const Vec ref = lawson_hanson(p.g, p.col(j), k);
    EXPECT_TRUE(close_to(p.g, p.col(j), x.data() + dnmf::to_size(j) * k, ref, 1e-4)) << "column " << j;
  }
  expect_all_kkt(p, x, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NnlsRandom, testing::Values(1, 2, 5, 16, 40, 70),
                         [](const testing::TestParamInfo<int>& param) { return "k" + std::to_string(param.param); });

// ---- Passive sets solved through G's inverse (NnlsOptions::use_inverse) -------------------------------------

class NnlsInverse : public testing::TestWithParam<int> {};

// Solves p from a cold start (several rounds, sets growing from empty) and from a warm start a few flips away
// from the answer, with every set factorised and with `options`: the answers must agree to rounding (1e-11 of
// each column's largest entry) and satisfy the optimality conditions. Returns the stats of the `options` runs,
// cold then warm.
std::vector<NnlsStats> agree_with_factorised(const Problem& p, const NnlsOptions& options, std::uint64_t seed) {
  const int k = p.k;
  NnlsOptions factorised;
  factorised.use_inverse = false;
  factorised.lane_solves = false;
  std::vector<double> reference;
  run(p, reference, factorised);
  std::vector<double> warm = reference;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, 5);
  for (double& v : warm) {
    const int what = pick(rng);
    if (what == 0) v = 0;
    if (what == 1) v += 1;
  }
  std::vector<NnlsStats> stats;
  for (const bool cold : {true, false}) {
    SCOPED_TRACE(cold ? "cold start" : "warm start");
    std::vector<double> start = cold ? std::vector<double>(reference.size(), 0.0) : warm;
    std::vector<double> by_factor = start, other = start;
    const NnlsStats fs = run(p, by_factor, factorised);
    EXPECT_EQ(fs.inverse_groups, 0);
    EXPECT_EQ(fs.lane_columns, 0);
    stats.push_back(run(p, other, options));
    EXPECT_EQ(stats.back().rounds_cap_hits, 0);
    EXPECT_EQ(stats.back().nonfinite_zeroed, 0);
    for (int j = 0; j < p.n; ++j) {
      const double* f = by_factor.data() + dnmf::to_size(j) * k;
      const double* x = other.data() + dnmf::to_size(j) * k;
      double scale = 0;
      for (int i = 0; i < k; ++i) scale = std::max(scale, std::abs(f[i]));
      for (int i = 0; i < k; ++i) EXPECT_NEAR(x[i], f[i], 1e-11 * scale) << "column " << j << ", row " << i;
    }
    expect_all_kkt(p, other, 1e-10);
  }
  return stats;
}

// Through the inverse (lane solves off), the same answers as every set factorised, and the inverse was in use.
// k = 3, 7 and 33 leave padding rows in the inverse's lanes.
TEST_P(NnlsInverse, AgreesWithFactorisedSets) {
  const int k = GetParam();
  NnlsOptions inverse;
  inverse.lane_solves = false;
  for (const NnlsStats& stats : agree_with_factorised(random_problem(k, 300, 3000 + k), inverse, k))
    EXPECT_GT(stats.inverse_groups, 0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NnlsInverse, testing::Values(1, 3, 7, 16, 33, 40),
                         [](const testing::TestParamInfo<int>& param) { return "k" + std::to_string(param.param); });

// ---- Columns solved in SIMD lanes (NnlsOptions::lane_solves, solvers/passive_lanes.hpp) --------------------

class NnlsLanes : public testing::TestWithParam<int> {};

// In lanes (the default), the same answers as every set factorised, with the lanes in use. k = 3 and 7 leave
// padding rows; 31 and 32 are the largest orders lanes take; 33 takes none.
TEST_P(NnlsLanes, AgreeWithFactorisedSets) {
  const int k = GetParam();
  for (const NnlsStats& stats : agree_with_factorised(random_problem(k, 300, 5000 + k), NnlsOptions{}, k)) {
    if (k <= 32) {
      EXPECT_GT(stats.lane_columns, 0);
    } else {
      EXPECT_EQ(stats.lane_columns, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, NnlsLanes, testing::Values(3, 7, 16, 31, 32, 33),
                         [](const testing::TestParamInfo<int>& param) { return "k" + std::to_string(param.param); });

// A column's answer must not depend on the columns it shares a call (and so its lane batches) with: the same
// columns solved all together, the even ones alone, and in reverse order give the same bits.
TEST(NnlsLanes, AnswerDoesNotDependOnTheOtherColumns) {
  const int k = 16;
  Problem p = random_problem(k, 120, 61);
  std::vector<double> all;
  const NnlsStats stats = run(p, all);
  EXPECT_GT(stats.lane_columns, 0);
  const auto columns = [&](const std::vector<int>& which) {
    Problem q = p;
    q.n = static_cast<int>(which.size());
    q.b.clear();
    for (const int j : which) q.b.insert(q.b.end(), p.col(j), p.col(j) + k);
    std::vector<double> x;
    run(q, x);
    return x;
  };
  std::vector<int> even, reversed;
  for (int j = 0; j < p.n; j += 2) even.push_back(j);
  for (int j = p.n - 1; j >= 0; --j) reversed.push_back(j);
  for (const std::vector<int>* which : {&even, &reversed}) {
    const std::vector<double> x = columns(*which);
    for (std::size_t c = 0; c < which->size(); ++c) {
      const auto j = dnmf::to_size((*which)[c]);
      for (int i = 0; i < k; ++i) EXPECT_EQ(x[c * k + dnmf::to_size(i)], all[j * k + dnmf::to_size(i)]) << j;
    }
  }
}

// The lane kernel alone: four systems of orders 5, 1, 3 and 0 (padded with the identity to order 5) against
// Gaussian elimination, one lane at a time; a lane whose matrix is indefinite is reported and leaves the others'
// answers as they are, to the bit.
TEST(PassiveLanes, SolvesEachLaneAndReportsFailedPivots) {
  using dnmf::solvers::ColumnLanes;
  using dnmf::solvers::kColumnLanes;
  std::mt19937_64 rng(8);
  const int m = 5;
  const int orders[kColumnLanes] = {5, 1, 3, 0};
  std::vector<Vec> g(kColumnLanes), b(kColumnLanes);
  for (int u = 0; u < kColumnLanes; ++u) {
    const int mu = orders[u];
    const int rows = 2 * mu + 3;
    const Vec c = gaussian(rng, dnmf::to_size(rows) * mu);
    g[u] = gram(c, rows, mu);
    b[u] = gaussian(rng, dnmf::to_size(mu));
  }
  // The library's vector code assumes the lanes' natural alignment (32 bytes), which this file, built without
  // the library's vector instructions, does not give a std::vector of them: the work array is aligned by hand.
  const auto solve = [&](const std::vector<Vec>& gl, std::vector<double>& storage) {
    const std::size_t count = dnmf::to_size(dnmf::solvers::passive_lanes_work(m));
    storage.assign(count * kColumnLanes + 8, 0.0);
    void* start = storage.data();
    std::size_t space = storage.size() * sizeof(double);
    auto* work = static_cast<ColumnLanes*>(std::align(64, count * sizeof(ColumnLanes), start, space));
    const dnmf::solvers::PassiveLanesSystem sys(m, work);
    const index_t mp = dnmf::solvers::passive_lanes_ld(m);
    for (int u = 0; u < kColumnLanes; ++u) {
      const int mu = orders[u];
      for (int c = 0; c < m; ++c) {
        for (index_t r = c; r < mp; ++r) {
          const bool in = r < mu;
          sys.a[r + c * mp][u] =
              in ? gl[u][dnmf::to_size(r) + dnmf::to_size(c) * dnmf::to_size(mu)] : (r == c ? 1.0 : 0.0);
        }
        sys.min_pivot[c][u] = c < mu ? 1e-12 : 0.0;
        sys.x[c][u] = c < mu ? b[u][dnmf::to_size(c)] : 0.0;
      }
    }
    return std::make_pair(dnmf::solvers::solve_passive_lanes(sys), sys.x);
  };
  std::vector<double> work;
  const auto [failed, x] = solve(g, work);
  std::vector<ColumnLanes> answers(x, x + m);
  for (int u = 0; u < kColumnLanes; ++u) {
    EXPECT_EQ((failed >> u) & 1U, 0U) << "lane " << u;
    const int mu = orders[u];
    const Vec ref = solve_passive(g[u], b[u].data(), mu, std::vector<char>(dnmf::to_size(mu), 1));
    double scale = 0;
    for (int r = 0; r < mu; ++r) scale = std::max(scale, std::abs(ref[dnmf::to_size(r)]));
    for (int r = 0; r < mu; ++r) EXPECT_NEAR(answers[dnmf::to_size(r)][u], ref[dnmf::to_size(r)], 1e-12 * scale);
    for (int r = mu; r < m; ++r) EXPECT_EQ(answers[dnmf::to_size(r)][u], 0.0) << "padding row " << r;
  }
  std::vector<Vec> broken = g;
  broken[2][dnmf::to_size(2 + 2 * 3)] = -1.0;  // lane 2's last pivot goes negative
  std::vector<double> work2;
  const auto [failed2, x2] = solve(broken, work2);
  for (int u = 0; u < kColumnLanes; ++u) {
    EXPECT_EQ(((failed2 >> u) & 1U) != 0, u == 2) << "lane " << u;
    if (u == 2) continue;
    for (int r = 0; r < m; ++r) EXPECT_EQ(x2[r][u], answers[dnmf::to_size(r)][u]) << "lane " << u << ", row " << r;
  }
}

TEST(Nnls, GroupsShareFactorisations) {
  // Identical right-hand sides share a passive set in every round, so they cost one factorisation.
  Problem p = random_problem(12, 1, 7);
  p.n = 200;
  p.b.resize(dnmf::to_size(p.k) * p.n);
  for (int j = 1; j < p.n; ++j) std::copy(p.b.begin(), p.b.begin() + p.k, p.b.begin() + j * p.k);
  std::vector<double> x;
  const NnlsStats stats = run(p, x);
  EXPECT_LE(stats.groups, stats.rounds);
  for (int j = 1; j < p.n; ++j) {
    for (int i = 0; i < p.k; ++i) EXPECT_EQ(x[i + dnmf::to_size(j) * p.k], x[i]);
  }
}

TEST(Nnls, ResultDoesNotDependOnThreadCount) {
  const Problem p = random_problem(24, 400, 11);
  std::vector<double> many, one;
  run(p, many);
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  run(p, one);
  omp_set_num_threads(saved);
#else
  run(p, one);
#endif
  EXPECT_EQ(many, one);
}

TEST(Nnls, SingleColumnSolvesEqualTheBatchToTheBit) {
  // A single column takes its first passive set's factor from the leading block of the shift-level
  // factorisation (passive variables ordered first); a batch factorises each group's set afresh. Both are the
  // same operations, so the answers must agree bit for bit, whatever the warm start: empty, full, or a subset
  // that the pivoting has to change. Reused buffers (the masked solver's calls) must not carry anything over.
  // The batch factorises every set here (use_inverse and lane_solves off); through the inverse or in lanes it
  // agrees to rounding (NnlsInverse, NnlsLanes).
  const Problem p = random_problem(16, 60, 41);
  NnlsOptions factorised;
  factorised.use_inverse = false;
  factorised.lane_solves = false;
  std::vector<double> solved;
  run(p, solved);
  std::vector<double> start = solved;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> pick(0, 3);
  for (std::size_t e = 0; e < start.size(); ++e) {
    const int what = pick(rng);
    if (what == 0) start[e] = 0;     // drops a variable from the passive set
    if (what == 1) start[e] += 0.5;  // adds one (or keeps it)
  }
  const std::ptrdiff_t k = p.k;
  std::fill(start.begin(), start.begin() + k, 0.0);          // column 0: empty passive set
  std::fill(start.begin() + k, start.begin() + 2 * k, 1.0);  // column 1: every variable passive
  // Columns 2..9 start at their solutions: their first passive set is the answer's, so one round must do, and
  // only a correct reused factor gets there (a wrong one would need more rounds to reach the same bits).
  const int exact = 10;
  std::copy(solved.begin() + 2 * k, solved.begin() + exact * k, start.begin() + 2 * k);
  std::vector<double> batch = start;
  const NnlsStats batch_stats = run(p, batch, factorised);
  ASSERT_EQ(batch_stats.shift_retries, 0);
  EXPECT_EQ(batch_stats.inverse_groups, 0);
  EXPECT_GT(batch_stats.rounds, 1);  // some warm starts were wrong, so later rounds ran too
  NnlsOptions inverse;
  inverse.lane_solves = false;
  std::vector<double> by_inverse = start, in_lanes = start;
  const NnlsStats inverse_stats = run(p, by_inverse, inverse);
  EXPECT_GT(inverse_stats.inverse_groups, 0);
  for (std::size_t e = 0; e < batch.size(); ++e) EXPECT_NEAR(by_inverse[e], batch[e], 1e-12 * (1 + batch[e])) << e;
  const NnlsStats lane_stats = run(p, in_lanes);
  EXPECT_GT(lane_stats.lane_columns, 0);
  for (std::size_t e = 0; e < batch.size(); ++e) EXPECT_NEAR(in_lanes[e], batch[e], 1e-12 * (1 + batch[e])) << e;
  dnmf::NnlsBuffers buffers;
  std::vector<double> single = start;
  for (int j = 0; j < p.n; ++j) {
    const std::size_t at = dnmf::to_size(j) * p.k;
    const NnlsStats stats = dnmf::nnls_bpp<double>(
        DenseView<const double>(p.g.data(), p.k, p.k), DenseView<const double>(p.b.data() + at, p.k, 1),
        DenseView<double>(single.data() + at, p.k, 1), NnlsOptions{}, buffers);
    ASSERT_EQ(stats.shift_retries, 0) << "column " << j;
    if (j >= 2 && j < exact) {
      EXPECT_EQ(stats.rounds, 1) << "column " << j;
    }
  }
  EXPECT_EQ(single, batch);
}

TEST(Nnls, ColumnsSolvedInFoursEqualSingleColumnSolvesToTheBit) {
  // Columns with one support share their passive set, so a batch solves their triangular systems four at a time
  // (a group of two or three padded), where each column alone takes the one-column path. Every column has its
  // own values, so lanes mixed up or padding leaking in would show; the groups of 9, 2, 3 and 1 columns cover
  // full fours, a tail of one, padded groups and the one-column path inside a batch.
  Problem p = random_problem(12, 1, 3);
  const int k = p.k;
  const std::vector<std::vector<int>> supports = {
      {0, 2, 3, 5, 7, 8, 11}, {1, 4, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {9}};
  const std::vector<int> counts = {9, 2, 3, 1};
  p.n = 15;
  p.b.assign(dnmf::to_size(k) * p.n, 0.0);
  std::vector<double> truth(p.b.size(), 0.0);
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> value(0.5, 2.0), slack(0.1, 1.0);
  int j = 0;
  for (std::size_t s = 0; s < supports.size(); ++s)
    for (int c = 0; c < counts[s]; ++c, ++j) {
      double* xj = truth.data() + dnmf::to_size(j) * k;
      double* bj = p.b.data() + dnmf::to_size(j) * k;
      std::vector<char> in(dnmf::to_size(k), 0);
      for (const int i : supports[s]) {
        xj[i] = value(rng);
        in[dnmf::to_size(i)] = 1;
      }
      for (int i = 0; i < k; ++i) {
        for (int l = 0; l < k; ++l) bj[i] += p.g[dnmf::to_size(i + l * k)] * xj[l];
        if (!in[dnmf::to_size(i)]) bj[i] -= slack(rng);  // a positive gradient keeps x_i at zero
      }
    }
  std::vector<double> batch = truth;  // warm started at the answer: the first round's groups are the supports
  NnlsOptions factorised;             // the fours are the factorised path's (the inverse and lanes have their own)
  factorised.use_inverse = false;
  factorised.lane_solves = false;
  const NnlsStats batch_stats = run(p, batch, factorised);
  EXPECT_EQ(batch_stats.groups, static_cast<dnmf::index_t>(supports.size()));
  for (std::size_t e = 0; e < truth.size(); ++e) {
    EXPECT_NEAR(batch[e], truth[e], 1e-9 * (1 + truth[e])) << e;
  }
  dnmf::NnlsBuffers buffers;
  std::vector<double> single = truth;
  for (int c = 0; c < p.n; ++c) {
    const std::size_t at = dnmf::to_size(c) * k;
    (void)dnmf::nnls_bpp<double>(DenseView<const double>(p.g.data(), k, k),
                                 DenseView<const double>(p.b.data() + at, k, 1),
                                 DenseView<double>(single.data() + at, k, 1), NnlsOptions{}, buffers);
  }
  EXPECT_EQ(single, batch);
}

// ---- Adversarial G ------------------------------------------------------------------------------------------

// G and B from an explicit m x k C and random c, so that B lies in the range of G as it does in NMF.
Problem from_factor(const Vec& c, int m, int k, int n, std::mt19937_64& rng) {
  Problem p;
  p.k = k;
  p.n = n;
  p.g = gram(c, m, k);
  p.b = project(c, m, k, gaussian(rng, dnmf::to_size(m) * n), n);
  return p;
}

// Two nearly equal columns of C make G's condition number ~1e9, past the bound: every set is factorised, so
// the answer is the factorised one to the bit, and it still satisfies the optimality conditions.
TEST(NnlsInverse, IllConditionedGramIsFactorised) {
  std::mt19937_64 rng(17);
  const int m = 40, k = 8, n = 200;
  Vec c = gaussian(rng, dnmf::to_size(m) * k);
  const Vec noise = gaussian(rng, dnmf::to_size(m));
  for (int r = 0; r < m; ++r) c[r + dnmf::to_size(1) * m] = c[r] + 1e-4 * noise[dnmf::to_size(r)];
  const Problem p = from_factor(c, m, k, n, rng);
  NnlsOptions factorised, inverse;
  factorised.use_inverse = false;
  factorised.lane_solves = false;
  inverse.lane_solves = false;
  std::vector<double> by_factor, by_default;
  run(p, by_factor, factorised);
  const NnlsStats stats = run(p, by_default, inverse);
  EXPECT_EQ(stats.inverse_groups, 0);
  EXPECT_EQ(by_default, by_factor);
  expect_all_kkt(p, by_default, 1e-8);
}

TEST(NnlsAdversarial, RankDeficient) {
  std::mt19937_64 rng(21);
  const int m = 30, k = 20, r = 5;
  const Vec u = gaussian(rng, dnmf::to_size(m) * r);
  const Vec v = gaussian(rng, dnmf::to_size(r) * k);
  Vec c(dnmf::to_size(m) * k, 0.0);
  for (int j = 0; j < k; ++j) {
    for (int q = 0; q < r; ++q) {
      for (int i = 0; i < m; ++i) c[i + j * m] += u[i + q * m] * v[q + j * r];
    }
  }
  const Problem p = from_factor(c, m, k, 150, rng);
  std::vector<double> x;
  NnlsStats stats;
  EXPECT_NO_THROW(stats = run(p, x));
  EXPECT_EQ(stats.rounds_cap_hits, 0);
  expect_no_worse(p, x, 1e-8);
  expect_all_kkt(p, x, 1e-8);
  // In float, rounding leaves G indefinite on its 15-dimensional null space; a shift that changed from group
  // to group would make the pivoting wander into the round cap here.
  std::vector<float> xf;
  EXPECT_NO_THROW(stats = run(p, xf));
  EXPECT_EQ(stats.rounds_cap_hits, 0);
  EXPECT_LE(stats.rounds, 20);
  expect_no_worse(p, xf, 1e-4);
}

TEST(NnlsAdversarial, ZeroRowsAndColumns) {
  std::mt19937_64 rng(22);
  const int m = 40, k = 12;
  Vec c = gaussian(rng, dnmf::to_size(m) * k);
  for (int j : {0, 5, 11}) std::fill(c.begin() + j * m, c.begin() + (j + 1) * m, 0.0);
  Problem p = from_factor(c, m, k, 100, rng);
  std::vector<double> x;
  NnlsOptions inverse;
  inverse.lane_solves = false;
  const NnlsStats by_inverse = run(p, x, inverse);
  EXPECT_EQ(by_inverse.dead_variables, 3);
  EXPECT_GT(by_inverse.inverse_groups, 0);  // the inverse covers the live variables only
  expect_no_worse(p, x, 1e-8);
  expect_all_kkt(p, x, 1e-10);
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.dead_variables, 3);
  EXPECT_GT(stats.lane_columns, 0);  // dead variables are never passive in a lane
  expect_no_worse(p, x, 1e-8);
  expect_all_kkt(p, x, 1e-10);

  // With positive B on a zero row the problem is unbounded in that variable; the solver pins it to zero.
  for (int j = 0; j < p.n; ++j) p.b[5 + dnmf::to_size(j) * k] = 1.0;
  run(p, x);
  for (int j = 0; j < p.n; ++j) {
    EXPECT_EQ(x[5 + dnmf::to_size(j) * k], 0.0);
    for (int i = 0; i < k; ++i) EXPECT_TRUE(std::isfinite(x[i + dnmf::to_size(j) * k]));
  }
}

TEST(NnlsAdversarial, DuplicateColumns) {
  std::mt19937_64 rng(23);
  const int m = 25, k = 10;
  Vec c = gaussian(rng, dnmf::to_size(m) * k);
  for (int i = 0; i < m; ++i) {
    c[i + 3 * m] = c[i + 1 * m];        // exact copy
    c[i + 7 * m] = 2.0 * c[i + 2 * m];  // scaled copy
    c[i + 9 * m] = c[i + 1 * m];        // a third copy of the same column
  }
  const Problem p = from_factor(c, m, k, 200, rng);
  std::vector<double> x;
  EXPECT_NO_THROW(run(p, x));
  expect_no_worse(p, x, 1e-8);
  expect_all_kkt(p, x, 1e-8);
  std::vector<float> xf;
  EXPECT_NO_THROW(run(p, xf));
  expect_no_worse(p, xf, 1e-4);
}

TEST(NnlsAdversarial, BadlyScaledDiagonal) {
  // G' = D G D and B' = D B have the solution D^-1 x; D spans 1e-4..1e4 so G's diagonal spans 1e-8..1e8.
  const Problem p = random_problem(16, 120, 24);
  std::mt19937_64 rng(25);
  std::uniform_real_distribution<double> expo(-4, 4);
  Vec d(p.k);
  for (double& v : d) v = std::pow(10.0, expo(rng));
  d[0] = 1e-4;
  d[1] = 1e4;
  Problem q = p;
  for (int j = 0; j < p.k; ++j) {
    for (int i = 0; i < p.k; ++i) q.g[i + j * p.k] *= d[i] * d[j];
  }
  for (int j = 0; j < p.n; ++j) {
    for (int i = 0; i < p.k; ++i) q.b[i + dnmf::to_size(j) * p.k] *= d[i];
  }
  std::vector<double> x, xs;
  run(p, x);
  const NnlsStats stats = run(q, xs);
  EXPECT_EQ(stats.dead_variables, 0);
  for (int j = 0; j < p.n; ++j) {
    Vec back(p.k);
    for (int i = 0; i < p.k; ++i) back[i] = xs[i + dnmf::to_size(j) * p.k] * d[i];
    EXPECT_TRUE(close_to(p.g, p.col(j), back.data(), Vec(x.begin() + j * p.k, x.begin() + (j + 1) * p.k), 1e-8))
        << "column " << j;
  }
  expect_no_worse(q, xs, 1e-8);
}

TEST(NnlsAdversarial, ZeroGram) {
  Problem p = random_problem(8, 50, 26);
  std::fill(p.g.begin(), p.g.end(), 0.0);
  std::vector<double> x(p.b.size(), 3.0);  // a warm start that would make everything passive
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.dead_variables, 8);
  EXPECT_EQ(stats.groups, 0);
  for (double v : x) EXPECT_EQ(v, 0.0);
  std::vector<float> xf;
  run(p, xf);
  for (float v : xf) EXPECT_EQ(v, 0.0f);
}

TEST(NnlsAdversarial, TinyDiagonalRelativeToOthersIsDead) {
  // A column of C a factor 1e-17 smaller than the rest is below double rounding: its variable is pinned.
  Problem p = random_problem(6, 20, 27);
  for (int i = 0; i < p.k; ++i) {
    p.g[i + 2 * p.k] *= 1e-17;
    p.g[2 + i * p.k] *= 1e-17;
  }
  std::vector<double> x;
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.dead_variables, 1);
  for (int j = 0; j < p.n; ++j) EXPECT_EQ(x[2 + dnmf::to_size(j) * p.k], 0.0);
  for (double v : x) EXPECT_TRUE(std::isfinite(v) && v >= 0);
}

TEST(NnlsAdversarial, OverflowingSolutionIsZeroed) {
  // G = 1e-37 I and b = 100 give x = 1e39, beyond float's range; double holds it.
  Problem p;
  p.k = 3;
  p.n = 4;
  p.g = {1e-37, 0, 0, 0, 1e-37, 0, 0, 0, 1e-37};
  p.b.assign(12, 100.0);
  std::vector<float> xf;
  const NnlsStats stats = run(p, xf);
  EXPECT_EQ(stats.nonfinite_zeroed, 4);
  for (float v : xf) EXPECT_EQ(v, 0.0f);
  std::vector<double> x;
  EXPECT_EQ(run(p, x).nonfinite_zeroed, 0);
  for (double v : x) EXPECT_NEAR(v, 1e39, 1e28);
}

TEST(NnlsAdversarial, IndefiniteGramStaysFinite) {
  // Not PSD: the shift retries run out and the affected columns fall back to zero instead of failing.
  Problem p;
  p.k = 2;
  p.n = 3;
  p.g = {1, 3, 3, 1};
  p.b = {1, 1, 1, -1, -1, 1};
  std::vector<double> x;
  NnlsStats stats;
  EXPECT_NO_THROW(stats = run(p, x));
  EXPECT_GT(stats.shift_retries, 0);
  for (double v : x) EXPECT_TRUE(std::isfinite(v) && v >= 0);
}

TEST(NnlsAdversarial, FloatRoundingIndefinitenessIsAbsorbedByShift) {
  // Nearly parallel columns: rounding G to float leaves it slightly indefinite, which the shift retries absorb.
  std::mt19937_64 rng(28);
  const int m = 30, k = 6;
  Vec c = gaussian(rng, dnmf::to_size(m) * k);
  const Vec e = gaussian(rng, m);
  for (int i = 0; i < m; ++i) c[i + 4 * m] = c[i] + 1e-5 * e[i];
  Problem p = from_factor(c, m, k, 100, rng);
  for (double& v : p.b) v = std::abs(v);  // pushes both near-copies into the passive set
  std::vector<float> x;
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.nonfinite_zeroed, 0);
  expect_no_worse(p, x, 1e-3);

  // The extreme case, a duplicated column whose off-diagonal rounded up by one ulp: the shift has to grow past
  // 1.2e-7 before the pair factorises, and the answer is then the even split.
  const float up = 1.0f + std::numeric_limits<float>::epsilon();
  const std::vector<float> g = {1.0f, up, up, 1.0f};
  const std::vector<float> b = {1.0f, 1.0f};
  std::vector<float> xs(2, 0.0f);
  const NnlsStats pair =
      dnmf::nnls_bpp<float>(DenseView<const float>(g.data(), 2, 2), DenseView<const float>(b.data(), 2, 1),
                            DenseView<float>(xs.data(), 2, 1));
  EXPECT_GE(pair.shift_retries, 3);
  EXPECT_GT(pair.shift, 1.2e-7);
  EXPECT_NEAR(xs[0], 0.5f, 1e-5f);
  EXPECT_NEAR(xs[1], 0.5f, 1e-5f);
}

// ---- Warm starts --------------------------------------------------------------------------------------------

TEST(NnlsWarmStart, FromSolutionTakesOneRound) {
  const Problem p = random_problem(16, 250, 31);
  std::vector<double> x;
  const NnlsStats cold = run(p, x);
  EXPECT_GT(cold.rounds, 1);
  std::vector<double> again = x;
  const NnlsStats warm = run(p, again);
  EXPECT_LE(warm.rounds, 1);
  EXPECT_EQ(warm.backup_rule_uses, 0);
  for (int j = 0; j < p.n; ++j) {
    const Vec ref(x.begin() + j * p.k, x.begin() + (j + 1) * p.k);
    EXPECT_TRUE(close_to(p.g, p.col(j), again.data() + dnmf::to_size(j) * p.k, ref, 1e-12));
  }
}

TEST(NnlsWarmStart, BadWarmStartGivesSameAnswer) {
  const Problem p = random_problem(20, 200, 32);
  std::vector<double> cold;
  run(p, cold);
  std::mt19937_64 rng(33);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> all_passive(p.b.size(), 1.0);
  std::vector<double> random(p.b.size());
  for (double& v : random) v = u(rng);
  random[0] = std::numeric_limits<double>::quiet_NaN();  // garbage in the warm start is just "not passive"
  for (std::vector<double>* warm : {&all_passive, &random}) {
    run(p, *warm);
    for (int j = 0; j < p.n; ++j) {
      const Vec ref(cold.begin() + j * p.k, cold.begin() + (j + 1) * p.k);
      EXPECT_TRUE(close_to(p.g, p.col(j), warm->data() + dnmf::to_size(j) * p.k, ref, 1e-10));
    }
  }
}

// ---- Degenerate problems and the round cap ------------------------------------------------------------------

TEST(NnlsDegenerate, CyclingProneTerminates) {
  // b = G x* with x* sparse and small-integer data: at the optimum every index off the support has a zero
  // gradient (dual degenerate), and ties in G make full exchanges prone to revisiting passive sets.
  std::mt19937_64 rng(41);
  std::uniform_int_distribution<int> small(-2, 2);
  index_t backups = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 3 + trial % 6;
    const int m = k + 1;
    Vec c(dnmf::to_size(m) * k);
    for (double& v : c) v = small(rng);
    Problem p;
    p.k = k;
    p.n = 4;
    p.g = gram(c, m, k);
    p.b.assign(dnmf::to_size(k) * p.n, 0.0);
    for (int j = 0; j < p.n; ++j) {
      Vec xs(k);
      for (double& v : xs) v = std::max(0, small(rng));
      for (int i = 0; i < k; ++i) {
        for (int q = 0; q < k; ++q) p.b[i + dnmf::to_size(j) * k] += p.g[i + q * k] * xs[q];
      }
      if (j == 3) {
        for (int i = 0; i < k; ++i) p.b[i + dnmf::to_size(j) * k] -= small(rng) == 0 ? 1 : 0;
      }
    }
    std::vector<double> x(p.b.size(), 0.0);
    for (std::size_t i = 0; i < x.size(); i += 2) x[i] = 1;  // an arbitrary warm start
    NnlsStats stats;
    ASSERT_NO_THROW(stats = run(p, x));
    EXPECT_EQ(stats.rounds_cap_hits, 0) << "trial " << trial;
    backups += stats.backup_rule_uses;
    expect_all_kkt(p, x, 1e-9);
    expect_no_worse(p, x, 1e-9);
  }
  RecordProperty("backup_rule_uses", static_cast<int>(backups));
}

TEST(NnlsDegenerate, BackupRuleBreaksCycle) {
  // Small integer problems (G = C'C, C 4 x 4 with entries in -4..4) found by search, where from the given warm
  // start the full exchange stops reducing the infeasible set and only the single-index rule makes progress.
  struct Case {
    Vec g, b, warm;
  };
  const std::vector<Case> cases = {
      {{37, -25, 25, -1, -25, 27, -10, -8, 25, -10, 27, -20, -1, -8, -20, 42}, {-3, 4, 1, -3}, {1, 1, 0, 0}},
      {{33, -23, 25, 15, -23, 20, -14, -11, 25, -14, 34, 1, 15, -11, 1, 15}, {-4, 4, -4, 0}, {1, 0, 1, 1}},
      {{30, 28, -8, -18, 28, 35, -8, -29, -8, -8, 11, 2, -18, -29, 2, 29}, {-2, 1, 4, -4}, {0, 0, 1, 0}},
  };
  for (const Case& c : cases) {
    Problem p;
    p.k = 4;
    p.n = 1;
    p.g = c.g;
    p.b = c.b;
    std::vector<double> x = c.warm;
    const NnlsStats stats = run(p, x);
    EXPECT_GT(stats.backup_rule_uses, 0);
    EXPECT_EQ(stats.rounds_cap_hits, 0);
    EXPECT_TRUE(kkt(p.g, p.col(0), x.data(), p.k, 1e-12));
    EXPECT_TRUE(close_to(p.g, p.col(0), x.data(), lawson_hanson(p.g, p.col(0), p.k), 1e-10));
  }
}

TEST(NnlsDegenerate, RoundCapFallsBackToExactSolve) {
  // One round leaves most columns unfinished; the Lawson-Hanson fallback must still give the exact answer.
  const Problem p = random_problem(40, 100, 42);
  NnlsOptions options;
  options.max_rounds = 1;
  std::vector<double> x;
  const NnlsStats stats = run(p, x, options);
  EXPECT_EQ(stats.rounds, 1);
  EXPECT_GT(stats.rounds_cap_hits, 50);
  for (int j = 0; j < p.n; ++j) {
    const Vec ref = lawson_hanson(p.g, p.col(j), p.k);
    EXPECT_TRUE(close_to(p.g, p.col(j), x.data() + dnmf::to_size(j) * p.k, ref, 1e-8)) << "column " << j;
  }
  expect_all_kkt(p, x, 1e-10);
}

TEST(NnlsDegenerate, OverfactoredScaledDuplicatedReachesOptimum) {
  // What NMF with k above the true rank can produce: C of rank 30 with 70 columns, column norms spread over six
  // decades, some zero and some duplicated columns. Pivoting stalls on such problems (seen in fuzzing: thousands
  // of backup-rule rounds), so this exercises the default cap and the fallback on realistic data.
  std::mt19937_64 rng(61);
  const int m = 45, k = 70, r = 30, n = 60;
  const Vec u = gaussian(rng, dnmf::to_size(m) * r);
  const Vec v = gaussian(rng, dnmf::to_size(r) * k);
  Vec c(dnmf::to_size(m) * k, 0.0);
  for (int j = 0; j < k; ++j) {
    for (int q = 0; q < r; ++q) {
      for (int i = 0; i < m; ++i) c[i + j * m] += std::abs(u[i + q * m]) * v[q + j * r];
    }
  }
  std::uniform_real_distribution<double> uni(0, 1);
  for (int j = 0; j < k; ++j) {
    double scale = std::pow(10.0, 6 * uni(rng) - 3);
    if (j % 10 == 9) scale = 0;
    for (int i = 0; i < m; ++i) c[i + j * m] *= scale;
    if (j % 10 == 4) std::copy(c.begin() + (j - 1) * m, c.begin() + j * m, c.begin() + j * m);
  }
  const Problem p = from_factor(c, m, k, n, rng);
  std::vector<double> x;
  const NnlsStats stats = run(p, x);
  EXPECT_EQ(stats.dead_variables, 7);
  EXPECT_GT(stats.rounds_cap_hits, 0);
  EXPECT_LE(stats.rounds, k / 2 + 20);
  expect_all_kkt(p, x, 1e-9);
  expect_no_worse(p, x, 1e-8);
}

// ---- Options, shapes, invalid input, layouts ----------------------------------------------------------------

TEST(NnlsInput, TikhonovIsARidgePenalty) {
  // With G = I and shift t the answer is max(b, 0) / (1 + t).
  Problem p;
  p.k = 3;
  p.n = 1;
  p.g = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  p.b = {2, -1, 4};
  NnlsOptions options;
  options.tikhonov = 1;
  std::vector<double> x;
  const NnlsStats stats = run(p, x, options);
  EXPECT_DOUBLE_EQ(stats.shift, 1.0);
  EXPECT_NEAR(x[0], 1.0, 1e-14);
  EXPECT_EQ(x[1], 0.0);
  EXPECT_NEAR(x[2], 2.0, 1e-14);
}

template <class F>
void expect_error(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no dnmf::Error thrown";
  } catch (const dnmf::Error& e) {
    const std::string what = e.what();
    for (const std::string& s : fragments) EXPECT_NE(what.find(s), std::string::npos) << what << " lacks " << s;
  }
}

TEST(NnlsInput, ShapeMismatchThrows) {
  Vec g(12, 0.0), b(12, 0.0), x(12, 0.0);
  using CV = DenseView<const double>;
  using V = DenseView<double>;
  expect_error([&] { dnmf::nnls_bpp<double>(CV(g.data(), 3, 4), CV(b.data(), 3, 4), V(x.data(), 3, 4)); },
               {"G is 3 x 4", "square"});
  expect_error([&] { dnmf::nnls_bpp<double>(CV(g.data(), 3, 3), CV(b.data(), 4, 3), V(x.data(), 4, 3)); },
               {"B is 4 x 3", "k = 3"});
  expect_error([&] { dnmf::nnls_bpp<double>(CV(g.data(), 3, 3), CV(b.data(), 3, 4), V(x.data(), 3, 3)); },
               {"X is 3 x 3", "B is 3 x 4"});
  expect_error([&] { dnmf::nnls_bpp<double>(CV(g.data(), 3, 3), CV(b.data(), 3, 4), V(x.data(), 2, 4)); },
               {"X is 2 x 4"});
  expect_error([&] { dnmf::nnls_bpp<double>(CV(g.data(), 3, 3, 2), CV(b.data(), 3, 4), V(x.data(), 3, 4)); },
               {"G", "leading dimension 2"});
}

TEST(NnlsInput, NonFiniteInputThrows) {
  const Problem p = random_problem(4, 5, 51);
  Problem bad = p;
  bad.g[1 + 2 * 4] = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x;
  expect_error([&] { run(bad, x); }, {"G", "NaN", "row 1, column 2"});
  bad = p;
  bad.b[3 + 4 * 4] = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { run(bad, x); }, {"B", "NaN", "row 3, column 4"});
  std::vector<float> xf;
  expect_error([&] { run(bad, xf); }, {"B", "NaN", "row 3, column 4"});
  bad = p;
  bad.b[0] = -std::numeric_limits<double>::infinity();
  expect_error([&] { run(bad, x); }, {"B", "infinite", "row 0, column 0"});
  // A B large enough to be counted in parallel first: the message still names the first bad entry in order.
  Problem wide = random_problem(4, 20000, 52);
  wide.b[2 + dnmf::to_size(19000) * 4] = std::numeric_limits<double>::infinity();
  wide.b[1 + dnmf::to_size(19500) * 4] = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { run(wide, x); }, {"B", "infinite", "row 2, column 19000"});
}

TEST(NnlsInput, BadOptionsThrow) {
  const Problem p = random_problem(3, 2, 52);
  std::vector<double> x;
  NnlsOptions options;
  options.max_rounds = -1;
  expect_error([&] { run(p, x, options); }, {"max_rounds"});
  options = {};
  options.tikhonov = -1;
  expect_error([&] { run(p, x, options); }, {"tikhonov"});
  options.tikhonov = std::numeric_limits<double>::infinity();
  expect_error([&] { run(p, x, options); }, {"tikhonov"});
}

TEST(NnlsInput, EmptyShapes) {
  Vec g(4, 1.0), b;
  std::vector<double> x;
  const NnlsStats none =
      dnmf::nnls_bpp<double>(DenseView<const double>(g.data(), 2, 2), DenseView<const double>(nullptr, 2, 0),
                             DenseView<double>(nullptr, 2, 0));
  EXPECT_EQ(none.columns, 0);
  const NnlsStats zero_k = dnmf::nnls_bpp<double>(
      DenseView<const double>(nullptr, 0, 0), DenseView<const double>(nullptr, 0, 5), DenseView<double>(nullptr, 0, 5));
  EXPECT_EQ(zero_k.columns, 5);
  EXPECT_EQ(zero_k.rounds, 0);
}

TEST(NnlsInput, StridedViews) {
  // Padded leading dimensions give the same answer and leave the padding alone.
  const Problem p = random_problem(7, 30, 53);
  std::vector<double> packed;
  run(p, packed);
  const int ld = p.k + 3;
  Vec g(dnmf::to_size(ld) * p.k, -5.0), b(dnmf::to_size(ld) * p.n, -5.0);
  std::vector<double> x(dnmf::to_size(ld) * p.n, 42.0);
  for (int j = 0; j < p.k; ++j) std::copy(p.g.begin() + j * p.k, p.g.begin() + (j + 1) * p.k, g.begin() + j * ld);
  for (int j = 0; j < p.n; ++j) {
    std::copy(p.b.begin() + j * p.k, p.b.begin() + (j + 1) * p.k, b.begin() + j * ld);
    for (int i = 0; i < p.k; ++i) x[i + dnmf::to_size(j) * ld] = 0.0;
  }
  dnmf::nnls_bpp<double>(DenseView<const double>(g.data(), p.k, p.k, ld),
                         DenseView<const double>(b.data(), p.k, p.n, ld), DenseView<double>(x.data(), p.k, p.n, ld));
  for (int j = 0; j < p.n; ++j) {
    for (int i = 0; i < ld; ++i) {
      const double v = x[i + dnmf::to_size(j) * ld];
      if (i < p.k) {
        EXPECT_EQ(v, packed[i + dnmf::to_size(j) * p.k]);
      } else {
        EXPECT_EQ(v, 42.0);
      }
    }
  }
}

// Buffers kept between calls (the masked solver keeps one per thread) hold the last call's inverse, shift level
// and arrays; nothing of them may carry over. Each call must give what a fresh call gives, to the bit and with
// the same counts: on a well-conditioned G (lane solves or, without them, the inverse in use), on a
// rank-deficient one with a dead variable
// (the inverse refused), with a single-column call in between, and after G changes in one bit.
TEST(Nnls, BuffersKeptAcrossCallsWithOneGramGiveFreshAnswers) {
  std::mt19937_64 rng(31);
  const int m = 30, k = 12, n = 40;
  Vec dup = gaussian(rng, dnmf::to_size(m) * k);
  for (int i = 0; i < m; ++i) {
    dup[i + 4 * m] = dup[i + 2 * m];
    dup[i + 6 * m] = 0.0;
  }
  const std::vector<Problem> problems = {random_problem(k, n, 77), from_factor(dup, m, k, n, rng)};
  for (std::size_t run_index = 0; run_index < 2 * problems.size(); ++run_index) {
    const std::size_t which = run_index % problems.size();
    const bool lanes = run_index < problems.size();
    SCOPED_TRACE(which == 0 ? "well conditioned" : "rank deficient, one dead variable");
    SCOPED_TRACE(lanes ? "lane solves" : "without lane solves");
    NnlsOptions options;
    options.lane_solves = lanes;
    Problem p = problems[which];
    dnmf::NnlsBuffers kept;
    const auto call = [&](const Problem& q, int first, int cols, dnmf::NnlsBuffers* buffers) {
      std::vector<double> x(dnmf::to_size(k) * cols, 0.0);
      const DenseView<const double> g(q.g.data(), k, k);
      const DenseView<const double> b(q.b.data() + dnmf::to_size(first) * k, k, cols);
      const DenseView<double> xv(x.data(), k, cols);
      const NnlsStats st = buffers != nullptr ? dnmf::nnls_bpp<double>(g, b, xv, options, *buffers)
                                              : dnmf::nnls_bpp<double>(g, b, xv, options);
      return std::make_pair(x, st);
    };
    const auto same = [](const std::pair<std::vector<double>, NnlsStats>& a,
                         const std::pair<std::vector<double>, NnlsStats>& b) {
      EXPECT_EQ(a.first, b.first);
      EXPECT_EQ(a.second.groups, b.second.groups);
      EXPECT_EQ(a.second.inverse_groups, b.second.inverse_groups);
      EXPECT_EQ(a.second.lane_columns, b.second.lane_columns);
      EXPECT_EQ(a.second.shift_retries, b.second.shift_retries);
      EXPECT_EQ(a.second.dead_variables, b.second.dead_variables);
      EXPECT_EQ(a.second.rounds, b.second.rounds);
    };
    for (const int first : {0, 10, 20, 30}) same(call(p, first, 10, &kept), call(p, first, 10, nullptr));
    same(call(p, 5, 1, &kept), call(p, 5, 1, nullptr));  // a single column re-equilibrates; the level is not kept
    same(call(p, 0, 10, &kept), call(p, 0, 10, nullptr));
    p.g[1] = std::nextafter(p.g[1], 1e300);  // G(1, 0) one bit up: the kept level no longer applies
    same(call(p, 0, 10, &kept), call(p, 0, 10, nullptr));
    const NnlsStats last = call(p, 0, 10, &kept).second;
    if (which == 0) {
      EXPECT_GT(lanes ? last.lane_columns : last.inverse_groups, 0);
    } else {
      EXPECT_EQ(last.dead_variables, 1);
    }
  }
}

// cholesky_small (solvers/cholesky.hpp: a column in registers, for m <= 16) against the plain column loop it
// replaces there: the same bits on SPD matrices of every order 1..16, with exact zeros in L (skipped updates), and
// the same return value and the same entries after a pivot fails part-way (an indefinite matrix).
TEST(SmallCholesky, SameBitsAndFailureStateAsTheColumnLoop) {
  std::mt19937_64 engine(20261203);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (index_t m = 1; m <= dnmf::solvers::kSmallCholesky; ++m)
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE("m " + std::to_string(m) + " variant " + std::to_string(variant));
      // B is m x (m + 2); A = B Bᵀ + I: SPD. Variant 1 zeroes A's first row and column off the diagonal (still
      // SPD), so that L's first column is zero below the pivot and the updates it would give are skipped;
      // variant 2 makes A indefinite at its last pivot.
      const index_t cols = m + 2;
      Vec b(static_cast<std::size_t>(m * cols));
      for (double& v : b) v = u(engine);
      Vec a(static_cast<std::size_t>(m * m), 0.0);
      for (index_t j = 0; j < m; ++j)
        for (index_t i = 0; i < m; ++i) {
          double s = i == j ? 1.0 : 0.0;
          for (index_t c = 0; c < cols; ++c)
            s += b[static_cast<std::size_t>(i + c * m)] * b[static_cast<std::size_t>(j + c * m)];
          a[static_cast<std::size_t>(i + j * m)] = s;
        }
      if (variant == 1)
        for (index_t i = 1; i < m; ++i) a[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(i * m)] = 0.0;
      if (variant == 2) a[static_cast<std::size_t>((m - 1) * (m + 1))] = -1.0;
      const Vec min_pivot(static_cast<std::size_t>(m), 1e-12);
      Vec plain = a, small = a;
      const bool plain_ok = dnmf::solvers::cholesky_columns(plain.data(), m, min_pivot.data());
      const bool small_ok = dnmf::solvers::cholesky_small(small.data(), m, min_pivot.data());
      EXPECT_EQ(plain_ok, variant != 2);
      EXPECT_EQ(small_ok, plain_ok);
      for (index_t j = 0; j < m; ++j)
        for (index_t i = j; i < m; ++i) {
          const auto e = static_cast<std::size_t>(i + j * m);
          EXPECT_EQ(std::signbit(small[e]), std::signbit(plain[e])) << i << "," << j;
          EXPECT_EQ(small[e], plain[e]) << i << "," << j;
        }
      if (variant == 0) {  // and it is a factorisation: L Lᵀ = A
        for (index_t j = 0; j < m; ++j)
          for (index_t i = j; i < m; ++i) {
            double s = 0;
            for (index_t p = 0; p <= j; ++p)
              s += small[static_cast<std::size_t>(i + p * m)] * small[static_cast<std::size_t>(j + p * m)];
            EXPECT_NEAR(s, a[static_cast<std::size_t>(i + j * m)],
                        1e-12 * (1 + std::abs(a[static_cast<std::size_t>(i + j * m)])));
          }
      }
    }
}

}  // namespace
