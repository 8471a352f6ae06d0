// The streamed operand: each product equals the resident one, and a whole solve streamed from a file equals the
// resident solve (same seed) within 1e-10 relative in float64, for every algorithm, dense (both .npy orders) and
// sparse (.dcsr); pass and tile counts; a bad entry found while streaming ends the solve with its position.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/operand.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/dcsr.hpp"
#include "solvers/update_rule.hpp"
#include "stream/memory_source.hpp"
#include "stream/streamed_operand.hpp"
#include "support/error_message.hpp"
#include "support/matrix_views.hpp"
#include "support/random_matrices.hpp"
#include "support/streamed_vs_resident.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf::stream {
namespace {

using io::read_dcsr;
using io::read_dcsr_block;
using io::read_dcsr_header;
using io::read_dcsr_shape;
using io::write_dcsr;

using backend::Side;

using test::expect_same;
using test::options_for;
using test::Outcome;

Outcome solve_resident(const MatrixRef<double>& a, const FactorOptions& options) {
  backend::CpuKernels<double> kernels, host;
  backend::ResidentOperand<double> operand(kernels, a);
  return test::solve_with(kernels, host, operand, options);
}

Outcome solve_streamed(std::unique_ptr<TileSource<double>> source, std::size_t tile_bytes, int depth,
                       const FactorOptions& options) {
  backend::CpuKernels<double> kernels, host;
  StreamedOperand<double> operand(kernels, std::move(source), tile_bytes, depth);
  Outcome run = test::solve_with(kernels, host, operand, options);
  run.tiles = operand.tile_count();
  return run;
}

const Algorithm kAll[] = {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp};

class StreamedSolve : public test::TempDirTest {};

// Passes over A after the iterations: one product for the final error where the iteration's last figure is not
// the returned pair's (KL). Every matrix here is far above the identity's noise floor.
int final_check(Algorithm algo) { return algo == Algorithm::kl ? 1 : 0; }

TEST_F(StreamedSolve, DenseFortranOrderEqualsResident) {
  const auto a = test::noisy_rank4(70, 52, 1);
  io::write_npy<double>(path("a.npy"), a.view());
  for (const Algorithm algo : kAll) {
    const FactorOptions o = options_for(algo, 25);
    const Outcome resident = solve_resident(MatrixRef<double>{a.view()}, o);
    // Tiles of 13 columns: 4 tiles, through 3 slots.
    const Outcome streamed = solve_streamed(open_source<double>(path("a.npy"), {0, 70}, {0, 52}), 70 * 8 * 13, 3, o);
    expect_same(streamed, resident, "fortran " + to_string(algo));
    EXPECT_EQ(streamed.tiles, 4u);
    // stats + one fused pass per iteration, + the final error's product for KL, whose figures are of the
    // previous pair (the others' last figure is the returned pair's).
    EXPECT_EQ(streamed.stats.passes, 25 + 1 + final_check(algo)) << to_string(algo);
    EXPECT_EQ(streamed.stats.tiles, streamed.stats.passes * 4) << to_string(algo);
    EXPECT_GE(streamed.stats.bytes_read, static_cast<double>(streamed.stats.passes) * 70 * 52 * 8);
    EXPECT_TRUE(streamed.solution.result.fused);
  }
}

TEST_F(StreamedSolve, DenseCOrderEqualsResident) {
  const auto a = test::noisy_rank4(64, 47, 2);
  io::write_npy_row_major<double>(path("c.npy"), test::row_major(a).data(), 64, 47);
  for (const Algorithm algo : kAll) {
    const FactorOptions o = options_for(algo, 25);
    const Outcome resident = solve_resident(MatrixRef<double>{a.view()}, o);
    const Outcome streamed = solve_streamed(open_source<double>(path("c.npy"), {0, 64}, {0, 47}), 47 * 8 * 17, 2, o);
    expect_same(streamed, resident, "C order " + to_string(algo));
    EXPECT_EQ(streamed.tiles, 4u);
    // Row stripes update W in the single pass; the first H half needs one plain product before it.
    EXPECT_EQ(streamed.stats.passes, 25 + 2 + final_check(algo)) << to_string(algo);
  }
}

TEST_F(StreamedSolve, SparseDcsrEqualsResident) {
  const auto dense = test::noisy_rank4(90, 60, 3, 0.7);
  const CsrMatrix<double> csr = test::to_csr(dense);
  write_dcsr<double>(path("s.dcsr"), csr.view());
  for (const Algorithm algo : kAll) {
    const FactorOptions o = options_for(algo, 25);
    const Outcome resident = solve_resident(MatrixRef<double>{csr.view()}, o);
    const Outcome streamed = solve_streamed(open_source<double>(path("s.dcsr"), {0, 90}, {0, 60}), 4000, 3, o);
    expect_same(streamed, resident, "dcsr " + to_string(algo));
    EXPECT_GE(streamed.tiles, 4u);
  }
}

// Extrapolation reads A no more often: Ŵ's products come from the pass's own P (row stripes) or replace W's
// (column stripes), so the pass counts are those of the plain iteration.
TEST_F(StreamedSolve, ExtrapolatedIterationEqualsResidentWithoutExtraPasses) {
  const auto a = test::noisy_rank4(64, 47, 5);
  io::write_npy<double>(path("f.npy"), a.view());
  io::write_npy_row_major<double>(path("c.npy"), test::row_major(a).data(), 64, 47);
  for (const Algorithm algo : {Algorithm::hals, Algorithm::bpp}) {
    FactorOptions o = options_for(algo, 25);
    o.extrapolate = true;
    const Outcome resident = solve_resident(MatrixRef<double>{a.view()}, o);
    const Outcome columns = solve_streamed(open_source<double>(path("f.npy"), {0, 64}, {0, 47}), 64 * 8 * 13, 3, o);
    expect_same(columns, resident, "fortran extrapolated " + to_string(algo));
    EXPECT_EQ(columns.stats.passes, 25 + 1) << to_string(algo);
    const Outcome rows = solve_streamed(open_source<double>(path("c.npy"), {0, 64}, {0, 47}), 47 * 8 * 17, 2, o);
    expect_same(rows, resident, "C order extrapolated " + to_string(algo));
    EXPECT_EQ(rows.stats.passes, 25 + 2) << to_string(algo);
    EXPECT_EQ(rows.solution.result.extrapolation_restarts, resident.solution.result.extrapolation_restarts);
  }
}

TEST_F(StreamedSolve, TwoPassIterationWithoutFusingEqualsResident) {
  const auto a = test::noisy_rank4(50, 40, 4);
  io::write_npy<double>(path("a.npy"), a.view());
  FactorOptions o = options_for(Algorithm::mu, 15);
  o.fused = false;
  const Outcome resident = solve_resident(MatrixRef<double>{a.view()}, o);
  const Outcome streamed = solve_streamed(open_source<double>(path("a.npy"), {0, 50}, {0, 40}), 50 * 8 * 7, 2, o);
  expect_same(streamed, resident, "two passes");
  EXPECT_FALSE(streamed.solution.result.fused);
  EXPECT_EQ(streamed.stats.passes, 2 * 15 + 1);
}

TEST_F(StreamedSolve, BadEntryFoundWhileStreamingEndsTheSolve) {
  auto a = test::noisy_rank4(40, 30, 5);
  a(33, 27) = std::numeric_limits<double>::infinity();
  io::write_npy<double>(path("inf.npy"), a.view());
  const std::string message = test::error_message([&] {
    (void)solve_streamed(open_source<double>(path("inf.npy"), {0, 40}, {0, 30}), 40 * 8 * 4, 2,
                         options_for(Algorithm::mu, 3));
  });
  EXPECT_NE(message.find("inf.npy: entry at row 33, column 27 (0-based) is inf"), std::string::npos) << message;
}

// The products one by one, against the resident operand: both sides, beta 0 and not, on a block whose tiles are
// uneven; KL sums and the fused pass's outputs too.
template <class Make>
void check_products(const DenseMatrix<double>& a, const MatrixRef<double>& ref, Make make_source) {
  backend::CpuKernels<double> kernels;
  backend::ResidentOperand<double> resident(kernels, ref);
  StreamedOperand<double> streamed(kernels, make_source(), 3 * 8 * to_size(std::max(a.rows(), a.cols())) + 40, 2);
  const index_t m = a.rows(), n = a.cols(), k = 3;
  const auto wt = test::random_dense<double>(k, m, 21), h = test::random_dense<double>(k, n, 22);
  const backend::MatrixStats s1 = streamed.stats(), s2 = resident.stats();
  EXPECT_NEAR(s1.sum, s2.sum, 1e-12 * s2.sum);
  EXPECT_NEAR(s1.squared_norm, s2.squared_norm, 1e-12 * s2.squared_norm);
  for (const double beta : {0.0, 0.5}) {
    DenseMatrix<double> p1 = test::random_dense<double>(k, n, 23), p2 = p1;
    streamed.multiply(Side::H, wt.view(), p1.view(), beta);
    resident.multiply(Side::H, wt.view(), p2.view(), beta);
    EXPECT_LE(test::max_relative_difference(p1, p2), 1e-13);
    DenseMatrix<double> q1 = test::random_dense<double>(k, m, 24), q2 = q1;
    streamed.multiply(Side::W, h.view(), q1.view(), beta);
    resident.multiply(Side::W, h.view(), q2.view(), beta);
    EXPECT_LE(test::max_relative_difference(q1, q2), 1e-13);
    const auto kl1 = streamed.kl_multiply(Side::H, wt.view(), h.view(), p1.view(), beta);
    const auto kl2 = resident.kl_multiply(Side::H, wt.view(), h.view(), p2.view(), beta);
    EXPECT_LE(test::max_relative_difference(p1, p2), 1e-13);
    EXPECT_NEAR(kl1.a_log_a_over_m, kl2.a_log_a_over_m, 1e-12 * std::abs(kl2.a_log_a_over_m));
    EXPECT_NEAR(kl1.a_times_m, kl2.a_times_m, 1e-12 * kl2.a_times_m);
    (void)streamed.kl_multiply(Side::W, h.view(), wt.view(), q1.view(), beta);
    (void)resident.kl_multiply(Side::W, h.view(), wt.view(), q2.view(), beta);
    EXPECT_LE(test::max_relative_difference(q1, q2), 1e-13);
  }
  // The fused pass along the stream's side.
  const Side side = streamed.fused_side();
  const bool on_h = side == Side::H;
  DenseMatrix<double> x1 = on_h ? h : wt, x2 = x1;
  const DenseMatrix<double>& y = on_h ? wt : h;
  DenseMatrix<double> gy(k, k), y_sums(k, 1);
  kernels.gram(y.view(), gy.view(), 0.0);
  kernels.row_sums(y.view(), y_sums.data());
  DenseMatrix<double> o1(k, on_h ? m : n, 7.0), o2 = o1, g1(k, k, 7.0), g2 = g1;
  ASSERT_TRUE(resident.can_fuse(side));
  ASSERT_FALSE(streamed.can_fuse(backend::other(side)));
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
    const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0, 0);
    const auto f1 =
        streamed.fused_pass(side, rule, x1.view(), y.view(), gy.view(), y_sums.data(), o1.view(), g1.view());
    const auto f2 =
        resident.fused_pass(side, rule, x2.view(), y.view(), gy.view(), y_sums.data(), o2.view(), g2.view());
    EXPECT_LE(test::max_relative_difference(x1, x2), 1e-13);
    EXPECT_LE(test::max_relative_difference(o1, o2), 1e-13);
    EXPECT_LE(test::max_relative_difference(g1, g2), 1e-13);
    EXPECT_NEAR(f1.cross, f2.cross, 1e-12 * std::abs(f2.cross));
    EXPECT_NEAR(f1.kl_accum.a_times_m, f2.kl_accum.a_times_m, 1e-12 * std::abs(f2.kl_accum.a_times_m));
  }
}

TEST(StreamedProducts, DenseColumnAndRowStripesAndCsrRows) {
  const auto a = test::noisy_rank4(41, 29, 6, 0.5);
  for (const Side side : {Side::H, Side::W})
    check_products(a, MatrixRef<double>{a.view()},
                   [&] { return std::make_unique<MemorySource<double>>(MatrixRef<double>{a.view()}, side); });
  const auto csr = test::to_csr(a);
  check_products(a, MatrixRef<double>{csr.view()},
                 [&] { return std::make_unique<MemorySource<double>>(MatrixRef<double>{csr.view()}, Side::W); });
}

TEST(StreamedProducts, EmptyBlockGivesZeroProducts) {
  backend::CpuKernels<double> kernels;
  DenseMatrix<double> a(0, 5);
  StreamedOperand<double> streamed(
      kernels, std::make_unique<MemorySource<double>>(MatrixRef<double>{a.view()}, Side::W), 1024, 2);
  EXPECT_EQ(streamed.tile_count(), 0u);
  DenseMatrix<double> p(2, 5, 3.0), wt(2, 0);
  streamed.multiply(Side::H, wt.view(), p.view(), 0.0);
  for (const double v : p.storage()) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(streamed.stats().squared_norm, 0.0);
}

TEST(StreamedProducts, AbandonedPassLeavesTheNextOneWhole) {
  // A kernel failure mid-pass (here: the consumer throws out of a KL product with mismatched shapes would be
  // internal) is modelled by a source that fails once on its third tile.
  struct Flaky final : TileSource<double> {
    MemorySource<double> inner;
    int failures = 1;
    explicit Flaky(MatrixRef<double> a) : inner(a, Side::H) {}
    std::string name() const override { return "flaky"; }
    std::string kind() const override { return "memory"; }
    index_t rows() const override { return inner.rows(); }
    index_t cols() const override { return inner.cols(); }
    bool sparse() const override { return false; }
    Side direction() const override { return Side::H; }
    index_t stored() const override { return inner.stored(); }
    std::size_t min_tile_bytes() const override { return inner.min_tile_bytes(); }
    std::vector<TileExtent> partition(std::size_t b) const override { return inner.partition(b); }
    void read(const TileExtent& e, Tile<double>& t, bool v) override {
      if (e.range.first > 0 && e.range.first >= 4 && failures-- > 0) throw Error("flaky: transient read error");
      inner.read(e, t, v);
    }
  };
  const auto a = test::noisy_rank4(20, 12, 7);
  backend::CpuKernels<double> kernels;
  StreamedOperand<double> streamed(kernels, std::make_unique<Flaky>(MatrixRef<double>{a.view()}), 20 * 8 * 2, 2);
  EXPECT_NE(test::error_message([&] { (void)streamed.stats(); }).find("transient"), std::string::npos);
  const backend::MatrixStats s = streamed.stats();  // a whole pass from tile 0
  double sum = 0;
  for (const double v : a.storage()) sum += v;
  EXPECT_NEAR(s.sum, sum, 1e-12 * sum);
}

}  // namespace
}  // namespace dnmf::stream
