// Every operation of the CUDA backend::MaskedDevice against the host implementation (the stand-in the driver's
// CPU tests run on), on odd shapes, in f32 and f64: the same inputs through both, outputs and sums compared
// (relative 1e-12 in f64, 1e-5 in f32: the kernels compute the host's expressions in the same order, and
// differ only where the GPU fuses a multiply and an add). Without a visible device (or without CUDA in the
// build) every test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/kernels.hpp"
#include "backend/masked_device.hpp"
#include "backend/update_rules.hpp"
#include "cuda_presence.hpp"

namespace dnmf {
namespace {

using test::why_no_cuda;

template <class T>
constexpr double bound() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T>
std::vector<T> random_values(std::size_t count, unsigned seed, double zero_share = 0.0, double low = 0.0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> v(count);
  for (auto& x : v) x = static_cast<T>(u(engine) < zero_share ? 0.0 : low + u(engine));
  return v;
}

// |x - y| / max |y| over the entries.
template <class T>
double rel_diff(const std::vector<T>& x, const std::vector<T>& y) {
  double diff = 0, scale = 0;
  for (std::size_t e = 0; e < y.size(); ++e) {
    diff = std::max(diff, std::abs(static_cast<double>(x[e]) - static_cast<double>(y[e])));
    scale = std::max(scale, std::abs(static_cast<double>(y[e])));
  }
  return scale > 0 ? diff / scale : diff;
}

// One device and its buffers: host vectors go up, results come down.
template <class T>
class Side {
 public:
  explicit Side(std::unique_ptr<backend::MaskedDevice<T>> d) : dev(std::move(d)) {}
  ~Side() {
    for (T* p : buffers_) dev->deallocate(p);
    for (index_t* p : indices_) dev->deallocate_indices(p);
  }
  Side(const Side&) = delete;
  Side& operator=(const Side&) = delete;
  T* put(const std::vector<T>& host) {
    T* p = dev->allocate(host.size());
    buffers_.push_back(p);
    dev->upload(host.data(), p, host.size());
    return p;
  }
  index_t* put_indices(const std::vector<index_t>& host) {
    index_t* p = dev->allocate_indices(host.size());
    indices_.push_back(p);
    dev->upload_indices(host.data(), p, host.size());
    return p;
  }
  std::vector<T> get(const T* p, std::size_t count) {
    std::vector<T> host(count);
    dev->download(p, host.data(), count);
    return host;
  }
  std::unique_ptr<backend::MaskedDevice<T>> dev;

 private:
  std::vector<T*> buffers_;
  std::vector<index_t*> indices_;
};

template <class T>
class CudaMaskedOps : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = why_no_cuda();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    gpu = std::make_unique<Side<T>>(backend::make_masked_device<T>(BackendKind::cuda));
    host = std::make_unique<Side<T>>(backend::make_host_masked_device<T>());
    ASSERT_EQ(gpu->dev->name(), "cuda");
  }
  std::unique_ptr<Side<T>> gpu, host;
};

using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaMaskedOps, Types);

constexpr index_t kM = 37, kN = 29;  // odd sizes: no multiple of a warp or a block

// The elementwise steps and their sums (the MU/KL ones too): weight, kl_ratio, residual, multiplicative,
// sum_squares, dot, square, weighted_residual.
TYPED_TEST(CudaMaskedOps, ElementwiseStepsAndSums) {
  using T = TypeParam;
  const std::size_t count = kM * kN;
  const auto w = random_values<T>(count, 1, 0.2);  // a fifth missing
  auto wa = random_values<T>(count, 2, 0.0, 0.1);
  for (std::size_t e = 0; e < count; ++e)
    wa[e] = static_cast<T>(static_cast<double>(wa[e]) * static_cast<double>(w[e]));
  wa[3] = T(0);                                          // an observed zero: its ratio is 0 and it adds no log term
  const auto q = random_values<T>(count, 3, 0.05, 0.1);  // some exact zeros: the model floor
  const auto run = [&](Side<T>& s) {
    std::vector<std::vector<T>> out;
    std::vector<double> sums;
    T* dwa = s.put(wa);
    T* dw = s.put(w);
    T* dq = s.put(q);
    s.dev->weight(dw, dq, count);
    out.push_back(s.get(dq, count));
    dq = s.put(q);
    const backend::MaskedSums kl = s.dev->kl_ratio(dwa, dw, dq, count);
    sums.insert(sums.end(), {kl.first, kl.second});
    out.push_back(s.get(dq, count));
    dq = s.put(q);
    sums.push_back(s.dev->residual(dwa, dw, dq, count));
    T* dx = s.put(q);
    s.dev->multiplicative(dx, dwa, dw, count, 0.01, 0.02, 1e-9);
    out.push_back(s.get(dx, count));
    const backend::MaskedSums sq = s.dev->sum_squares(dq, count);
    sums.insert(sums.end(), {sq.first, sq.second, s.dev->dot(dq, dwa, count)});
    T* dsq = s.put(q);
    s.dev->square(dq, dsq, count);
    out.push_back(s.get(dsq, count));
    s.dev->weighted_residual(dwa, dw, dq, count);
    out.push_back(s.get(dq, count));
    return std::pair{out, sums};
  };
  const auto [g_out, g_sums] = run(*this->gpu);
  const auto [h_out, h_sums] = run(*this->host);
  for (std::size_t t = 0; t < h_out.size(); ++t) EXPECT_LE(rel_diff(g_out[t], h_out[t]), bound<T>()) << "output " << t;
  for (std::size_t t = 0; t < h_sums.size(); ++t)
    EXPECT_NEAR(g_sums[t], h_sums[t], bound<T>() * std::abs(h_sums[t])) << "sum " << t;
}

// HALS: one coordinate of every column (strided x and den, a dead component, an l2 that revives it) and the
// weighted rank-one update in both orientations.
TYPED_TEST(CudaMaskedOps, HalsCoordinateAndRankOne) {
  using T = TypeParam;
  const index_t k = 5, cols = kN;
  auto x = random_values<T>(to_size(k * cols), 4);
  const auto num = random_values<T>(to_size(cols), 5, 0.0, -0.6);  // both signs: some steps hit zero
  auto den = random_values<T>(to_size(k * cols), 6, 0.0, 0.2);
  den[to_size(2 + 3 * k)] = T(0);  // a dead component in column 3 (coordinate 2)
  const auto w = random_values<T>(to_size(kM * kN), 7, 0.3);
  const auto e0 = random_values<T>(to_size(kM * kN), 8, 0.0, -0.5);
  auto u = random_values<T>(to_size(k * kM), 9);
  auto v = random_values<T>(to_size(k * kN), 10, 0.3);  // zero deltas: columns left untouched
  for (const double l2 : {0.0, 0.05}) {
    SCOPED_TRACE("l2 " + std::to_string(l2));
    const auto run = [&](Side<T>& s) {
      T* dx = s.put(x);
      T* dnum = s.put(num);
      T* dden = s.put(den);
      T* ddelta = s.put(std::vector<T>(to_size(cols)));
      s.dev->hals_coordinate(dx + 2, k, dnum, dden + 2, k, ddelta, cols, 0.01, l2, 1e-16);
      T* de = s.put(e0);
      T* dw = s.put(w);
      T* du = s.put(u);
      T* dv = s.put(v);
      s.dev->weighted_rank_one(de, dw, kM, kN, du + 1, k, dv + 3, k);
      s.dev->weighted_rank_one(de, dw, kM, kN, dv + 3, 1, du + 2, k);
      return std::vector{s.get(dx, x.size()), s.get(ddelta, to_size(cols)), s.get(de, e0.size())};
    };
    const auto g = run(*this->gpu);
    const auto h = run(*this->host);
    for (std::size_t t = 0; t < h.size(); ++t) EXPECT_LE(rel_diff(g[t], h[t]), bound<T>()) << "output " << t;
    // The dead component stayed where it was unless l2 revived it.
    if (l2 == 0) {
      EXPECT_EQ(g[0][to_size(2 + 3 * k)], x[to_size(2 + 3 * k)]);
    }
  }
}

// BPP: the packed pair products, for k = 1, 5 and 33 (more pairs than a warp).
TYPED_TEST(CudaMaskedOps, PairProducts) {
  using T = TypeParam;
  for (const index_t k : {index_t{1}, index_t{5}, index_t{33}}) {
    SCOPED_TRACE("k " + std::to_string(k));
    const auto y = random_values<T>(to_size(k * kM), 11);
    const std::size_t out = to_size(k * (k + 1) / 2 * kM);
    const auto run = [&](Side<T>& s) {
      T* dy = s.put(y);
      T* dout = s.put(std::vector<T>(out));
      s.dev->pair_products(dy, k, kM, dout);
      return s.get(dout, out);
    };
    const auto g = run(*this->gpu);
    EXPECT_LE(rel_diff(g, run(*this->host)), bound<T>());
    // Spot check against the definition: pair (1, 3) of column 7 is y_1 y_3.
    if (k == 5) {
      EXPECT_NEAR(static_cast<double>(g[to_size(7 * 15 + 3 * 4 / 2 + 1)]),
                  static_cast<double>(y[to_size(7 * k + 1)]) * static_cast<double>(y[to_size(7 * k + 3)]), 1e-6);
    }
  }
}

// The stored pattern: sampled and sparse products on a CSC pattern with an empty column and a column of more
// entries than a warp has lanes, for k = 3 and 37 (more outputs than lanes).
TYPED_TEST(CudaMaskedOps, StoredPatternProducts) {
  using T = TypeParam;
  const index_t rows = 71, cols = kN;
  std::mt19937_64 engine(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<index_t> ptr{0}, row;
  for (index_t j = 0; j < cols; ++j) {
    for (index_t i = 0; i < rows; ++i)
      if (j != 4 && (j == 9 || u(engine) < 0.3)) row.push_back(i);  // column 4 empty, column 9 full
    ptr.push_back(static_cast<index_t>(row.size()));
  }
  const auto value = random_values<T>(row.size(), 13);
  for (const index_t k : {index_t{3}, index_t{37}}) {
    SCOPED_TRACE("k " + std::to_string(k));
    const auto y = random_values<T>(to_size(k * rows), 14);
    const auto x = random_values<T>(to_size(k * cols), 15);
    const auto run = [&](Side<T>& s) {
      const index_t* dptr = s.put_indices(ptr);
      const index_t* drow = s.put_indices(row);
      T* dy = s.put(y);
      T* dx = s.put(x);
      T* dq = s.put(std::vector<T>(row.size()));
      T* dvalue = s.put(value);
      T* dout = s.put(std::vector<T>(to_size(k * cols), T(-1)));
      s.dev->sampled_product(cols, dptr, drow, dy, dx, k, dq);
      s.dev->sparse_product(cols, dptr, drow, dvalue, dy, k, dout);
      return std::vector{s.get(dq, row.size()), s.get(dout, to_size(k * cols))};
    };
    const auto g = run(*this->gpu);
    const auto h = run(*this->host);
    EXPECT_LE(rel_diff(g[0], h[0]), bound<T>());
    EXPECT_LE(rel_diff(g[1], h[1]), bound<T>());
    // The empty column's products are written (zeros), not left as they were.
    for (index_t l = 0; l < k; ++l) EXPECT_EQ(g[1][to_size(4 * k + l)], T(0));
  }
}

}  // namespace
}  // namespace dnmf
