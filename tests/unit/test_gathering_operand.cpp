// The CSR operand that keeps A's transpose beside it (backend/gathering_operand.hpp): the transpose of a row
// range, both products and the KL ratio products against the reference backend, when make_resident_operand
// picks it, and whole solves against the scattering ResidentOperand (whose fused pass the tests of thread
// independence no longer reach through factorize(), so they are kept here for it).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/gathering_operand.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/planted.hpp"
#include "io/csr_build.hpp"
#include "solvers/solve.hpp"
#include "solvers/update_rule.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

using backend::Side;

TEST(GatheringOperand, TransposeOfARowRangeHoldsThoseRowsByColumn) {
  const DenseMatrix<double> dense = test::random_dense<double>(40, 23, 5, 0.6);
  const CsrMatrix<double> csr = test::to_csr(dense);
  const index_t first = 7, last = 31;
  const CsrMatrix<double> t = io::detail::transpose(csr.view().row_range(first, last));
  ASSERT_EQ(t.rows(), 23);
  ASSERT_EQ(t.cols(), last - first);
  index_t stored = 0;
  for (index_t i = first; i < last; ++i)
    for (index_t j = 0; j < 23; ++j) stored += dense(i, j) != 0 ? 1 : 0;
  EXPECT_EQ(t.nnz(), stored);
  EXPECT_EQ(t.indptr()[0], 0);
  for (index_t j = 0; j < t.rows(); ++j) {
    DenseMatrix<double> column(last - first, 1);
    for (index_t p = t.indptr()[to_size(j)]; p < t.indptr()[to_size(j) + 1]; ++p) {
      if (p > t.indptr()[to_size(j)]) {
        EXPECT_LT(t.indices()[to_size(p - 1)], t.indices()[to_size(p)]);
      }
      column(t.indices()[to_size(p)], 0) = t.values()[to_size(p)];
    }
    for (index_t i = first; i < last; ++i) EXPECT_EQ(column(i - first, 0), dense(i, j)) << i << ", " << j;
  }
}

// Large enough for the column parts filled side by side (io::detail::transpose_parts): any thread count gives
// the same arrays, and transposing twice gives A back.
TEST(GatheringOperand, TransposeInPartsIsTheSameOnAnyThreadCount) {
  const DenseMatrix<double> dense = test::random_dense<double>(450, 310, 8, 0.3);
  const CsrMatrix<double> csr = test::to_csr(dense);
  ASSERT_GE(csr.nnz(), index_t{1} << 16);
  omp_set_num_threads(1);
  const CsrMatrix<double> one = io::detail::transpose(csr.view());
  for (const int threads : {2, 3}) {
    omp_set_num_threads(threads);
    EXPECT_GT(io::detail::transpose_parts(csr.nnz()), 1);
    const CsrMatrix<double> many = io::detail::transpose(csr.view());
    EXPECT_EQ(one.indptr(), many.indptr());
    EXPECT_EQ(one.indices(), many.indices());
    EXPECT_EQ(one.values(), many.values());
    const CsrMatrix<double> back = io::detail::transpose(many.view());
    EXPECT_EQ(back.indptr(), csr.indptr());
    EXPECT_EQ(back.indices(), csr.indices());
    EXPECT_EQ(back.values(), csr.values());
  }
}

template <class T>
class GatheringProducts : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GatheringProducts, Precisions);

// Every product of the operand against the reference backend's on the same CSR matrix: k = 1, 7, 16, 33, sides
// that are not multiples of any block, empty rows and columns, and a row range whose entries start past 0.
TYPED_TEST(GatheringProducts, MatchTheReferenceOnBothSides) {
  using T = TypeParam;
  struct Shape {
    index_t m, n, k;
  };
  const Shape shapes[] = {{37, 29, 1}, {101, 67, 7}, {300, 170, 16}, {45, 310, 33}, {1, 9, 3}, {9, 1, 4}};
  backend::ReferenceKernels<T> ref;
  backend::CpuKernels<T> cpu;
  std::uint64_t seed = 40;
  for (const Shape& s : shapes) {
    const DenseMatrix<T> dense = test::random_dense<T>(s.m + 3, s.n, seed++, 0.7);
    const CsrMatrix<T> csr = test::to_csr(dense);
    const CsrView<T> rows = csr.view().row_range(3, s.m + 3);  // indptr[0] > 0 unless the first rows are empty
    const MatrixRef<T> a{rows};
    const auto operand = backend::make_resident_operand<T>(cpu, a);
    ASSERT_NE(dynamic_cast<backend::GatheringOperand<T>*>(operand.get()), nullptr);
    for (const Side side : {Side::H, Side::W}) {
      const index_t inner = side == Side::H ? s.m : s.n;
      const index_t outer = side == Side::H ? s.n : s.m;
      const DenseMatrix<T> y = test::random_dense<T>(s.k, inner, seed + 100);
      const DenseMatrix<T> x = test::random_dense<T>(s.k, outer, seed + 300);
      for (const T beta : {T(0), T(1), T(0.5)}) {
        const std::string what = "m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                                 " k=" + std::to_string(s.k) + (side == Side::H ? " H" : " W") +
                                 " beta=" + std::to_string(beta);
        DenseMatrix<T> want = test::random_dense<T>(s.k, outer, seed + 200);
        DenseMatrix<T> got = want;
        ref.multiply(a, side, y.view(), want.view(), beta);
        operand->multiply(side, y.view(), got.view(), beta);
        EXPECT_LE(test::max_relative_difference(want, got), test::reference_tolerance<T>()) << what;
        // KL: y and x are the two factors (Y·(A ⊘ YᵀX) or its transpose), with positive entries.
        DenseMatrix<T> kl_want = test::random_dense<T>(s.k, outer, seed + 200);
        DenseMatrix<T> kl_got = kl_want;
        const auto sums_want = ref.kl_multiply(a, side, y.view(), x.view(), kl_want.view(), beta);
        const auto sums_got = operand->kl_multiply(side, y.view(), x.view(), kl_got.view(), beta);
        EXPECT_LE(test::max_relative_difference(kl_want, kl_got), test::reference_tolerance<T>()) << what;
        EXPECT_NEAR(sums_got.a_times_m, sums_want.a_times_m,
                    test::reference_tolerance<T>() * std::abs(sums_want.a_times_m) + 1e-30)
            << what;
      }
    }
    EXPECT_FALSE(operand->can_fuse(Side::W));
    EXPECT_FALSE(operand->can_fuse(Side::H));
    EXPECT_EQ(operand->rows(), s.m);
    EXPECT_EQ(operand->cols(), s.n);
  }
}

// One half-step in one pass (update_pass) against the same half-step from the reference backend's product,
// update, Gram matrix and dot: both sides, mu, hals and bpp, with an L1/L2 penalty, on shapes whose tiles and
// slots are not whole (the pass cuts A's rows into tiles of about 1 MiB of entries).
TEST(GatheringOperand, UpdatePassIsTheReferenceHalfStep) {
  struct Shape {
    index_t m, n, k;
    double density;
  };
  const Shape shapes[] = {{37, 29, 3, 0.7}, {3001, 1203, 16, 0.05}, {900, 4100, 7, 0.1}};
  backend::ReferenceKernels<double> ref;
  backend::CpuKernels<double> cpu;
  std::uint64_t seed = 70;
  for (const Shape& s : shapes) {
    const DenseMatrix<double> dense = test::random_dense<double>(s.m, s.n, seed++, 1.0 - s.density);
    const CsrMatrix<double> csr = test::to_csr(dense);
    const MatrixRef<double> a{csr.view()};
    const auto operand = backend::make_resident_operand<double>(cpu, a);
    ASSERT_TRUE(operand->can_update_pass(Side::H) && operand->can_update_pass(Side::W));
    for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp}) {
      for (const Side side : {Side::H, Side::W}) {
        const index_t inner = side == Side::H ? s.m : s.n;
        const index_t outer = side == Side::H ? s.n : s.m;
        const DenseMatrix<double> y = test::random_dense<double>(s.k, inner, seed + 100);
        const DenseMatrix<double> x0 = test::random_dense<double>(s.k, outer, seed + 200);
        DenseMatrix<double> gy(s.k, s.k);
        ref.gram(y.view(), gy.view(), 0.0);
        const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0.01, 0.02);
        // Reference: the numerator, the update, X·Xᵀ and Σ x·numer, each a call of its own.
        DenseMatrix<double> numer(s.k, outer), x_want = x0, g_want(s.k, s.k);
        ref.multiply(a, side, y.view(), numer.view(), 0.0);
        ref.update(rule, x_want.view(), numer.view(), gy.view(), nullptr);
        ref.gram(x_want.view(), g_want.view(), 0.0);
        const double cross_want = ref.dot(x_want.view(), numer.view());
        DenseMatrix<double> x_got = x0, g_got(s.k, s.k, 7.0);  // gx is overwritten
        const backend::FusedSums sums =
            operand->update_pass(side, rule, x_got.view(), y.view(), gy.view(), nullptr, g_got.view());
        const std::string what = to_string(algo) + (side == Side::H ? " H" : " W") + " m=" + std::to_string(s.m);
        // bpp's exact NNLS from the same numerator: only rounding apart (measured below 1e-12).
        EXPECT_LE(test::max_relative_difference(x_want, x_got), 1e-10) << what;
        EXPECT_LE(test::max_relative_difference(g_want, g_got), 1e-10) << what;
        EXPECT_NEAR(sums.cross, cross_want, 1e-10 * std::abs(cross_want)) << what;
        EXPECT_EQ(sums.nnls_cap_hits, 0) << what;
      }
    }
  }
}

TEST(GatheringOperand, ChosenForCsrOnTheCpuWithinItsMemoryLimitForFitsLongEnough) {
  const DenseMatrix<double> dense = test::random_dense<double>(50, 40, 9, 0.5);
  const CsrMatrix<double> csr = test::to_csr(dense);
  backend::CpuKernels<double> cpu;
  backend::ReferenceKernels<double> ref;
  const MatrixRef<double> sparse{csr.view()};
  const MatrixRef<double> full{dense.view()};
  const auto is_gathering = [](const std::unique_ptr<backend::Operand<double>>& op) {
    return dynamic_cast<backend::GatheringOperand<double>*>(op.get()) != nullptr;
  };
  EXPECT_TRUE(is_gathering(backend::make_resident_operand<double>(cpu, sparse)));
  const double bytes = backend::transpose_bytes(csr.view());
  EXPECT_EQ(bytes, static_cast<double>(csr.nnz()) * 12 + 41 * 8);
  EXPECT_TRUE(is_gathering(backend::make_resident_operand<double>(cpu, sparse, bytes)));
  EXPECT_FALSE(is_gathering(backend::make_resident_operand<double>(cpu, sparse, bytes - 1)));
  EXPECT_FALSE(is_gathering(backend::make_resident_operand<double>(cpu, full)));
  EXPECT_FALSE(is_gathering(backend::make_resident_operand<double>(ref, sparse)));
  // A fit too short for the copy to pay keeps the scatter.
  constexpr int least = backend::kTransposeMinIterations;
  EXPECT_TRUE(is_gathering(backend::make_resident_operand<double>(cpu, sparse, -1, least)));
  EXPECT_FALSE(is_gathering(backend::make_resident_operand<double>(cpu, sparse, -1, least - 1)));
}

// Whole solves: the gathering operand (two gathers per iteration, unfused) against the scattering one (the fused
// pass, or its two-pass products), on 1 and 2 threads. The two sum the Wᵀ·A entries in different orders (one
// sum per column against per-slot sums added in slot order), so they agree to rounding, not to the bit; each
// is the same to the bit on any thread count.
struct SolveRun {
  DenseMatrix<double> W, H;
  double rel_error = 0;
  bool fused = false;
};

SolveRun solve_with(backend::Operand<double>& operand, backend::Kernels<double>& kernels, const MatrixRef<double>& a,
                    const FactorOptions& options) {
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, rows_of(a), cols_of(a));
  backend::CpuKernels<double> host;
  solvers::Solution<double> s = solvers::solve(kernels, host, operand, &a, grid, layout, options);
  SolveRun run;
  solvers::gather_factors(grid, layout, s.pieces, run.W, run.H, 0);
  run.rel_error = s.result.rel_error;
  run.fused = s.result.fused;
  return run;
}

TEST(GatheringOperand, SolvesAgreeWithTheScatteringOperandOnAnyThreadCount) {
  const auto planted =
      make_planted<double>({.rows = 3000, .cols = 2000, .rank = 6, .density = 0.02, .noise = 0.05, .seed = 3});
  const MatrixRef<double> a = planted.matrix();
  const CsrView<double> csr = std::get<CsrView<double>>(a);
  for (const Algorithm algo : {Algorithm::mu, Algorithm::hals, Algorithm::bpp, Algorithm::kl}) {
    FactorOptions o;
    o.rank = 7;
    o.algorithm = algo;
    o.max_iterations = 15;
    o.tol = 0;
    o.seed = 11;
    SolveRun first_gathering, first_scattering;
    for (const int threads : {1, 2}) {
      o.threads = threads;
      omp_set_num_threads(threads);
      backend::CpuKernels<double> kernels;
      backend::GatheringOperand<double> gathering(kernels, a, io::detail::transpose(csr));
      backend::ResidentOperand<double> scattering(kernels, a);
      const SolveRun g = solve_with(gathering, kernels, a, o);
      const SolveRun s = solve_with(scattering, kernels, a, o);
      const std::string what = to_string(algo) + ", " + std::to_string(threads) + " threads";
      EXPECT_FALSE(g.fused) << what;
      EXPECT_TRUE(s.fused) << what;
      EXPECT_LT(g.rel_error, 0.5) << what;
      // Measured: at most 4e-13 (bpp's W) after 15 iterations.
      EXPECT_NEAR(g.rel_error, s.rel_error, 1e-12 * s.rel_error) << what;
      EXPECT_LE(test::max_relative_difference(g.W, s.W), 1e-11) << what;
      EXPECT_LE(test::max_relative_difference(g.H, s.H), 1e-11) << what;
      if (threads == 1) {
        first_gathering = g;
        first_scattering = s;
      } else {
        EXPECT_EQ(test::max_relative_difference(first_gathering.W, g.W), 0.0) << what;
        EXPECT_EQ(test::max_relative_difference(first_gathering.H, g.H), 0.0) << what;
        EXPECT_EQ(test::max_relative_difference(first_scattering.W, s.W), 0.0) << what;
        EXPECT_EQ(test::max_relative_difference(first_scattering.H, s.H), 0.0) << what;
      }
      std::printf("%s: gathering vs scattering W %.3g H %.3g\n", what.c_str(), test::max_relative_difference(g.W, s.W),
                  test::max_relative_difference(g.H, s.H));
    }
  }
}

}  // namespace
}  // namespace dnmf
