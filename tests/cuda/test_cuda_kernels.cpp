// Every cuda kernel against the reference backend (as tests/unit/test_kernels.cpp does for cpu), on random
// shapes including empty and one-wide ones, dense and CSR, whole matrices and tiles of them; the fused
// pass, ours and the generic one; and whole factorisations against the cpu backend. Without a visible
// device (or without CUDA in the build) every test skips and says why.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include "backend/kernels.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "backend/tiles.hpp"
#include "cuda/device_matrix.hpp"
#include "cuda_presence.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/update_rule.hpp"
#include "support/random_matrices.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_query.hpp"
#endif

namespace dnmf {

// Readable parameters in test names (GoogleTest finds this by argument-dependent lookup).
void PrintTo(Algorithm a, std::ostream* os) { *os << to_string(a); }

namespace {

using backend::Side;
using test::BackendMatrix;

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

// KL sums are float64 either way, but the model they use is formed in T on the GPU.
template <class T>
double sums_tolerance() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-10;
}

struct Shape {
  index_t m, n, k;
};

// k = 70 takes HALS past the shared-memory Gram matrix (k <= 64).
const Shape kShapes[] = {{37, 29, 5}, {1, 17, 3}, {23, 1, 4},    {40, 33, 1},
                         {0, 7, 3},   {9, 0, 2},  {64, 130, 16}, {120, 90, 70}};

std::string describe(const std::string& layout, const Shape& s, Side side) {
  std::ostringstream os;
  os << layout << " m=" << s.m << " n=" << s.n << " k=" << s.k << " side=" << (side == Side::H ? "H" : "W");
  return os.str();
}

using test::why_no_cuda;

template <class T>
class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = why_no_cuda();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    gpu_ = backend::make_kernels<T>(BackendKind::cuda);
  }
  backend::Kernels<T>& gpu() { return *gpu_; }
  backend::ReferenceKernels<T> ref;

 private:
  std::unique_ptr<backend::Kernels<T>> gpu_;
};

using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaKernelsTest, Precisions);

// Runs check(host A, the same A resident on the GPU, name) on the dense and CSR forms of one random matrix
// (with zeros, so CSR rows vary) and on parts of it as tiles hand them over: column and row ranges of the
// dense matrix (the latter strided) and CSR row ranges whose offsets do not start at zero, both of a
// resident matrix and uploaded on their own.
template <class T, class F>
void for_each_layout(backend::Kernels<T>& gpu, const Shape& s, std::uint64_t seed, F&& check) {
  const DenseMatrix<T> dense = test::random_dense<T>(s.m, s.n, seed, 0.4);
  const CsrMatrix<T> csr = test::to_csr(dense);
  const MatrixRef<T> host_dense{dense.view()};
  const MatrixRef<T> host_csr{csr.view()};
  const MatrixRef<T> dev_dense = gpu.make_resident(host_dense);
  const MatrixRef<T> dev_csr = gpu.make_resident(host_csr);
  check(host_dense, dev_dense, std::string("dense"));
  check(host_csr, dev_csr, std::string("csr"));
  if (s.m < 3 || s.n < 3) return;
  const index_t r0 = s.m / 3, r1 = s.m - 1, c0 = s.n / 3, c1 = s.n - 1;
  check(backend::tile_of(host_dense, Side::H, c0, c1), backend::tile_of(dev_dense, Side::H, c0, c1),
        std::string("dense column range"));
  check(backend::tile_of(host_dense, Side::W, r0, r1), backend::tile_of(dev_dense, Side::W, r0, r1),
        std::string("dense row range"));
  const MatrixRef<T> host_rows = backend::tile_of(host_csr, Side::W, r0, r1);
  check(host_rows, backend::tile_of(dev_csr, Side::W, r0, r1), std::string("csr row range of a resident matrix"));
  check(host_rows, gpu.make_resident(host_rows), std::string("csr row range made resident"));
}

TYPED_TEST(CudaKernelsTest, MultiplyMatchesReferenceBothSidesAndBetas) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  std::uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    ++seed;
    for_each_layout<T>(gpu, s, seed, [&](const MatrixRef<T>& host, const MatrixRef<T>& dev, const std::string& layout) {
      for (Side side : {Side::H, Side::W}) {
        const index_t inner = side == Side::H ? rows_of(host) : cols_of(host);
        const index_t outer = side == Side::H ? cols_of(host) : rows_of(host);
        const DenseMatrix<T> y = test::random_dense<T>(s.k, inner, seed + 100);
        const BackendMatrix<T> y_dev(gpu, y);
        for (T beta : {T(0), T(1), T(0.5)}) {
          // beta = 0 must not read out: start from NaN there.
          DenseMatrix<T> out_ref = beta == T(0) ? DenseMatrix<T>(s.k, outer, std::numeric_limits<T>::quiet_NaN())
                                                : test::random_dense<T>(s.k, outer, seed + 200);
          const BackendMatrix<T> out_dev(gpu, out_ref);
          this->ref.multiply(host, side, y.view(), out_ref.view(), beta);
          gpu.multiply(dev, side, y_dev.view(), out_dev.view(), beta);
          EXPECT_LE(test::max_relative_difference(out_dev.download(), out_ref), tolerance<T>())
              << describe(layout, s, side) << " beta=" << beta;
        }
      }
    });
  }
}

TYPED_TEST(CudaKernelsTest, KlMultiplyMatchesReference) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  std::uint64_t seed = 7;
  for (const Shape& s : kShapes) {
    ++seed;
    for_each_layout<T>(gpu, s, seed, [&](const MatrixRef<T>& host, const MatrixRef<T>& dev, const std::string& layout) {
      const DenseMatrix<T> wt = test::random_dense<T>(s.k, rows_of(host), seed + 1);
      const DenseMatrix<T> h = test::random_dense<T>(s.k, cols_of(host), seed + 2);
      const BackendMatrix<T> wt_dev(gpu, wt), h_dev(gpu, h);
      for (Side side : {Side::H, Side::W}) {
        for (T beta : {T(0), T(1)}) {
          const auto& y = side == Side::H ? wt : h;
          const auto& x = side == Side::H ? h : wt;
          const auto& y_dev = side == Side::H ? wt_dev : h_dev;
          const auto& x_dev = side == Side::H ? h_dev : wt_dev;
          const index_t outer = side == Side::H ? cols_of(host) : rows_of(host);
          DenseMatrix<T> out_ref = test::random_dense<T>(s.k, outer, seed + 3);
          const BackendMatrix<T> out_dev(gpu, out_ref);
          const auto sr = this->ref.kl_multiply(host, side, y.view(), x.view(), out_ref.view(), beta);
          const auto sc = gpu.kl_multiply(dev, side, y_dev.view(), x_dev.view(), out_dev.view(), beta);
          const std::string what = describe(layout, s, side);
          EXPECT_LE(test::max_relative_difference(out_dev.download(), out_ref), tolerance<T>()) << what;
          EXPECT_NEAR(sc.a_times_m, sr.a_times_m, sums_tolerance<T>() * (1 + std::abs(sr.a_times_m))) << what;
          EXPECT_NEAR(sc.a_log_a_over_m, sr.a_log_a_over_m, sums_tolerance<T>() * (1 + std::abs(sr.a_log_a_over_m)))
              << what;
        }
      }
    });
  }
}

TYPED_TEST(CudaKernelsTest, FactorSizedKernelsMatchReference) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  for (const Shape& s : kShapes) {
    const DenseMatrix<T> x = test::random_dense<T>(s.k, s.n, 11);
    const DenseMatrix<T> y = test::random_dense<T>(s.k, s.n, 12);
    const BackendMatrix<T> x_dev(gpu, x), y_dev(gpu, y);
    for (T beta : {T(0), T(1)}) {
      DenseMatrix<T> g_ref = test::random_dense<T>(s.k, s.k, 13);
      for (index_t q = 0; q < s.k; ++q)  // gram() accumulates into a symmetric matrix
        for (index_t p = q + 1; p < s.k; ++p) g_ref(p, q) = g_ref(q, p);
      const BackendMatrix<T> g_dev(gpu, g_ref);
      this->ref.gram(x.view(), g_ref.view(), beta);
      gpu.gram(x_dev.view(), g_dev.view(), beta);
      const DenseMatrix<T> g = g_dev.download();
      EXPECT_LE(test::max_relative_difference(g, g_ref), tolerance<T>()) << "gram n=" << s.n << " k=" << s.k;
      for (index_t q = 0; q < s.k; ++q)
        for (index_t p = q + 1; p < s.k; ++p) ASSERT_EQ(g(p, q), g(q, p)) << "gram is not exactly symmetric";
    }
    EXPECT_NEAR(gpu.dot(x_dev.view(), y_dev.view()), this->ref.dot(x.view(), y.view()),
                tolerance<T>() * (1 + s.k * s.n));
    DenseMatrix<T> sums_ref(s.k, 1);
    const BackendMatrix<T> sums_dev(gpu, sums_ref);
    this->ref.row_sums(x.view(), sums_ref.data());
    gpu.row_sums(x_dev.view(), sums_dev.data());
    EXPECT_LE(test::max_relative_difference(sums_dev.download(), sums_ref), tolerance<T>());
    const BackendMatrix<T> filled(gpu, x);
    gpu.fill(filled.view().columns(0, s.n / 2), T(2.5));
    DenseMatrix<T> fill_ref = x;
    this->ref.fill(fill_ref.view().columns(0, s.n / 2), T(2.5));
    EXPECT_EQ(filled.download().storage(), fill_ref.storage());
  }
}

TYPED_TEST(CudaKernelsTest, UpdateRulesMatchReference) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  for (Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    for (const Shape& s : kShapes) {
      for (const backend::UpdateRule rule :
           {solvers::update_rule(algo, 1e-16, 0.0, 0.0), solvers::update_rule(algo, 1e-16, 0.01, 0.02)}) {
        const DenseMatrix<T> numer = test::random_dense<T>(s.k, s.n, 21);
        const DenseMatrix<T> y = test::random_dense<T>(s.k, s.m + 3, 22);
        DenseMatrix<T> g(s.k, s.k), sums(s.k, 1);
        this->ref.gram(y.view(), g.view(), T(0));
        this->ref.row_sums(y.view(), sums.data());
        DenseMatrix<T> x_ref = test::random_dense<T>(s.k, s.n, 23);
        const BackendMatrix<T> x_dev(gpu, x_ref), numer_dev(gpu, numer), g_dev(gpu, g), sums_dev(gpu, sums);
        this->ref.update(rule, x_ref.view(), numer.view(), g.view(), sums.data());
        gpu.update(rule, x_dev.view(), numer_dev.view(), g_dev.view(), sums_dev.data());
        const DenseMatrix<T> x_gpu = x_dev.download();
        EXPECT_LE(test::max_relative_difference(x_gpu, x_ref), tolerance<T>())
            << to_string(algo) << " n=" << s.n << " k=" << s.k << " l1=" << rule.l1;
        for (T v : x_gpu.storage()) ASSERT_TRUE(v >= T(0)) << to_string(algo);
      }
    }
  }
}

// Which fused pass to run on the GPU: the backend's own (one tile) or the generic tiled one of the base class.
enum class Pass { own, generic };

TYPED_TEST(CudaKernelsTest, FusedPassesMatchReference) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  for (Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    for (const Shape& s : kShapes) {
      if (s.m == 0 || s.n == 0) continue;
      for_each_layout<T>(gpu, s, 31, [&](const MatrixRef<T>& host, const MatrixRef<T>& dev, const std::string& layout) {
        // Only whole matrices and the tiles a fused pass itself would take.
        const Side side = gpu.fused_side(dev);
        if (layout.find("range") != std::string::npos) return;
        const index_t dx = side == Side::H ? cols_of(host) : rows_of(host);
        const index_t dy = side == Side::H ? rows_of(host) : cols_of(host);
        const DenseMatrix<T> y = test::random_dense<T>(s.k, dy, 32);
        DenseMatrix<T> gy(s.k, s.k), ysum(s.k, 1);
        this->ref.gram(y.view(), gy.view(), T(0));
        this->ref.row_sums(y.view(), ysum.data());
        const BackendMatrix<T> y_dev(gpu, y), gy_dev(gpu, gy), ysum_dev(gpu, ysum);
        DenseMatrix<T> x_ref = test::random_dense<T>(s.k, dx, 33);
        DenseMatrix<T> other_ref(s.k, dy, T(7)), gx_ref(s.k, s.k, T(3));
        const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0.0, 0.0);
        const BackendMatrix<T> x_own(gpu, x_ref), other_own(gpu, other_ref), gx_own(gpu, gx_ref);
        const BackendMatrix<T> x_gen(gpu, x_ref), other_gen(gpu, other_ref), gx_gen(gpu, gx_ref);
        const auto sr = this->ref.fused_pass(host, side, rule, x_ref.view(), y.view(), gy.view(), ysum.data(),
                                             other_ref.view(), gx_ref.view(), false);
        const auto so = gpu.fused_pass(dev, side, rule, x_own.view(), y_dev.view(), gy_dev.view(), ysum_dev.data(),
                                       other_own.view(), gx_own.view(), false);
        const auto sg = gpu.backend::Kernels<T>::fused_pass(dev, side, rule, x_gen.view(), y_dev.view(), gy_dev.view(),
                                                            ysum_dev.data(), other_gen.view(), gx_gen.view(), false);
        const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-11;
        for (Pass pass : {Pass::own, Pass::generic}) {
          const std::string what = describe(layout, s, side) + " " + to_string(algo) +
                                   (pass == Pass::own ? " (own pass)" : " (generic pass)");
          const auto& x_dev = pass == Pass::own ? x_own : x_gen;
          const auto& other_dev = pass == Pass::own ? other_own : other_gen;
          const auto& gx_dev = pass == Pass::own ? gx_own : gx_gen;
          const auto& sums = pass == Pass::own ? so : sg;
          EXPECT_LE(test::max_relative_difference(x_dev.download(), x_ref), tol) << what;
          EXPECT_LE(test::max_relative_difference(other_dev.download(), other_ref), tol) << what;
          EXPECT_LE(test::max_relative_difference(gx_dev.download(), gx_ref), tol) << what;
          EXPECT_NEAR(sums.cross, sr.cross, tol * (1 + std::abs(sr.cross))) << what;
          EXPECT_NEAR(sums.kl_numer.a_times_m, sr.kl_numer.a_times_m, tol * (1 + std::abs(sr.kl_numer.a_times_m)))
              << what;
          EXPECT_NEAR(sums.kl_accum.a_times_m, sr.kl_accum.a_times_m, tol * (1 + std::abs(sr.kl_accum.a_times_m)))
              << what;
          EXPECT_NEAR(sums.kl_accum.a_log_a_over_m, sr.kl_accum.a_log_a_over_m,
                      tol * (1 + std::abs(sr.kl_accum.a_log_a_over_m)))
              << what;
        }
      });
    }
  }
}

TYPED_TEST(CudaKernelsTest, StatsMatchReference) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  for (const Shape& s : kShapes)
    for_each_layout<T>(gpu, s, 41, [&](const MatrixRef<T>& host, const MatrixRef<T>& dev, const std::string& layout) {
      const auto r = this->ref.stats(host);
      const auto c = gpu.stats(dev);
      EXPECT_NEAR(c.sum, r.sum, 1e-9 * (1 + r.sum)) << layout;
      EXPECT_NEAR(c.squared_norm, r.squared_norm, 1e-9 * (1 + r.squared_norm)) << layout;
    });
}

TYPED_TEST(CudaKernelsTest, CopiesRoundTrip) {
  using T = TypeParam;
  auto& gpu = this->gpu();
  const DenseMatrix<T> x = test::random_dense<T>(13, 11, 51);
  const BackendMatrix<T> x_dev(gpu, x);
  EXPECT_EQ(x_dev.download().storage(), x.storage());
  T* zeros = gpu.allocate(40);
  std::vector<T> back(40, T(9));
  gpu.copy_to_host(zeros, back.data(), back.size());
  gpu.deallocate(zeros);
  EXPECT_EQ(back, std::vector<T>(40, T(0))) << "allocate() must zero-fill";
}

#if DNMF_WITH_CUDA
// Dense KL in many model tiles (one column each) gives what one tile gives: sums and products accumulate.
TEST(CudaKlTiles, ManyTilesMatchReference) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  backend::CudaKernels<double> gpu;
  gpu.set_kl_tile_bytes(1);
  backend::ReferenceKernels<double> ref;
  const DenseMatrix<double> a = test::random_dense<double>(31, 27, 81, 0.3);
  const DenseMatrix<double> wt = test::random_dense<double>(4, 31, 82);
  const DenseMatrix<double> h = test::random_dense<double>(4, 27, 83);
  const MatrixRef<double> host{a.view()};
  const MatrixRef<double> dev = gpu.make_resident(host);
  const BackendMatrix<double> wt_dev(gpu, wt), h_dev(gpu, h);
  for (Side side : {Side::H, Side::W}) {
    const auto& y = side == Side::H ? wt : h;
    const auto& x = side == Side::H ? h : wt;
    DenseMatrix<double> out_ref = test::random_dense<double>(4, side == Side::H ? 27 : 31, 84);
    const BackendMatrix<double> out_dev(gpu, out_ref);
    const auto sr = ref.kl_multiply(host, side, y.view(), x.view(), out_ref.view(), 0.5);
    const auto sc = gpu.kl_multiply(dev, side, (side == Side::H ? wt_dev : h_dev).view(),
                                    (side == Side::H ? h_dev : wt_dev).view(), out_dev.view(), 0.5);
    EXPECT_LE(test::max_relative_difference(out_dev.download(), out_ref), 1e-12);
    EXPECT_NEAR(sc.a_times_m, sr.a_times_m, 1e-10 * (1 + std::abs(sr.a_times_m)));
    EXPECT_NEAR(sc.a_log_a_over_m, sr.a_log_a_over_m, 1e-10 * (1 + std::abs(sr.a_log_a_over_m)));
  }
}

// TF32 only changes float products, and by about 1e-3 relative at most on these sizes.
TEST(CudaTf32, FloatProductsStayClose) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  backend::CudaKernels<float> gpu;
  gpu.set_tf32(true);
  backend::ReferenceKernels<float> ref;
  const DenseMatrix<float> a = test::random_dense<float>(300, 200, 61);
  const DenseMatrix<float> y = test::random_dense<float>(16, 300, 62);
  DenseMatrix<float> out_ref(16, 200);
  const BackendMatrix<float> y_dev(gpu, y), out_dev(gpu, out_ref);
  ref.multiply(MatrixRef<float>{a.view()}, Side::H, y.view(), out_ref.view(), 0.0f);
  gpu.multiply(gpu.make_resident(MatrixRef<float>{a.view()}), Side::H, y_dev.view(), out_dev.view(), 0.0f);
  EXPECT_LE(test::max_relative_difference(out_dev.download(), out_ref), 5e-3);
}
#endif

// Whole factorisations: the cuda backend against the cpu backend, 30 iterations in float64.
class CudaFactorizeTest : public ::testing::TestWithParam<Algorithm> {
 protected:
  void SetUp() override {
    const std::string why = why_no_cuda();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
  }
};

TEST_P(CudaFactorizeTest, MatchesCpuBackendOver30Iterations) {
  const DenseMatrix<double> dense = test::random_dense<double>(70, 55, 71, 0.3);
  const CsrMatrix<double> csr = test::to_csr(dense);
  for (const MatrixRef<double>& a : {MatrixRef<double>{dense.view()}, MatrixRef<double>{csr.view()}}) {
    const char* layout = is_sparse(a) ? "csr" : "dense";
    for (bool fused : {true, false}) {
      FactorOptions o;
      o.rank = 6;
      o.algorithm = GetParam();
      o.max_iterations = 30;
      o.tol = 0;
      o.seed = 3;
      o.fused = fused;
      o.backend = BackendKind::cpu;
      const FactorResult<double> cpu = factorize<double>(a, o);
      o.backend = BackendKind::cuda;
      const FactorResult<double> gpu = factorize<double>(a, o);
      const std::string what = std::string(layout) + " " + to_string(GetParam()) + (fused ? " fused" : " two-pass");
      EXPECT_EQ(gpu.backend, "cuda") << what;
      ASSERT_EQ(gpu.iterations, 30) << what;
      EXPECT_LE(test::max_relative_difference(gpu.W, cpu.W), 1e-8) << what;
      EXPECT_LE(test::max_relative_difference(gpu.H, cpu.H), 1e-8) << what;
      EXPECT_NEAR(gpu.rel_error, cpu.rel_error, 1e-8) << what;
      for (std::size_t i = 0; i < cpu.rel_error_history.size(); ++i)
        ASSERT_NEAR(gpu.rel_error_history[i], cpu.rel_error_history[i], 1e-8) << what << " iteration " << i + 1;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, CudaFactorizeTest,
                         ::testing::Values(Algorithm::mu, Algorithm::kl, Algorithm::hals),
                         [](const ::testing::TestParamInfo<Algorithm>& info) { return to_string(info.param); });

// Without a device, asking for the backend is a clear error rather than a crash (runs where there is none).
TEST(CudaBackend, NoDeviceIsAClearError) {
  if (why_no_cuda().empty()) GTEST_SKIP() << "a CUDA device is visible; nothing to check";
  try {
    (void)backend::make_kernels<double>(BackendKind::cuda);
    FAIL() << "make_kernels(cuda) succeeded without a device";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("--backend cuda: ", 0), 0u) << message;
#if DNMF_WITH_CUDA
    EXPECT_NE(message.find("no CUDA device is visible (cudaGetDeviceCount: "), std::string::npos) << message;
#endif
  }
}

}  // namespace
}  // namespace dnmf
