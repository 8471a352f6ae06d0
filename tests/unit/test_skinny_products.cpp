// The skinny product kernels (backend/cpu/skinny_products.hpp) against plain float64 loops written here, on
// ranks 1, 7, 16, 33, 64 and sizes that are not multiples of any block (issue 14: f64 1e-12, f32 1e-5 relative),
// with padded leading dimensions, beta 0 (over NaN), 1 and 0.5, and the fused pass that uses them against the
// reference backend. Which instruction set ran is printed (AVX-512 where the CPU has it, else AVX2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/skinny_products.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "dnmf/error.hpp"
#include "solvers/update_rule.hpp"
#include "support/random_matrices.hpp"

// The AVX-512 kernels' source with 512-bit vectors, compiled here at the build's baseline (the compiler splits
// each vector into two 256-bit halves): the same code as skinny_avx512.cpp, so its lane and panel arithmetic
// (8 doubles, 16 floats per vector) is checked on machines without AVX-512 too.
namespace dnmf::backend::cpu::wide_emulated {
constexpr int kBytes = 64;
}  // namespace dnmf::backend::cpu::wide_emulated
#define DNMF_SKINNY_NAMESPACE wide_emulated
#include "backend/cpu/skinny_kernels_impl.hpp"
#undef DNMF_SKINNY_NAMESPACE

namespace dnmf {
namespace {

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T>
std::vector<T> random_values(std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

// Largest |got - want| over the largest |want| (entries are sums of positive terms, so this is relative).
template <class T>
double relative_difference(const std::vector<T>& got, const std::vector<double>& want, index_t rows, index_t cols,
                           index_t ld) {
  double diff = 0, scale = 0;
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(got[i + j * ld]) - want[i + j * rows]));
      scale = std::max(scale, std::abs(want[i + j * rows]));
    }
  return scale > 0 ? diff / scale : diff;
}

// True when both hold the same values bit for bit (NaN where the other has NaN).
template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

// Fixes how far ahead skinny_ya requests A's columns for the guard's lifetime, then restores the choice.
class ColumnAheadOverride {
 public:
  explicit ColumnAheadOverride(index_t bytes) { backend::cpu::skinny_set_column_ahead(bytes); }
  ~ColumnAheadOverride() { backend::cpu::skinny_set_column_ahead(-1); }
  ColumnAheadOverride(const ColumnAheadOverride&) = delete;
  ColumnAheadOverride& operator=(const ColumnAheadOverride&) = delete;
};

// A k-wide operand as the kernels take it: k x cols random values with leading dimension `padded`, rows
// k..padded zero.
template <class T>
std::vector<T> packed_operand(index_t k, index_t padded, index_t cols, unsigned seed) {
  auto v = random_values<T>(static_cast<std::size_t>(padded * cols), seed);
  for (index_t c = 0; c < cols; ++c)
    for (index_t l = k; l < padded; ++l) v[static_cast<std::size_t>(l + c * padded)] = T(0);
  return v;
}

// P (k x m, ld padded) times A (m x n, ld lda) in float64 loops, k x n.
template <class T>
std::vector<double> packed_times_a(const std::vector<T>& p, index_t k, index_t padded, const std::vector<T>& a,
                                   index_t lda, index_t m, index_t n) {
  std::vector<double> out(static_cast<std::size_t>(k * n));
  for (index_t j = 0; j < n; ++j)
    for (index_t l = 0; l < k; ++l) {
      double sum = 0;
      for (index_t i = 0; i < m; ++i)
        sum +=
            static_cast<double>(p[static_cast<std::size_t>(l + i * padded)]) * a[static_cast<std::size_t>(i + j * lda)];
      out[static_cast<std::size_t>(l + j * k)] = sum;
    }
  return out;
}

struct Case {
  index_t k, m, n;
};
// m above the row block (1024) with k in several panels exercises the YA product's row blocks. The last four
// are longer than one packed piece of the k-wide operand (at most 1 MiB of it per kernel call): YA over m,
// XAᵀ over n, with one panel (k = 1, 2: f32 rows in pairs) and with several (k = 33).
const Case kCases[] = {{1, 13, 5},    {7, 257, 11},  {16, 300, 37}, {16, 1, 3},    {33, 129, 14}, {64, 77, 25},
                       {64, 513, 2},  {5, 1000, 1},  {12, 7, 200},  {24, 40, 197}, {40, 2100, 3}, {16, 2500, 4},
                       {1, 40001, 2}, {2, 70001, 3}, {3, 2, 40001}, {33, 20001, 2}};

template <class T>
class SkinnyTest : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SkinnyTest, Precisions);

TYPED_TEST(SkinnyTest, YTimesAMatchesFloat64Loops) {
  using T = TypeParam;
  ASSERT_TRUE(backend::cpu::skinny_takes(16))
      << "the kernels are off on this machine (isa " << backend::cpu::skinny_isa() << ")";
  std::printf("skinny kernels: %s\n", backend::cpu::skinny_isa());
  unsigned seed = 1;
  for (const Case& c : kCases) {
    for (const T beta : {T(0), T(1), T(0.5)}) {
      const index_t ldy = c.k + 3, lda = c.m + 2, ldc = c.k + 1;  // padded: no ld equals its rows
      const auto y = random_values<T>(static_cast<std::size_t>(ldy * c.m), seed++);
      const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
      auto out = random_values<T>(static_cast<std::size_t>(ldc * c.n), seed++);
      std::vector<double> want(static_cast<std::size_t>(c.k * c.n));
      for (index_t j = 0; j < c.n; ++j)
        for (index_t l = 0; l < c.k; ++l) {
          double s = beta == T(0) ? 0.0 : static_cast<double>(beta) * out[l + j * ldc];
          for (index_t i = 0; i < c.m; ++i) s += static_cast<double>(y[l + i * ldy]) * a[i + j * lda];
          want[l + j * c.k] = s;
        }
      if (beta == T(0))  // beta 0 overwrites: whatever was there (even NaN) is not read
        for (auto& v : out) v = std::numeric_limits<T>::quiet_NaN();
      const std::vector<T> before = out;
      // Without requests ahead of the column reads, one line ahead and a page ahead: the same sums, bit for bit.
      std::vector<T> unrequested;
      for (const index_t ahead : {index_t{0}, index_t{64}, index_t{4096}}) {
        ColumnAheadOverride forced(ahead);
        out = before;
        backend::cpu::skinny_ya<T>(c.k, c.m, c.n, y.data(), ldy, a.data(), lda, beta, out.data(), ldc);
        EXPECT_LE(relative_difference(out, want, c.k, c.n, ldc), tolerance<T>())
            << "k=" << c.k << " m=" << c.m << " n=" << c.n << " beta=" << beta << " ahead=" << ahead;
        if (ahead == 0)
          unrequested = out;
        else
          EXPECT_TRUE(same_bits(out, unrequested)) << "k=" << c.k << " m=" << c.m << " ahead=" << ahead;
        for (index_t j = 0; j < c.n; ++j)  // the padding rows of C are never written
          for (index_t l = c.k; l < ldc; ++l)
            EXPECT_TRUE(std::isnan(out[l + j * ldc]) == std::isnan(before[l + j * ldc]) &&
                        (std::isnan(out[l + j * ldc]) || out[l + j * ldc] == before[l + j * ldc]));
      }
    }
  }
}

TYPED_TEST(SkinnyTest, XTimesATransposedMatchesFloat64Loops) {
  using T = TypeParam;
  unsigned seed = 1000;
  for (const Case& c : kCases) {
    for (const T beta : {T(0), T(1), T(0.5)}) {
      const index_t ldx = c.k + 2, lda = c.m + 5, ldd = c.k + 3;
      const auto x = random_values<T>(static_cast<std::size_t>(ldx * c.n), seed++);
      const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
      auto out = random_values<T>(static_cast<std::size_t>(ldd * c.m), seed++);
      std::vector<double> want(static_cast<std::size_t>(c.k * c.m));
      for (index_t i = 0; i < c.m; ++i)
        for (index_t l = 0; l < c.k; ++l) {
          double s = beta == T(0) ? 0.0 : static_cast<double>(beta) * out[l + i * ldd];
          for (index_t j = 0; j < c.n; ++j) s += static_cast<double>(x[l + j * ldx]) * a[i + j * lda];
          want[l + i * c.k] = s;
        }
      if (beta == T(0))
        for (auto& v : out) v = std::numeric_limits<T>::quiet_NaN();
      backend::cpu::skinny_xat<T>(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, beta, out.data(), ldd);
      EXPECT_LE(relative_difference(out, want, c.k, c.m, ldd), tolerance<T>())
          << "k=" << c.k << " m=" << c.m << " n=" << c.n << " beta=" << beta;
    }
  }
}

// The 512-bit kernels (emulated, see the top of this file) on packed operands, both products.
TYPED_TEST(SkinnyTest, WideVectorKernelsMatchFloat64Loops) {
  using T = TypeParam;
  const index_t lanes = 64 / static_cast<index_t>(sizeof(T));
  unsigned seed = 2000;
  for (const Case& c : kCases) {
    const index_t padded = (c.k + lanes - 1) / lanes * lanes;
    const index_t lda = c.m + 1, ldc = c.k + 2;
    const auto y = packed_operand<T>(c.k, padded, c.m, seed++);  // Y: k x m
    const auto x = packed_operand<T>(c.k, padded, c.n, seed++);  // X: k x n
    const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
    std::vector<T> out(static_cast<std::size_t>(ldc * c.n), T(0)), out_t(static_cast<std::size_t>(ldc * c.m), T(0));
    const std::vector<double> want = packed_times_a(y, c.k, padded, a, lda, c.m, c.n);
    std::vector<double> want_t(static_cast<std::size_t>(c.k * c.m));
    for (index_t i = 0; i < c.m; ++i)
      for (index_t l = 0; l < c.k; ++l) {
        double s = 0;
        for (index_t j = 0; j < c.n; ++j) s += static_cast<double>(x[l + j * padded]) * a[i + j * lda];
        want_t[l + i * c.k] = s;
      }
    backend::cpu::wide_emulated::ya(c.k, c.m, c.n, y.data(), padded, a.data(), lda, T(0), out.data(), ldc, 0);
    std::vector<T> requested(out.size(), T(0));  // requesting each column's line 128 bytes ahead: the same bits
    backend::cpu::wide_emulated::ya(c.k, c.m, c.n, y.data(), padded, a.data(), lda, T(0), requested.data(), ldc, 128);
    EXPECT_TRUE(same_bits(out, requested)) << "ya k=" << c.k << " m=" << c.m;
    backend::cpu::wide_emulated::xat(c.k, c.m, c.n, x.data(), padded, a.data(), lda, T(0), out_t.data(), ldc, {});
    EXPECT_LE(relative_difference(out, want, c.k, c.n, ldc), tolerance<T>()) << "ya k=" << c.k << " m=" << c.m;
    EXPECT_LE(relative_difference(out_t, want_t, c.k, c.m, ldc), tolerance<T>()) << "xat k=" << c.k << " m=" << c.m;
  }
}

// The AVX2 entry points called directly (an AVX-512 machine otherwise runs only the 512-bit ones) on packed
// operands: WᵀA without requests ahead and with them 8 and 64 lines ahead, the same bits, and the float64 loops.
TYPED_TEST(SkinnyTest, Avx2YTimesAMatchesFloat64LoopsWithAndWithoutRequests) {
  using T = TypeParam;
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    GTEST_SKIP() << "this CPU has no AVX2 and FMA: the AVX2 kernels cannot run here";
  const index_t lanes = 32 / static_cast<index_t>(sizeof(T));
  unsigned seed = 3000;
  for (const Case& c : kCases) {
    const index_t padded = (c.k + lanes - 1) / lanes * lanes;
    const index_t lda = c.m + 1, ldc = c.k + 2;
    const auto y = packed_operand<T>(c.k, padded, c.m, seed++);  // Y: k x m
    const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
    const std::vector<double> want = packed_times_a(y, c.k, padded, a, lda, c.m, c.n);
    std::vector<T> unrequested;
    for (const index_t ahead : {index_t{0}, index_t{512}, index_t{4096}}) {
      std::vector<T> out(static_cast<std::size_t>(ldc * c.n), T(0));
      backend::cpu::avx2::ya(c.k, c.m, c.n, y.data(), padded, a.data(), lda, T(0), out.data(), ldc, ahead);
      EXPECT_LE(relative_difference(out, want, c.k, c.n, ldc), tolerance<T>())
          << "k=" << c.k << " m=" << c.m << " ahead=" << ahead;
      if (ahead == 0)
        unrequested = out;
      else
        EXPECT_TRUE(same_bits(out, unrequested)) << "k=" << c.k << " m=" << c.m << " ahead=" << ahead;
    }
  }
}

// The 512-bit kernel for f32 with k <= 8 (emulated): two rows of Y per 16-float vector, interleaved as skinny_ya
// packs them (lane 2p + r = Y(p, 2q + r)), the odd last row added after; on even and odd row counts, column counts
// that leave a partial block, and beta 0 over NaN, 1 and 0.5.
TEST(SkinnyPairs, WideVectorPairsMatchFloat64Loops) {
  constexpr index_t vl = 16;
  unsigned seed = 4000;
  for (const index_t k : {1, 3, 7, 8})
    for (const index_t m : {2, 13, 300})
      for (const index_t n : {1, 5, 37})
        for (const float beta : {0.0f, 1.0f, 0.5f}) {
          const index_t lda = m + 1, ldc = k + 2, pairs = m / 2;
          const auto y = random_values<float>(static_cast<std::size_t>(k * m), seed++);  // k x m
          const auto a = random_values<float>(static_cast<std::size_t>(lda * n), seed++);
          std::vector<float> packed(static_cast<std::size_t>(pairs * vl), 0.0f);
          for (index_t q = 0; q < pairs; ++q)
            for (index_t r = 0; r < 2; ++r)
              for (index_t l = 0; l < k; ++l)
                packed[static_cast<std::size_t>(q * vl + 2 * l + r)] = y[static_cast<std::size_t>(l + (2 * q + r) * k)];
          const auto start = random_values<float>(static_cast<std::size_t>(ldc * n), seed++);
          std::vector<float> out = start;
          if (beta == 0.0f) std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
          backend::cpu::wide_emulated::ya_pairs(k, pairs, n, packed.data(), a.data(), lda, beta, out.data(), ldc);
          if (m % 2 != 0)
            for (index_t j = 0; j < n; ++j)
              for (index_t l = 0; l < k; ++l)
                out[static_cast<std::size_t>(l + j * ldc)] +=
                    y[static_cast<std::size_t>(l + (m - 1) * k)] * a[static_cast<std::size_t>(m - 1 + j * lda)];
          std::vector<double> want(static_cast<std::size_t>(k * n));
          for (index_t j = 0; j < n; ++j)
            for (index_t l = 0; l < k; ++l) {
              double sum =
                  beta == 0.0f ? 0.0 : static_cast<double>(beta) * start[static_cast<std::size_t>(l + j * ldc)];
              for (index_t i = 0; i < m; ++i)
                sum += static_cast<double>(y[static_cast<std::size_t>(l + i * k)]) *
                       static_cast<double>(a[static_cast<std::size_t>(i + j * lda)]);
              want[static_cast<std::size_t>(l + j * k)] = sum;
            }
          EXPECT_LE(relative_difference(out, want, k, n, ldc), 1e-5)
              << "k=" << k << " m=" << m << " n=" << n << " beta=" << beta;
        }
}

// Fetching the caller's next bytes ahead (the fused pass's next tile) changes nothing in the product, whatever the
// size of that range against the product's rows.
TYPED_TEST(SkinnyTest, FetchingAheadGivesTheSameBits) {
  using T = TypeParam;
  unsigned seed = 3000;
  const std::vector<char> next(100000, 1);
  for (const Case& c : kCases) {
    const index_t ldx = c.k, lda = c.m;
    const auto x = random_values<T>(static_cast<std::size_t>(ldx * c.n), seed++);
    const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
    const auto start = random_values<T>(static_cast<std::size_t>(c.k * c.m), seed++);
    auto plain = start;
    backend::cpu::skinny_xat<T>(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, T(1), plain.data(), c.k);
    for (const index_t bytes : {index_t{1}, index_t{64}, index_t{4097}, index_t{100000}}) {
      auto ahead = start;
      backend::cpu::skinny_xat<T>(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, T(1), ahead.data(), c.k,
                                  backend::cpu::Ahead{next.data(), bytes});
      EXPECT_EQ(ahead, plain) << "k=" << c.k << " m=" << c.m << " n=" << c.n << " ahead " << bytes << " bytes";
    }
  }
}

// Entry (i, l) of a panel layout of `panel` rows, written out here for the emulated 512-bit kernels, whose panels
// are not this machine's.
index_t panel_entry(index_t i, index_t l, index_t k, index_t panel) {
  return i / panel * panel * k + l * panel + i % panel;
}

// The transposed product gives skinny_xat's bits, transposed: overwriting (beta 0) and adding (beta 1), with and
// without the next tile requested ahead, on every case the kernels take (k past the lanes, m not a multiple of the
// panel, n past the column block of 192).
TYPED_TEST(SkinnyTest, TransposedProductGivesTheSameBits) {
  using T = TypeParam;
  const index_t panel = backend::cpu::skinny_panel_rows<T>();
  EXPECT_EQ(panel % (backend::cpu::kTransposedVectors), 0);
  unsigned seed = 4000;
  const std::vector<char> next(5000, 1);
  int checked = 0;
  for (const Case& c : kCases) {
    if (!backend::cpu::skinny_pays<T>(c.k)) continue;
    const index_t ldx = c.k + 1, lda = c.m + 3;
    const auto x = random_values<T>(static_cast<std::size_t>(ldx * c.n), seed++);
    const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
    const auto start = random_values<T>(static_cast<std::size_t>(c.k * c.m), seed++);
    const auto size = static_cast<std::size_t>(backend::cpu::skinny_panel_size<T>(c.k, c.m));
    ASSERT_GE(size, static_cast<std::size_t>(c.k * c.m));
    for (const bool overwrite : {true, false}) {
      auto want = start;
      backend::cpu::skinny_xat<T>(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, overwrite ? T(0) : T(1), want.data(),
                                  c.k);
      for (const index_t bytes : {index_t{0}, index_t{4097}}) {
        std::vector<T> got(size, overwrite ? std::numeric_limits<T>::quiet_NaN() : T(0));
        if (!overwrite)
          for (index_t i = 0; i < c.m; ++i)
            for (index_t l = 0; l < c.k; ++l)
              got[to_size(backend::cpu::skinny_panel_entry<T>(i, l, c.k))] = start[l + i * c.k];
        backend::cpu::skinny_xat_transposed<T>(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, got.data(), overwrite,
                                               backend::cpu::Ahead{next.data(), bytes});
        index_t differ = 0;
        for (index_t i = 0; i < c.m; ++i)
          for (index_t l = 0; l < c.k; ++l)
            differ += got[to_size(backend::cpu::skinny_panel_entry<T>(i, l, c.k))] != want[l + i * c.k];
        EXPECT_EQ(differ, 0) << "k=" << c.k << " m=" << c.m << " n=" << c.n << " overwrite=" << overwrite
                             << " ahead=" << bytes;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 20);
}

// The 512-bit transposed product (emulated) against float64 loops, in its own panel layout (3 vectors of rows).
TYPED_TEST(SkinnyTest, WideVectorTransposedProductMatchesFloat64Loops) {
  using T = TypeParam;
  const index_t lanes = 64 / static_cast<index_t>(sizeof(T));
  const index_t panel = backend::cpu::kTransposedVectors * lanes;
  unsigned seed = 5000;
  for (const Case& c : kCases) {
    if (c.k > 4 * lanes) continue;  // where the kernels pay
    const index_t ldx = c.k + 2, lda = c.m + 1;
    const auto x = random_values<T>(static_cast<std::size_t>(ldx * c.n), seed++);
    const auto a = random_values<T>(static_cast<std::size_t>(lda * c.n), seed++);
    std::vector<T> got(static_cast<std::size_t>((c.m + panel - 1) / panel * panel * c.k), T(1));
    backend::cpu::wide_emulated::xat_transposed(c.k, c.m, c.n, x.data(), ldx, a.data(), lda, got.data(), false, {});
    std::vector<T> out(static_cast<std::size_t>(c.k * c.m));
    std::vector<double> want(out.size());
    for (index_t i = 0; i < c.m; ++i)
      for (index_t l = 0; l < c.k; ++l) {
        double s = 1.0;  // added to what Dt held
        for (index_t j = 0; j < c.n; ++j) s += static_cast<double>(x[l + j * ldx]) * a[i + j * lda];
        want[to_size(l + i * c.k)] = s;
        out[to_size(l + i * c.k)] = got[to_size(panel_entry(i, l, c.k, panel))];
      }
    EXPECT_LE(relative_difference(out, want, c.k, c.m, c.k), tolerance<T>()) << "k=" << c.k << " m=" << c.m;
  }
}

// The block width callers cut their tiles by: a whole number of blocks fills the kernel's accumulator registers.
TYPED_TEST(SkinnyTest, BlockColumnsFillTheAccumulators) {
  using T = TypeParam;
  for (index_t k = 1; k <= backend::cpu::kSkinnyMaxRank; ++k) {
    const index_t block = backend::cpu::skinny_block_columns<T>(k);
    if (!backend::cpu::skinny_pays<T>(k)) {
      EXPECT_EQ(block, 1) << "k=" << k;
      continue;
    }
    EXPECT_GE(block, backend::cpu::kAccumulators / 4) << "k=" << k;
    EXPECT_EQ(backend::cpu::kAccumulators % block, 0) << "k=" << k;
  }
  EXPECT_EQ(backend::cpu::skinny_block_columns<T>(0), 1);
  EXPECT_EQ(backend::cpu::skinny_block_columns<T>(backend::cpu::kSkinnyMaxRank + 1), 1);
}

TYPED_TEST(SkinnyTest, RanksAboveTheLimitAreRefused) {
  using T = TypeParam;
  EXPECT_FALSE(backend::cpu::skinny_takes(backend::cpu::kSkinnyMaxRank + 1));
  EXPECT_FALSE(backend::cpu::skinny_takes(0));
  std::vector<T> buffer(65 * 4, T(1));
  EXPECT_THROW(backend::cpu::skinny_ya<T>(65, 2, 2, buffer.data(), 65, buffer.data(), 2, T(0), buffer.data(), 65),
               UsageError);
}

// The fused pass (numerator, update, other side's accumulation) on the cpu backend, whose dense products are now
// the skinny kernels, against the reference backend for every rank the issue names.
TYPED_TEST(SkinnyTest, FusedPassMatchesReference) {
  using T = TypeParam;
  for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp}) {
    for (const index_t k : {1, 7, 16, 33, 64}) {
      const index_t m = 203, n = 157;
      const DenseMatrix<T> a = test::random_dense<T>(m, n, 40 + k);
      const DenseMatrix<T> wt = test::random_dense<T>(k, m, 41 + k);
      const DenseMatrix<T> h0 = test::random_dense<T>(k, n, 42 + k);
      backend::ReferenceKernels<T> ref;
      backend::CpuKernels<T> cpu;
      cpu.set_tile_bytes(16.0 * 1024);  // several tiles of A
      DenseMatrix<T> gy(k, k), ysum(k, 1);
      ref.gram(wt.view(), gy.view(), T(0));
      ref.row_sums(wt.view(), ysum.data());
      const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0.0, 0.0);
      DenseMatrix<T> h_ref = h0, h_cpu = h0, other_ref(k, m), other_cpu(k, m), gx_ref(k, k), gx_cpu(k, k);
      // Without `accumulate` the pass overwrites other_numer (the dense products' first tile writes it).
      std::fill(other_cpu.data(), other_cpu.data() + k * m, std::numeric_limits<T>::quiet_NaN());
      const MatrixRef<T> ar{a.view()};
      ASSERT_EQ(cpu.fused_side(ar), backend::Side::H);
      const auto s_ref = ref.fused_pass(ar, backend::Side::H, rule, h_ref.view(), wt.view(), gy.view(), ysum.data(),
                                        other_ref.view(), gx_ref.view(), false);
      const auto s_cpu = cpu.fused_pass(ar, backend::Side::H, rule, h_cpu.view(), wt.view(), gy.view(), ysum.data(),
                                        other_cpu.view(), gx_cpu.view(), false);
      const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-11;
      const std::string what = to_string(algo) + " k=" + std::to_string(k);
      EXPECT_LE(test::max_relative_difference(h_cpu, h_ref), tol) << what;
      EXPECT_LE(test::max_relative_difference(other_cpu, other_ref), tol) << what;
      EXPECT_LE(test::max_relative_difference(gx_cpu, gx_ref), tol) << what;
      EXPECT_NEAR(s_cpu.cross, s_ref.cross, tol * std::abs(s_ref.cross)) << what;
      // A second pass with `accumulate` adds its products to what other_numer holds.
      static_cast<void>(ref.fused_pass(ar, backend::Side::H, rule, h_ref.view(), wt.view(), gy.view(), ysum.data(),
                                       other_ref.view(), gx_ref.view(), true));
      static_cast<void>(cpu.fused_pass(ar, backend::Side::H, rule, h_cpu.view(), wt.view(), gy.view(), ysum.data(),
                                       other_cpu.view(), gx_cpu.view(), true));
      EXPECT_LE(test::max_relative_difference(other_cpu, other_ref), tol) << what << " accumulated";
      EXPECT_LE(test::max_relative_difference(gx_cpu, gx_ref), tol) << what << " accumulated";
    }
  }
}

}  // namespace
}  // namespace dnmf
