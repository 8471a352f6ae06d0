// The masked iteration's per-column kernels (src/solvers/listed_products.hpp) against plain float64 loops written
// here: MU's correction G_j x, the quadratic term, the sparse numerator and the weighted Gram matrix, on ranks
// that fill the 4-wide lanes and ranks that leave a tail, list lengths that do and do not fill the blocks of four,
// coefficients of both signs, float and double rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "solvers/listed_products.hpp"

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

TEST(ListedProducts, MatchPlainLoops) {
  for (const index_t k : {1, 3, 4, 7, 8, 16, 33, 64})
    for (const index_t count : {0, 1, 3, 4, 5, 8, 9, 23}) {
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

}  // namespace
}  // namespace dnmf::solvers
