// The masked iteration on the GPU (--backend cuda with a mask) against the same run on the cpu backend: f64 to
// 1e-10, f32 to 2e-3 (as tests/unit/test_masked.cpp), after 20 iterations from the same start: mu, kl, hals and
// bpp on a dense mask and on a sparse A with --unstored missing (the stored pattern). Without a visible device
// (or without CUDA in the build) every test skips and says why. Their host-side logic (the driver and the
// matrix-form rules) runs on every machine in tests/unit/test_masked_device.cpp and
// test_masked_device_algorithms.cpp; each device operation is compared with the host's in test_cuda_masked_ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/kernels.hpp"
#include "cuda_presence.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/source.hpp"
#include "support/random_matrices.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda/device_query.hpp"
#endif

namespace dnmf {
namespace {

using test::why_no_cuda;

template <class T>
struct Data {
  DenseMatrix<T> a, weight, w0, h0;
};

// A random positive 300 x 200 matrix with 10% missing and some weights 0.5 and 2; rank-6 starts.
template <class T>
Data<T> make_data() {
  std::mt19937_64 engine(23);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Data<T> d{DenseMatrix<T>(300, 200), DenseMatrix<T>(300, 200), DenseMatrix<T>(300, 6), DenseMatrix<T>(6, 200)};
  for (auto& v : d.a.storage()) v = static_cast<T>(0.1 + u(engine));
  for (auto& v : d.weight.storage()) {
    const double x = u(engine);
    v = static_cast<T>(x < 0.1 ? 0.0 : (x < 0.15 ? 0.5 : (x < 0.2 ? 2.0 : 1.0)));
  }
  for (auto& v : d.w0.storage()) v = static_cast<T>(0.1 + u(engine));
  for (auto& v : d.h0.storage()) v = static_cast<T>(0.1 + u(engine));
  return d;
}

template <class T>
void expect_gpu_matches_cpu(double bound) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  const Data<T> d = make_data<T>();
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    SCOPED_TRACE(to_string(algo));
    FactorOptions o;
    o.rank = 6;
    o.algorithm = algo;
    o.max_iterations = 20;
    o.tol = 0;
    o.init = InitMethod::given;
    o.normalize = false;
    o.missing.mask = Source::dense<T>(d.weight.view());
    const FactorResult<T> cpu = factorize<T>(d.a.view(), o, &d.w0, &d.h0);
    o.backend = BackendKind::cuda;
    const FactorResult<T> gpu = factorize<T>(d.a.view(), o, &d.w0, &d.h0);
    EXPECT_EQ(gpu.backend, "cuda");
    EXPECT_TRUE(gpu.masked);
    EXPECT_LT(test::max_relative_difference(gpu.W, cpu.W), bound);
    EXPECT_LT(test::max_relative_difference(gpu.H, cpu.H), bound);
    ASSERT_EQ(gpu.rel_error_history.size(), cpu.rel_error_history.size());
    for (std::size_t it = 0; it < cpu.rel_error_history.size(); ++it)
      EXPECT_NEAR(gpu.rel_error_history[it], cpu.rel_error_history[it], bound) << "iteration " << it + 1;
    EXPECT_LT(gpu.rel_error_history.back(), gpu.rel_error_history.front());
  }
}

TEST(CudaMasked, DoubleMatchesCpu) { expect_gpu_matches_cpu<double>(1e-10); }
TEST(CudaMasked, FloatMatchesCpu) { expect_gpu_matches_cpu<float>(2e-3); }

// A sparse 300 x 200 with about 30% of its entries stored, all of them observed and no others.
struct Stored {
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<double> values;
  DenseMatrix<double> w0 = DenseMatrix<double>(300, 5), h0 = DenseMatrix<double>(5, 200);
  [[nodiscard]] CsrView<double> view() const { return {300, 200, indptr.data(), indices.data(), values.data()}; }
};

Stored make_stored() {
  std::mt19937_64 engine(31);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Stored s;
  for (index_t i = 0; i < 300; ++i) {
    for (index_t j = 0; j < 200; ++j)
      if (u(engine) < 0.3) {
        s.indices.push_back(static_cast<col_index_t>(j));
        s.values.push_back(0.1 + u(engine));
      }
    s.indptr.push_back(static_cast<index_t>(s.values.size()));
  }
  for (auto& v : s.w0.storage()) v = 0.1 + u(engine);
  for (auto& v : s.h0.storage()) v = 0.1 + u(engine);
  return s;
}

TEST(CudaMasked, UnstoredMissingMatchesCpu) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  const Stored s = make_stored();
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    SCOPED_TRACE(to_string(algo));
    FactorOptions o;
    o.rank = 5;
    o.algorithm = algo;
    o.max_iterations = 20;
    o.tol = 0;
    o.init = InitMethod::given;
    o.normalize = false;
    o.missing.unstored = Unstored::missing;
    const FactorResult<double> cpu = factorize<double>(s.view(), o, &s.w0, &s.h0);
    o.backend = BackendKind::cuda;
    const FactorResult<double> gpu = factorize<double>(s.view(), o, &s.w0, &s.h0);
    EXPECT_EQ(gpu.backend, "cuda");
    EXPECT_EQ(gpu.observed, static_cast<index_t>(s.values.size()));
    EXPECT_LT(test::max_relative_difference(gpu.W, cpu.W), 1e-10);
    EXPECT_LT(test::max_relative_difference(gpu.H, cpu.H), 1e-10);
    ASSERT_EQ(gpu.rel_error_history.size(), cpu.rel_error_history.size());
    for (std::size_t it = 0; it < cpu.rel_error_history.size(); ++it)
      EXPECT_NEAR(gpu.rel_error_history[it], cpu.rel_error_history[it], 1e-10) << "iteration " << it + 1;
  }
}

}  // namespace
}  // namespace dnmf
