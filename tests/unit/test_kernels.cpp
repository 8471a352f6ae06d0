// Every cpu kernel against the reference backend, on random shapes including empty and one-wide ones.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <type_traits>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "solvers/update_rule.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

using backend::Side;

struct Shape {
  index_t m, n, k;
};

const Shape kShapes[] = {{37, 29, 5}, {1, 17, 3}, {23, 1, 4}, {40, 33, 1}, {0, 7, 3}, {9, 0, 2}, {64, 130, 16}};

template <class T>
class KernelsTest : public ::testing::Test {
 protected:
  backend::ReferenceKernels<T> ref;
  backend::CpuKernels<T> cpu;
};

using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(KernelsTest, Precisions);

// Runs `check` on the dense and CSR forms of the same random matrix (with zeros, so CSR rows vary).
template <class T, class F>
void for_each_layout(const Shape& s, std::uint64_t seed, F&& check) {
  const DenseMatrix<T> dense = test::random_dense<T>(s.m, s.n, seed, 0.4);
  const CsrMatrix<T> csr = test::to_csr(dense);
  check(MatrixRef<T>{dense.view()}, "dense");
  check(MatrixRef<T>{csr.view()}, "csr");
}

TYPED_TEST(KernelsTest, MultiplyMatchesReferenceBothSidesAndBetas) {
  using T = TypeParam;
  std::uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    for_each_layout<T>(s, seed++, [&](const MatrixRef<T>& a, const char* layout) {
      for (Side side : {Side::H, Side::W}) {
        const index_t inner = side == Side::H ? s.m : s.n;
        const index_t outer = side == Side::H ? s.n : s.m;
        const DenseMatrix<T> y = test::random_dense<T>(s.k, inner, seed + 100);
        for (T beta : {T(0), T(1), T(0.5)}) {
          DenseMatrix<T> out_ref = test::random_dense<T>(s.k, outer, seed + 200);
          DenseMatrix<T> out_cpu = out_ref;
          this->ref.multiply(a, side, y.view(), out_ref.view(), beta);
          this->cpu.multiply(a, side, y.view(), out_cpu.view(), beta);
          EXPECT_LE(test::max_relative_difference(out_cpu, out_ref), test::reference_tolerance<T>())
              << layout << " m=" << s.m << " n=" << s.n << " k=" << s.k << " side=" << (side == Side::H ? "H" : "W")
              << " beta=" << beta;
        }
      }
    });
  }
}

TYPED_TEST(KernelsTest, KlMultiplyMatchesReference) {
  using T = TypeParam;
  std::uint64_t seed = 7;
  for (const Shape& s : kShapes) {
    for_each_layout<T>(s, seed++, [&](const MatrixRef<T>& a, const char* layout) {
      const DenseMatrix<T> wt = test::random_dense<T>(s.k, s.m, seed + 1);
      const DenseMatrix<T> h = test::random_dense<T>(s.k, s.n, seed + 2);
      for (Side side : {Side::H, Side::W}) {
        const auto& y = side == Side::H ? wt : h;
        const auto& x = side == Side::H ? h : wt;
        const index_t outer = side == Side::H ? s.n : s.m;
        DenseMatrix<T> out_ref = test::random_dense<T>(s.k, outer, seed + 3);
        DenseMatrix<T> out_cpu = out_ref;
        const auto sr = this->ref.kl_multiply(a, side, y.view(), x.view(), out_ref.view(), T(1));
        const auto sc = this->cpu.kl_multiply(a, side, y.view(), x.view(), out_cpu.view(), T(1));
        EXPECT_LE(test::max_relative_difference(out_cpu, out_ref), test::reference_tolerance<T>()) << layout;
        EXPECT_NEAR(sc.a_times_m, sr.a_times_m, 1e-4 * (1 + std::abs(sr.a_times_m))) << layout;
        EXPECT_NEAR(sc.a_log_a_over_m, sr.a_log_a_over_m, 1e-4 * (1 + std::abs(sr.a_log_a_over_m))) << layout;
      }
    });
  }
}

TYPED_TEST(KernelsTest, FactorSizedKernelsMatchReference) {
  using T = TypeParam;
  for (const Shape& s : kShapes) {
    const DenseMatrix<T> x = test::random_dense<T>(s.k, s.n, 11);
    const DenseMatrix<T> y = test::random_dense<T>(s.k, s.n, 12);
    DenseMatrix<T> g_ref = test::random_dense<T>(s.k, s.k, 13);
    for (index_t q = 0; q < s.k; ++q)  // gram() accumulates into a symmetric matrix
      for (index_t p = q + 1; p < s.k; ++p) g_ref(p, q) = g_ref(q, p);
    DenseMatrix<T> g_cpu = g_ref;
    this->ref.gram(x.view(), g_ref.view(), T(1));
    this->cpu.gram(x.view(), g_cpu.view(), T(1));
    EXPECT_LE(test::max_relative_difference(g_cpu, g_ref), test::reference_tolerance<T>());
    EXPECT_NEAR(this->cpu.dot(x.view(), y.view()), this->ref.dot(x.view(), y.view()),
                test::reference_tolerance<T>() * (1 + s.k * s.n));
    DenseMatrix<T> sums_ref(s.k, 1), sums_cpu(s.k, 1);
    this->ref.row_sums(x.view(), sums_ref.data());
    this->cpu.row_sums(x.view(), sums_cpu.data());
    EXPECT_LE(test::max_relative_difference(sums_cpu, sums_ref), test::reference_tolerance<T>());
  }
}

// Gram matrices from the skinny kernel (k up to four vectors of lanes) or BLAS's syrk (beyond) against the
// reference's loops: ranks on both sides of the switch, column counts past the kernels' blocks, a leading
// dimension past k, beta 0 over a NaN-filled output (overwritten) and 1; the result symmetric bit for bit.
TYPED_TEST(KernelsTest, GramMatchesReferenceAcrossRanksAndColumns) {
  using T = TypeParam;
  for (const index_t k : {1, 7, 16, 33, 64}) {
    for (const index_t cols : {1, 2047, 5003}) {
      const index_t ld = k + 2;
      const DenseMatrix<T> storage = test::random_dense<T>(ld, cols, 31);
      const backend::CView<T> x{storage.data(), k, cols, ld};
      for (const T beta : {T(0), T(1)}) {
        DenseMatrix<T> g_ref = test::random_dense<T>(k, k, 32);
        for (index_t q = 0; q < k; ++q)
          for (index_t p = q + 1; p < k; ++p) g_ref(p, q) = g_ref(q, p);
        DenseMatrix<T> g_cpu = g_ref;
        if (beta == T(0))
          std::fill(g_cpu.storage().begin(), g_cpu.storage().end(), std::numeric_limits<T>::quiet_NaN());
        this->ref.gram(x, g_ref.view(), beta);
        this->cpu.gram(x, g_cpu.view(), beta);
        EXPECT_LE(test::max_relative_difference(g_cpu, g_ref), test::reference_tolerance<T>())
            << "k " << k << " cols " << cols << " beta " << beta;
        for (index_t q = 0; q < k; ++q)
          for (index_t p = q + 1; p < k; ++p) ASSERT_EQ(g_cpu(p, q), g_cpu(q, p)) << "k " << k << " cols " << cols;
      }
    }
  }
}

// The error identity's float64 Gram (runs of 2048 columns, each its own dsyrk, added in order) against plain
// double loops, to double's rounding even for float input; the same bits on 1 and 2 threads.
TYPED_TEST(KernelsTest, GramInDoubleMatchesReference) {
  using T = TypeParam;
  for (const index_t k : {1, 7, 16}) {
    for (const index_t cols : {1, 2047, 4100}) {
      const DenseMatrix<T> x = test::random_dense<T>(k, cols, 21);
      std::vector<double> g_ref(to_size(k * k)), g_cpu(to_size(k * k), -1.0), g_one(to_size(k * k), -1.0);
      ASSERT_TRUE(this->ref.gram_f64(x.view(), g_ref.data()));
      ASSERT_TRUE(this->cpu.gram_f64(x.view(), g_cpu.data()));
      for (std::size_t q = 0; q < g_ref.size(); ++q)
        EXPECT_NEAR(g_cpu[q], g_ref[q], 1e-13 * g_ref[q]) << "k " << k << " cols " << cols << " entry " << q;
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      ASSERT_TRUE(this->cpu.gram_f64(x.view(), g_one.data()));
      omp_set_num_threads(threads);
      EXPECT_EQ(g_one, g_cpu) << "k " << k << " cols " << cols;
    }
  }
}

// The cpu backend's extrapolation (ranges of columns, its own loop) against the reference backend's (the base
// class's), on blocks wider than one task's 256 columns and with a leading dimension past k: x̂ and x_prev alike.
TYPED_TEST(KernelsTest, ExtrapolateMatchesReference) {
  using T = TypeParam;
  for (const Shape& s : {Shape{0, 600, 5}, Shape{0, 1, 3}, Shape{0, 257, 16}, Shape{0, 0, 2}}) {
    const index_t ld = s.k + 3;
    const DenseMatrix<T> x = test::random_dense<T>(ld, s.n, 21);
    const DenseMatrix<T> prev0 = test::random_dense<T>(ld, s.n, 22);
    const DenseMatrix<T> hat0 = test::random_dense<T>(ld, s.n, 23);
    DenseMatrix<T> prev_ref = prev0, prev_cpu = prev0, hat_ref = hat0, hat_cpu = hat0;
    const auto sub = [&](DenseMatrix<T>& m) { return backend::View<T>{m.data(), s.k, s.n, ld}; };
    const backend::CView<T> xv{x.data(), s.k, s.n, ld};
    this->ref.extrapolate(sub(hat_ref), xv, sub(prev_ref), T(0.7));
    this->cpu.extrapolate(sub(hat_cpu), xv, sub(prev_cpu), T(0.7));
    EXPECT_LE(test::max_relative_difference(hat_cpu, hat_ref), test::reference_tolerance<T>())
        << "n=" << s.n << " k=" << s.k;
    EXPECT_LE(test::max_relative_difference(prev_cpu, prev_ref), test::reference_tolerance<T>())
        << "n=" << s.n << " k=" << s.k;
    for (index_t c = 0; c < s.n; ++c) {
      for (index_t l = s.k; l < ld; ++l) {  // rows past k are not the view's: left alone
        EXPECT_EQ(hat_cpu(l, c), hat0(l, c));
        EXPECT_EQ(prev_cpu(l, c), prev0(l, c));
      }
      for (index_t l = 0; l < s.k; ++l) {
        EXPECT_EQ(prev_cpu(l, c), x(l, c));
        EXPECT_NE(hat_cpu(l, c), hat0(l, c));
      }
    }
  }
}

TYPED_TEST(KernelsTest, UpdateRulesMatchReference) {
  using T = TypeParam;
  for (Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    for (const Shape& s : kShapes) {
      const DenseMatrix<T> numer = test::random_dense<T>(s.k, s.n, 21);
      const DenseMatrix<T> y = test::random_dense<T>(s.k, s.m + 3, 22);
      DenseMatrix<T> g(s.k, s.k), sums(s.k, 1);
      this->ref.gram(y.view(), g.view(), T(0));
      this->ref.row_sums(y.view(), sums.data());
      DenseMatrix<T> x_ref = test::random_dense<T>(s.k, s.n, 23);
      DenseMatrix<T> x_cpu = x_ref;
      const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0.01, 0.02);
      this->ref.update(rule, x_ref.view(), numer.view(), g.view(), sums.data());
      this->cpu.update(rule, x_cpu.view(), numer.view(), g.view(), sums.data());
      EXPECT_LE(test::max_relative_difference(x_cpu, x_ref), test::reference_tolerance<T>())
          << to_string(algo) << " k=" << s.k;
      for (T v : x_cpu.storage()) ASSERT_TRUE(v >= T(0)) << to_string(algo);
    }
  }
}

// The cpu fused pass (threads over tiles, private accumulators) against the reference's generic pass; with
// `accumulate` the products must land on top of what the buffers held (a streamed pass relies on it).
TYPED_TEST(KernelsTest, FusedPassMatchesReference) {
  using T = TypeParam;
  for (Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    for (const Shape& s : kShapes) {
      if (s.m == 0 || s.n == 0) continue;
      for (bool accumulate : {false, true}) {
        for_each_layout<T>(s, 31, [&](const MatrixRef<T>& a, const char* layout) {
          const Side side = this->cpu.fused_side(a);
          const index_t dx = side == Side::H ? s.n : s.m;
          const index_t dy = side == Side::H ? s.m : s.n;
          const DenseMatrix<T> y = test::random_dense<T>(s.k, dy, 32);
          DenseMatrix<T> gy(s.k, s.k), ysum(s.k, 1);
          this->ref.gram(y.view(), gy.view(), T(0));
          this->ref.row_sums(y.view(), ysum.data());
          DenseMatrix<T> x_ref = test::random_dense<T>(s.k, dx, 33);
          DenseMatrix<T> x_cpu = x_ref;
          // The reference overwrites; its buffers start as garbage to show that it does.
          DenseMatrix<T> other_ref(s.k, dy, T(5)), gx_ref(s.k, s.k, T(5));
          DenseMatrix<T> other_cpu(s.k, dy, T(7)), gx_cpu(s.k, s.k, T(3));
          this->cpu.set_tile_bytes(512);  // many small tiles, so the schedule and the reduction are exercised
          const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0.0, 0.0);
          const auto sr = this->ref.fused_pass(a, side, rule, x_ref.view(), y.view(), gy.view(), ysum.data(),
                                               other_ref.view(), gx_ref.view(), false);
          const auto sc = this->cpu.fused_pass(a, side, rule, x_cpu.view(), y.view(), gy.view(), ysum.data(),
                                               other_cpu.view(), gx_cpu.view(), accumulate);
          if (accumulate) {
            for (T& v : other_ref.storage()) v += T(7);
            for (T& v : gx_ref.storage()) v += T(3);
          }
          const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-11;
          const std::string what = std::string(layout) + " " + to_string(algo) + (accumulate ? " accumulate" : "");
          EXPECT_LE(test::max_relative_difference(x_cpu, x_ref), tol) << what;
          EXPECT_LE(test::max_relative_difference(other_cpu, other_ref), tol) << what;
          EXPECT_LE(test::max_relative_difference(gx_cpu, gx_ref), tol) << what;
          EXPECT_NEAR(sc.cross, sr.cross, tol * (1 + std::abs(sr.cross))) << what;
          EXPECT_NEAR(sc.kl_accum.a_times_m, sr.kl_accum.a_times_m, tol * (1 + std::abs(sr.kl_accum.a_times_m)));
        });
      }
    }
  }
}

TYPED_TEST(KernelsTest, StatsMatchReference) {
  using T = TypeParam;
  for (const Shape& s : kShapes)
    for_each_layout<T>(s, 41, [&](const MatrixRef<T>& a, const char* layout) {
      const auto r = this->ref.stats(a);
      const auto c = this->cpu.stats(a);
      EXPECT_NEAR(c.sum, r.sum, 1e-9 * (1 + r.sum)) << layout;
      EXPECT_NEAR(c.squared_norm, r.squared_norm, 1e-9 * (1 + r.squared_norm)) << layout;
    });
}

// Larger than one piece of the CSR sums (4096 stored values) and with columns not a multiple of the eight running
// sums: the pieces, their tails and the blocks above them against the reference, and the same bits on 1 and 2
// threads.
TYPED_TEST(KernelsTest, StatsOverManyPiecesMatchReferenceOnAnyThreadCount) {
  using T = TypeParam;
  const DenseMatrix<T> dense = test::random_dense<T>(151, 173, 7, 0.4);
  const CsrMatrix<T> csr = test::to_csr(dense);
  ASSERT_GT(csr.view().nnz(), 2 * 4096);
  for (const MatrixRef<T>& a : {MatrixRef<T>{dense.view()}, MatrixRef<T>{csr.view()}}) {
    const auto r = this->ref.stats(a);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = this->cpu.stats(a);
    omp_set_num_threads(2);
    const auto two = this->cpu.stats(a);
    omp_set_num_threads(threads);
    const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
    EXPECT_NEAR(one.sum, r.sum, tol * r.sum);
    EXPECT_NEAR(one.squared_norm, r.squared_norm, tol * r.squared_norm);
    EXPECT_EQ(one.sum, two.sum);
    EXPECT_EQ(one.squared_norm, two.squared_norm);
    EXPECT_TRUE(one.entries_checked && one.entries_acceptable);
  }
}

// The statistics pass checks every entry on the way (the API's input check for in-memory matrices): one bad
// value anywhere, in a piece's body or its tail, a dense column's or a CSR piece's, negative, NaN or infinite,
// and it says so, on 1 and 2 threads; -0.0 is acceptable.
TYPED_TEST(KernelsTest, StatsFindABadEntryAnywhere) {
  using T = TypeParam;
  const DenseMatrix<T> good = test::random_dense<T>(151, 173, 7, 0.4);
  const CsrMatrix<T> good_csr = test::to_csr(good);
  const T bad_values[] = {T(-1e-30), std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity()};
  const int threads = omp_get_max_threads();
  for (const int team : {1, 2}) {
    omp_set_num_threads(team);
    for (const T bad : bad_values) {
      for (const index_t place : {index_t{0}, index_t{5000}, good_csr.view().nnz() - 1}) {
        CsrMatrix<T> csr = good_csr;
        csr.values()[static_cast<std::size_t>(place)] = bad;
        const auto s = this->cpu.stats(MatrixRef<T>{csr.view()});
        EXPECT_TRUE(s.entries_checked);
        EXPECT_FALSE(s.entries_acceptable) << "CSR entry " << place << " = " << bad;
      }
      for (const index_t i : {index_t{0}, index_t{149}}) {
        DenseMatrix<T> dense = good;
        dense(i, 172) = bad;
        const auto s = this->cpu.stats(MatrixRef<T>{dense.view()});
        EXPECT_FALSE(s.entries_acceptable) << "dense row " << i << " = " << bad;
      }
    }
    DenseMatrix<T> negative_zero = good;
    negative_zero(3, 4) = -T(0);
    EXPECT_TRUE(this->cpu.stats(MatrixRef<T>{negative_zero.view()}).entries_acceptable);
  }
  omp_set_num_threads(threads);
}

}  // namespace
}  // namespace dnmf
