// The masked iteration's per-column kernels (src/solvers/listed_products.hpp) against plain float64 loops written
// here: MU's correction G_j x, the quadratic term, the sparse numerator, the weighted Gram matrix and HALS's sweep
// without G_j (listed_sweep.hpp), on ranks
// that fill the 4-wide lanes and ranks that leave a tail, list lengths that do and do not fill the blocks of four,
// coefficients of both signs, float and double rows. Also lanes.hpp's k x k times vector (gram_times) and its
// two-vector form, and the unmasked MU and HALS column rules that use them (mu_frobenius.hpp, hals.hpp) against
// plain loops, on column counts that fill their groups and counts that leave a partial group, and the AVX-512
// HALS and MU kernels against the 4-wide ones, bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "solvers/hals.hpp"
#include "solvers/lanes.hpp"
#include "solvers/listed_products.hpp"
#include "solvers/listed_sweep.hpp"
#include "solvers/mu_frobenius.hpp"

namespace dnmf::solvers {
namespace {

template <class T>
struct Lists {
  std::vector<T> yt, x, weighted;
  std::vector<index_t> row;
  std::vector<double> coef;
};

// k x rows factor, a column x, `count` listed rows (repeats allowed) after `offset` unused entries.
template <class T>
Lists<T> make_lists(index_t k, index_t rows, index_t offset, index_t count, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Lists<T> l;
  l.yt.resize(static_cast<std::size_t>(k * rows));
  for (T& v : l.yt) v = static_cast<T>(u(engine));
  l.x.resize(static_cast<std::size_t>(k));
  for (T& v : l.x) v = static_cast<T>(u(engine));
  for (index_t p = 0; p < offset + count; ++p) {
    l.row.push_back(static_cast<index_t>(engine() % static_cast<std::uint64_t>(rows)));
    l.coef.push_back(u(engine) < 0.3 ? -u(engine) : 2.0 * u(engine));  // w - 1 can be negative
    l.weighted.push_back(static_cast<T>(u(engine)));
  }
  return l;
}

double rel(double got, double want) { return std::abs(got - want) / std::max(1.0, std::abs(want)); }

template <class T>
void check_products(index_t k, index_t count) {
  SCOPED_TRACE("k " + std::to_string(k) + " count " + std::to_string(count));
  const index_t rows = 11, offset = 3;
  const Lists<T> l = make_lists<T>(k, rows, offset, count, static_cast<unsigned>(k * 100 + count));
  std::vector<double> gx(static_cast<std::size_t>(k), 0.5), b(static_cast<std::size_t>(k), 0.25);
  const double quad = listed_products(l.yt.data(), k, l.row.data(), l.coef.data(), offset, offset + count, l.x.data(),
                                      gx.data(), l.weighted.data(), b.data());
  const double quad_only =
      listed_products(l.yt.data(), k, l.row.data(), l.coef.data(), offset, offset + count, l.x.data(), nullptr);
  std::vector<double> want_gx(static_cast<std::size_t>(k), 0.5), want_b(static_cast<std::size_t>(k), 0.25);
  double want_quad = 0;
  for (index_t p = offset; p < offset + count; ++p) {
    const T* y = l.yt.data() + l.row[p] * k;
    double d = 0;
    for (index_t i = 0; i < k; ++i) d += static_cast<double>(y[i]) * static_cast<double>(l.x[i]);
    want_quad += l.coef[p] * d * d;
    for (index_t i = 0; i < k; ++i) {
      want_gx[i] += l.coef[p] * d * static_cast<double>(y[i]);
      want_b[i] += static_cast<double>(l.weighted[p]) * static_cast<double>(y[i]);
    }
  }
  EXPECT_LT(rel(quad, want_quad), 1e-13);
  EXPECT_EQ(quad, quad_only);  // the same sums with or without the vectors
  for (index_t i = 0; i < k; ++i) {
    EXPECT_LT(rel(gx[i], want_gx[i]), 1e-13) << "gx " << i;
    EXPECT_LT(rel(b[i], want_b[i]), 1e-13) << "b " << i;
  }
}

// k = 8, 16, 24 and 32 run the 8-wide kernel where the CPU has AVX-512F (listed_products_avx512.cpp): lists of
// 16 to 41 rows take its blocks of eight and its tail.
TEST(ListedProducts, MatchPlainLoops) {
  for (const index_t k : {1, 3, 4, 7, 8, 16, 24, 32, 33, 64})
    for (const index_t count : {0, 1, 3, 4, 5, 8, 9, 16, 23, 41}) {
      check_products<double>(k, count);
      check_products<float>(k, count);
    }
}

TEST(ListedGram, MatchesPlainLoopsAndIsSymmetric) {
  for (const index_t k : {4, 8, 12, 16, 20, 32, 64})
    for (const index_t count : {0, 1, 2, 5, 17}) {
      SCOPED_TRACE("k " + std::to_string(k) + " count " + std::to_string(count));
      const Lists<double> l = make_lists<double>(k, 9, 0, count, static_cast<unsigned>(k * 7 + count));
      std::vector<const double*> rows;
      for (index_t q = 0; q < count; ++q) rows.push_back(l.yt.data() + l.row[q] * k);
      // Starts from a symmetric G (the full Gram matrix the corrections are added to).
      std::vector<double> g(static_cast<std::size_t>(k * k));
      for (index_t a = 0; a < k; ++a)
        for (index_t c = 0; c < k; ++c) g[a + c * k] = 1.0 / static_cast<double>(1 + a + c);
      std::vector<double> want = g;
      for (index_t q = 0; q < count; ++q)
        for (index_t c = 0; c < k; ++c)
          for (index_t a = 0; a < k; ++a) want[a + c * k] += l.coef[q] * rows[q][a] * rows[q][c];
      listed_gram(rows.data(), l.coef.data(), count, k, g.data());
      for (index_t c = 0; c < k; ++c)
        for (index_t a = 0; a < k; ++a) {
          EXPECT_LT(rel(g[a + c * k], want[a + c * k]), 1e-13) << a << "," << c;
          EXPECT_EQ(g[a + c * k], g[c + a * k]) << a << "," << c;
        }
    }
}

// The AVX-512 blocks (listed_gram_avx512.cpp) form every entry by the same operations in the same order as the
// 4-wide ones, so a machine's choice of kernel never changes a result: the two must agree to the bit.
TEST(ListedGram, WideAndFourWideBlocksGiveTheSameBits) {
  if (!listed_gram_wide()) GTEST_SKIP() << "this CPU has no AVX-512F (or DNMF_SKINNY keeps AVX2): one kernel only";
  for (const index_t k : {8, 16, 24, 32, 64})
    for (const index_t count : {0, 1, 7, 40}) {
      SCOPED_TRACE("k " + std::to_string(k) + " count " + std::to_string(count));
      const Lists<double> l = make_lists<double>(k, 11, 0, count, static_cast<unsigned>(k * 13 + count));
      std::vector<const double*> rows;
      for (index_t q = 0; q < count; ++q) rows.push_back(l.yt.data() + l.row[q] * k);
      std::vector<double> wide(static_cast<std::size_t>(k * k), 0.25), lanes = wide;
      listed_gram(rows.data(), l.coef.data(), count, k, wide.data());
      listed_gram_four_wide(rows.data(), l.coef.data(), count, k, lanes.data());
      for (index_t c = 0; c < k; ++c)
        for (index_t a = 0; a < k; ++a) EXPECT_EQ(wide[a + c * k], lanes[a + c * k]) << a << "," << c;
    }
}

TEST(ListedSum, MatchesPlainLoops) {
  for (const index_t k : {1, 3, 4, 7, 16, 33})
    for (const index_t count : {0, 1, 3, 4, 5, 9, 23}) {
      SCOPED_TRACE("k " + std::to_string(k) + " count " + std::to_string(count));
      const Lists<double> l = make_lists<double>(k, 13, 2, count, static_cast<unsigned>(k * 31 + count));
      std::vector<double> b(static_cast<std::size_t>(k), 0.5), want = b;
      listed_sum(l.yt.data(), k, l.row.data(), l.weighted.data(), 2, 2 + count, b.data());
      for (index_t p = 2; p < 2 + count; ++p)
        for (index_t i = 0; i < k; ++i) want[i] += l.weighted[p] * l.yt[l.row[p] * k + i];
      for (index_t i = 0; i < k; ++i) EXPECT_LT(rel(b[i], want[i]), 1e-13) << i;
    }
}

// HALS's column rule done the plain way: G = F + Σ c y yᵀ and b + Σ w a y formed first, then hals.hpp's sweep.
template <class T>
void reference_sweep(const Lists<T>& l, index_t k, index_t count, const std::vector<double>* full, bool weighted,
                     const SweepRule& rule, std::vector<double>& b, std::vector<T>& x, double& quad) {
  std::vector<double> g(static_cast<std::size_t>(k * k), 0.0);
  if (full != nullptr) g = *full;
  for (index_t p = 0; p < count; ++p) {
    const T* y = l.yt.data() + l.row[p] * k;
    for (index_t a = 0; a < k; ++a) {
      if (weighted) b[a] += static_cast<double>(l.weighted[p]) * static_cast<double>(y[a]);
      for (index_t c = 0; c < k; ++c) g[a + c * k] += l.coef[p] * static_cast<double>(y[a]) * static_cast<double>(y[c]);
    }
  }
  for (index_t a = 0; a < k; ++a) {
    const double diag = g[a + a * k] + rule.l2;
    if (!(diag > rule.eps)) {  // dead: held without an L1 penalty, else its minimum 0
      if (rule.l1 > 0) x[a] = T(0);
      continue;
    }
    double ga = 0;
    for (index_t c = 0; c < k; ++c) ga += g[a + c * k] * static_cast<double>(x[c]);
    const auto old = static_cast<double>(x[a]);
    x[a] = static_cast<T>(std::max(0.0, old + (b[a] - rule.l1 - rule.l2 * old - ga) / diag));
  }
  quad = 0;
  for (index_t a = 0; a < k; ++a)
    for (index_t c = 0; c < k; ++c) quad += static_cast<double>(x[a]) * g[a + c * k] * static_cast<double>(x[c]);
}

template <class T>
void check_sweep(index_t k, index_t count, bool with_full, bool weighted, bool dead, double tol, bool common = false,
                 double l1 = 0.05) {
  SCOPED_TRACE("k " + std::to_string(k) + " count " + std::to_string(count) + " full " + std::to_string(with_full) +
               " weighted " + std::to_string(weighted) + " dead " + std::to_string(dead) + " common " +
               std::to_string(common));
  const index_t rows = 17;
  Lists<T> l = make_lists<T>(k, rows, 0, count, static_cast<unsigned>(k * 1000 + count * 10 + with_full));
  if (dead) {  // component k/2 is zero in every row, and without F nothing else gives it a diagonal
    for (index_t i = 0; i < rows; ++i) l.yt[i * k + k / 2] = T(0);
  }
  std::vector<double> full;
  if (with_full) {  // a positive definite F, large enough that F + Σ c y yᵀ stays so with c ≥ -1
    full.assign(static_cast<std::size_t>(k * k), 0.0);
    for (index_t a = 0; a < k; ++a)
      for (index_t c = 0; c < k; ++c) full[a + c * k] = (a == c ? 3.0 * count + 1.0 : 0.0) + 0.1 / (1.0 + a + c);
  } else {
    for (double& c : l.coef) c = std::abs(c) + 0.1;  // a Gram matrix summed from zero has positive weights
  }
  // One coefficient for the whole list (a 0/1 mask's -1 against F; unit weights from zero), passed as `common`
  // with no coefficient array: the sweep's other path.
  const double common_value = with_full ? -1.0 : 1.0;
  if (common) std::fill(l.coef.begin(), l.coef.end(), common_value);
  const ListedRows list{l.row.data(), common ? nullptr : l.coef.data(), common ? common_value : 0.0, count};
  std::vector<double> b(static_cast<std::size_t>(k));
  for (index_t a = 0; a < k; ++a) b[a] = 2.0 + std::sin(static_cast<double>(a));
  const SweepRule rule{l1, dead ? 0.0 : 0.01, 1e-12};  // l2 > 0 would give the dead component a diagonal
  std::vector<double> want_b = b, fx(static_cast<std::size_t>(k));
  std::vector<T> want_x = l.x;
  double want_quad = 0;
  reference_sweep(l, k, count, with_full ? &full : nullptr, weighted, rule, want_b, want_x, want_quad);
  ListedColumns buf;
  std::vector<T> x = l.x;
  const double listed =
      listed_hals_sweep(l.yt.data(), k, list, with_full ? full.data() : nullptr, weighted ? l.weighted.data() : nullptr,
                        rule, b.data(), fx.data(), x.data(), buf, true);
  double quad = listed;
  for (index_t a = 0; a < k; ++a) quad += static_cast<double>(x[a]) * fx[a];
  for (index_t a = 0; a < k; ++a) {
    EXPECT_LT(rel(b[a], want_b[a]), 1e-13) << "b " << a;
    EXPECT_LT(rel(static_cast<double>(x[a]), static_cast<double>(want_x[a])), tol) << "x " << a;
  }
  if (dead) {  // held without an L1 penalty (its objective is flat), at 0 with one (l1 x alone is minimised)
    EXPECT_EQ(x[k / 2], l1 > 0 ? T(0) : l.x[k / 2]) << "a dead component";
    EXPECT_NE(l.x[k / 2], T(0)) << "the test's start must tell the two apart";
  }
  EXPECT_LT(rel(quad, want_quad), 100 * tol);
  // The buffers are reused: a second column through the same ones gives the same answer as a fresh start.
  std::vector<T> again = l.x;
  std::vector<double> b2 = want_b;
  ListedColumns fresh;
  std::vector<T> again_fresh = l.x;
  std::vector<double> b3 = want_b;
  listed_hals_sweep(l.yt.data(), k, list, with_full ? full.data() : nullptr, static_cast<const T*>(nullptr), rule,
                    b2.data(), fx.data(), again.data(), buf, false);
  listed_hals_sweep(l.yt.data(), k, list, with_full ? full.data() : nullptr, static_cast<const T*>(nullptr), rule,
                    b3.data(), fx.data(), again_fresh.data(), fresh, false);
  EXPECT_EQ(again, again_fresh);
}

TEST(ListedHalsSweep, MatchesTheSweepOverAFormedGram) {
  // Counts past 16 fill the passes' four sets of lanes (and leave a tail of groups of four, or none at 32).
  for (const index_t k : {1, 3, 4, 7, 16, 33})
    for (const index_t count : {0, 1, 3, 4, 5, 9, 23, 32, 37})
      for (const bool with_full : {false, true})
        for (const bool common : {false, true}) {
          check_sweep<double>(k, count, with_full, !with_full, false, 1e-12, common);
          check_sweep<double>(k, count, with_full, with_full, false, 1e-12, common);
          check_sweep<float>(k, count, with_full, !with_full, false, 1e-5, common);
        }
}

TEST(ListedHalsSweep, HoldsDeadComponents) {
  for (const index_t k : {3, 16})
    for (const index_t count : {1, 6})
      for (const double l1 : {0.0, 0.05}) check_sweep<double>(k, count, false, false, true, 1e-12, false, l1);
}

// gram_times against a plain float64 loop (g with a leading dimension past k), and the two-vector form against
// two single calls to the bit: MU's denominators take columns in pairs and a lone last column singly, so results
// must not depend on the pairing.
template <class T>
void check_gram_times(index_t k) {
  SCOPED_TRACE("k " + std::to_string(k));
  const index_t ldg = k + 3;
  std::mt19937_64 engine(static_cast<unsigned>(k));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> g(static_cast<std::size_t>(ldg * k)), x0(static_cast<std::size_t>(k)), x1(x0);
  for (T& v : g) v = static_cast<T>(u(engine));
  for (T& v : x0) v = static_cast<T>(u(engine));
  for (T& v : x1) v = static_cast<T>(u(engine));
  std::vector<double> plain(static_cast<std::size_t>(k), 0.5), one(plain), two(plain), pair0(plain), pair1(plain);
  for (index_t p = 0; p < k; ++p)
    for (index_t l = 0; l < k; ++l) plain[l] += static_cast<double>(g[l + p * ldg]) * static_cast<double>(x0[p]);
  gram_times(g.data(), ldg, x0.data(), k, one.data());
  gram_times(g.data(), ldg, x1.data(), k, two.data());
  gram_times_pair(g.data(), ldg, x0.data(), x1.data(), k, pair0.data(), pair1.data());
  for (index_t l = 0; l < k; ++l) {
    EXPECT_LE(rel(one[l], plain[l]), 1e-13) << "l " << l;
    EXPECT_EQ(pair0[l], one[l]) << "l " << l;
    EXPECT_EQ(pair1[l], two[l]) << "l " << l;
  }
}

TEST(Lanes, GramTimesMatchesPlainLoopAndPairMatchesSingleCallsToTheBit) {
  for (index_t k = 1; k <= 37; ++k) {
    check_gram_times<double>(k);
    check_gram_times<float>(k);
  }
}

// Plain float64 HALS sweep of one column: a fresh dot G[l, :] x per coordinate, in order, no maintained G x.
void plain_hals_column(const std::vector<double>& g, index_t k, double l1, double l2, double eps, const double* b,
                       double* x) {
  for (index_t l = 0; l < k; ++l) {
    const double diag = g[l + l * k] + l2;
    if (!(diag > eps)) {  // a dead component: held without an L1 penalty, at its minimum 0 with one
      if (l1 > 0) x[l] = 0;
      continue;
    }
    double gx = 0;
    for (index_t p = 0; p < k; ++p) gx += g[l + p * k] * x[p];
    x[l] = std::max(0.0, x[l] + (b[l] - l1 - l2 * x[l] - gx) / diag);
  }
}

// One rule's inputs: G = YᵀY from random rows (component 1 dead where k > 2 and l2 = 0), x0 and a numerator of
// which some coordinates clamp, all rounded to T.
template <class T>
struct ColumnProblem {
  index_t k, cols;
  std::vector<double> g_in;  ///< G as the rules see it (rounded to T), in double for the plain loops
  std::vector<T> g_t, x0, numer;
  double eps = 1e-16, l1 = 0.05, l2;
  ColumnProblem(index_t k_, index_t cols_) : k(k_), cols(cols_), l2(k_ % 2 == 0 ? 0.1 : 0.0) {
    std::mt19937_64 engine(static_cast<unsigned>(k * 1000 + cols));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const index_t rows = k + 5;
    std::vector<double> y(static_cast<std::size_t>(k * rows));
    for (double& v : y) v = u(engine);
    if (k > 2) {
      for (index_t r = 0; r < rows; ++r) y[1 + r * k] = 0;  // component 1: G_11 = 0, dead where l2 = 0
    }
    std::vector<double> g(static_cast<std::size_t>(k * k), 0.0);
    for (index_t r = 0; r < rows; ++r)
      for (index_t q = 0; q < k; ++q)
        for (index_t p = 0; p < k; ++p) g[p + q * k] += y[p + r * k] * y[q + r * k];
    g_t.assign(g.begin(), g.end());
    x0.resize(static_cast<std::size_t>(k * cols));
    numer = x0;
    for (T& v : x0) v = static_cast<T>(u(engine));
    for (T& v : numer) v = static_cast<T>(u(engine) < 0.3 ? 0.0 : 3.0 * u(engine));  // some coordinates clamp
    g_in.assign(g_t.begin(), g_t.end());  // rounding G to T is part of the input
  }
  [[nodiscard]] backend::CView<T> numer_view() const { return {numer.data(), k, cols, k}; }
  [[nodiscard]] backend::CView<T> g_view() const { return {g_t.data(), k, k, k}; }
};

template <class T>
void check_column_rules(index_t k, index_t cols) {
  SCOPED_TRACE("k " + std::to_string(k) + " cols " + std::to_string(cols));
  const ColumnProblem<T> problem(k, cols);
  const std::vector<T>& x0 = problem.x0;
  const std::vector<T>& numer = problem.numer;
  const std::vector<double>& g_in = problem.g_in;
  const double eps = problem.eps, l1 = problem.l1, l2 = problem.l2;
  const double tol = std::is_same_v<T, double> ? 1e-12 : 1e-5;
  for (Algorithm algo : {Algorithm::hals, Algorithm::mu}) {
    std::vector<T> x = x0;
    const backend::UpdateRule rule{algo, eps, l1, l2};
    const backend::View<T> xv{x.data(), k, cols, k};
    const backend::CView<T> nv = problem.numer_view(), gv = problem.g_view();
    if (algo == Algorithm::hals) {
      hals_update(rule, xv, nv, gv, 0, cols);
    } else {
      mu_frobenius_update(rule, xv, nv, gv, 0, cols);
    }
    for (index_t c = 0; c < cols; ++c) {
      std::vector<double> want(x0.begin() + c * k, x0.begin() + (c + 1) * k),
          b(numer.begin() + c * k, numer.begin() + (c + 1) * k);
      if (algo == Algorithm::hals) {
        plain_hals_column(g_in, k, l1, l2, eps, b.data(), want.data());
      } else {
        const std::vector<double> old = want;
        for (index_t l = 0; l < k; ++l) {
          double gx = 0;
          for (index_t p = 0; p < k; ++p) gx += g_in[l + p * k] * old[p];
          want[l] = old[l] * b[l] / (gx + l1 + l2 * old[l] + eps);
        }
      }
      for (index_t l = 0; l < k; ++l) {
        const double got = static_cast<double>(x[c * k + l]);
        EXPECT_GE(got, 0.0);
        EXPECT_LE(std::abs(got - want[l]), tol * std::max(1.0, std::abs(want[l])))
            << to_string(algo) << " column " << c << " l " << l;
      }
    }
  }
}

TEST(ColumnRules, HalsAndMuMatchPlainLoopsOnFullAndPartialGroups) {
  for (index_t k : {1, 2, 3, 7, 16, 33}) {
    for (index_t cols : {1, 3, 4, 5, 8, 11, 17}) {
      check_column_rules<double>(k, cols);
      check_column_rules<float>(k, cols);
    }
  }
}

// The AVX-512 column rules (column_rules_avx512.cpp: HALS's G x in registers for k = 8, 16, 24 and 32 and its
// generic sweep in 8-wide lanes otherwise; MU's denominators in registers for k = 8, 16 and 24) against the library's
// 4-wide kernels: every column's operations are the same, so the bits must be, on full and partial groups of eight and
// from a first column that is not a group's; and against the plain loops (the test before checks the 4-wide code that
// way).
template <class T>
void check_wide_rule(Algorithm algo, index_t k, index_t cols, index_t from) {
  SCOPED_TRACE(to_string(algo) + " k " + std::to_string(k) + " cols " + std::to_string(cols) + " from " +
               std::to_string(from));
  const ColumnProblem<T> problem(k, cols);
  const backend::UpdateRule rule{algo, problem.eps, problem.l1, problem.l2};
  std::vector<T> four = problem.x0, wide = problem.x0;
  const backend::View<T> four_v{four.data(), k, cols, k}, wide_v{wide.data(), k, cols, k};
  if (algo == Algorithm::hals) {
    hals_update_four_wide(rule, four_v, problem.numer_view(), problem.g_view(), from, cols);
    avx512::hals_update_wide(rule, wide_v, problem.numer_view(), problem.g_view(), from, cols);
  } else {
    mu_frobenius_update_four_wide(rule, four_v, problem.numer_view(), problem.g_view(), from, cols);
    avx512::mu_frobenius_update_wide(rule, wide_v, problem.numer_view(), problem.g_view(), from, cols);
  }
  index_t changed = 0, differ = 0;
  for (std::size_t i = 0; i < four.size(); ++i) {
    changed += four[i] != problem.x0[i] ? 1 : 0;
    using Bits = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;
    differ += std::bit_cast<Bits>(four[i]) != std::bit_cast<Bits>(wide[i]) ? 1 : 0;
  }
  EXPECT_EQ(differ, 0);
  EXPECT_GT(changed, 0);  // the rule did something to compare
  for (index_t i = 0; i < from * k; ++i)
    EXPECT_EQ(wide[static_cast<std::size_t>(i)], problem.x0[static_cast<std::size_t>(i)]);
  const double tol = std::is_same_v<T, double> ? 1e-12 : 1e-5;
  for (index_t c = from; c < cols; ++c) {
    const auto at = [&](const std::vector<T>& v, index_t l) {
      return static_cast<double>(v[static_cast<std::size_t>(c * k + l)]);
    };
    std::vector<double> want(static_cast<std::size_t>(k)), b(static_cast<std::size_t>(k));
    for (index_t l = 0; l < k; ++l) {
      want[static_cast<std::size_t>(l)] = at(problem.x0, l);
      b[static_cast<std::size_t>(l)] = at(problem.numer, l);
    }
    if (algo == Algorithm::hals) {
      plain_hals_column(problem.g_in, k, problem.l1, problem.l2, problem.eps, b.data(), want.data());
    } else {
      const std::vector<double> old = want;
      for (index_t l = 0; l < k; ++l) {
        double gx = 0;
        for (index_t p = 0; p < k; ++p)
          gx += problem.g_in[static_cast<std::size_t>(l + p * k)] * old[static_cast<std::size_t>(p)];
        want[static_cast<std::size_t>(l)] =
            old[static_cast<std::size_t>(l)] * b[static_cast<std::size_t>(l)] /
            (gx + problem.l1 + problem.l2 * old[static_cast<std::size_t>(l)] + problem.eps);
      }
    }
    for (index_t l = 0; l < k; ++l) {
      const double w = want[static_cast<std::size_t>(l)];
      EXPECT_LE(std::abs(at(wide, l) - w), tol * std::max(1.0, std::abs(w))) << "column " << c << " l " << l;
    }
  }
}

TEST(ColumnRules, WideKernelsGiveTheFourWideBits) {
  if (!listed_gram_wide()) GTEST_SKIP() << "this CPU has no AVX-512F (or DNMF_SKINNY keeps AVX2): one kernel only";
  for (index_t k : {1, 7, 8, 9, 16, 17, 24, 32, 33}) {
    for (index_t cols : {1, 7, 8, 9, 16, 17, 23, 40}) {
      for (index_t from : {0, 1, 3}) {
        if (from >= cols) continue;
        for (Algorithm algo : {Algorithm::hals, Algorithm::mu}) {
          if (algo == Algorithm::mu && !mu_frobenius_wide_for(k)) continue;
          check_wide_rule<double>(algo, k, cols, from);
          check_wide_rule<float>(algo, k, cols, from);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dnmf::solvers
