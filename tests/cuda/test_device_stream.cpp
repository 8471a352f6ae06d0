// The device-streamed operand's pipeline on the host (HostTileEngine: memcpy for copies, the reference kernels for
// compute), so its bookkeeping is tested on every machine: tiles and their ranges, both stripe directions, the
// registered-block and the file (disk -> host ring -> device) paths, sums left per tile and added after the
// pass, the fused single pass, and whole solves equal to the resident ones within 1e-10 (float64). The engine
// also checks the buffer protocol the CUDA engine's events implement. The CUDA engine itself is tested in
// test_cuda_streamed.cpp (GPU only).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "backend/reference/reference_kernels.hpp"
#include "cuda/host_tile_engine.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/io.hpp"
#include "solvers/solve.hpp"
#include "solvers/update_rule.hpp"
#include "stream/device_streamed_operand.hpp"
#include "stream/memory_source.hpp"
#include "stream/npy_source.hpp"
#include "support/error_message.hpp"
#include "support/matrix_views.hpp"
#include "support/random_matrices.hpp"
#include "support/streamed_vs_resident.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf {
namespace {

using backend::Side;
using stream::DeviceStreamedOperand;
using test::HostTileEngine;

using test::expect_same;
using test::options_for;
using test::Outcome;

// An operand on a host engine the test keeps a pointer to (owned by the operand).
struct Streamed {
  std::unique_ptr<DeviceStreamedOperand<double>> operand;
  HostTileEngine<double>* engine = nullptr;
};

Streamed from_memory(backend::Kernels<double>& kernels, const DenseMatrix<double>& a, Side direction,
                     std::size_t tile_bytes, int depth) {
  auto engine = std::make_unique<HostTileEngine<double>>(kernels);
  Streamed s;
  s.engine = engine.get();
  s.operand =
      std::make_unique<DeviceStreamedOperand<double>>(std::move(engine), a.view(), direction, tile_bytes, depth);
  return s;
}

Streamed from_source(backend::Kernels<double>& kernels, std::unique_ptr<stream::TileSource<double>> source,
                     std::size_t tile_bytes, int depth, int host_depth) {
  auto engine = std::make_unique<HostTileEngine<double>>(kernels);
  Streamed s;
  s.engine = engine.get();
  s.operand = std::make_unique<DeviceStreamedOperand<double>>(std::move(engine), std::move(source), tile_bytes, depth,
                                                              host_depth);
  return s;
}

// Every product of the operand against the resident one: both sides, beta 0 and not, KL sums, and the fused
// pass for each algorithm along the stream's side.
void check_products(const DenseMatrix<double>& a, Streamed s, const std::string& what) {
  backend::ReferenceKernels<double> kernels;
  backend::ResidentOperand<double> resident(kernels, MatrixRef<double>{a.view()});
  auto& streamed = *s.operand;
  ASSERT_GE(streamed.tile_count(), 3u) << what << ": the test wants several tiles";
  const index_t m = a.rows(), n = a.cols(), k = 3;
  const auto wt = test::random_dense<double>(k, m, 21), h = test::random_dense<double>(k, n, 22);
  const backend::MatrixStats s1 = streamed.stats(), s2 = resident.stats();
  EXPECT_NEAR(s1.sum, s2.sum, 1e-12 * s2.sum) << what;
  EXPECT_NEAR(s1.squared_norm, s2.squared_norm, 1e-12 * s2.squared_norm) << what;
  for (const double beta : {0.0, 0.5}) {
    DenseMatrix<double> p1 = test::random_dense<double>(k, n, 23), p2 = p1;
    streamed.multiply(Side::H, wt.view(), p1.view(), beta);
    resident.multiply(Side::H, wt.view(), p2.view(), beta);
    EXPECT_LE(test::max_relative_difference(p1, p2), 1e-13) << what;
    DenseMatrix<double> q1 = test::random_dense<double>(k, m, 24), q2 = q1;
    streamed.multiply(Side::W, h.view(), q1.view(), beta);
    resident.multiply(Side::W, h.view(), q2.view(), beta);
    EXPECT_LE(test::max_relative_difference(q1, q2), 1e-13) << what;
    const auto kl1 = streamed.kl_multiply(Side::H, wt.view(), h.view(), p1.view(), beta);
    const auto kl2 = resident.kl_multiply(Side::H, wt.view(), h.view(), p2.view(), beta);
    EXPECT_LE(test::max_relative_difference(p1, p2), 1e-13) << what;
    EXPECT_NEAR(kl1.a_log_a_over_m, kl2.a_log_a_over_m, 1e-12 * std::abs(kl2.a_log_a_over_m)) << what;
    EXPECT_NEAR(kl1.a_times_m, kl2.a_times_m, 1e-12 * kl2.a_times_m) << what;
    const auto kw1 = streamed.kl_multiply(Side::W, h.view(), wt.view(), q1.view(), beta);
    const auto kw2 = resident.kl_multiply(Side::W, h.view(), wt.view(), q2.view(), beta);
    EXPECT_LE(test::max_relative_difference(q1, q2), 1e-13) << what;
    EXPECT_NEAR(kw1.a_times_m, kw2.a_times_m, 1e-12 * kw2.a_times_m) << what;
  }
  const Side side = streamed.fused_side();
  const bool on_h = side == Side::H;
  EXPECT_TRUE(streamed.can_fuse(side));
  EXPECT_FALSE(streamed.can_fuse(backend::other(side)));
  const DenseMatrix<double>& y = on_h ? wt : h;
  DenseMatrix<double> gy(k, k), y_sums(k, 1);
  kernels.gram(y.view(), gy.view(), 0.0);
  kernels.row_sums(y.view(), y_sums.data());
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    DenseMatrix<double> x1 = on_h ? h : wt, x2 = x1;
    DenseMatrix<double> o1(k, on_h ? m : n, 7.0), o2 = o1, g1(k, k, 7.0), g2 = g1;
    const backend::UpdateRule rule = solvers::update_rule(algo, 1e-16, 0, 0);
    const auto f1 =
        streamed.fused_pass(side, rule, x1.view(), y.view(), gy.view(), y_sums.data(), o1.view(), g1.view());
    const auto f2 =
        resident.fused_pass(side, rule, x2.view(), y.view(), gy.view(), y_sums.data(), o2.view(), g2.view());
    const std::string where = what + " fused " + to_string(algo);
    EXPECT_LE(test::max_relative_difference(x1, x2), 1e-12) << where;
    EXPECT_LE(test::max_relative_difference(o1, o2), 1e-12) << where;
    EXPECT_LE(test::max_relative_difference(g1, g2), 1e-12) << where;
    EXPECT_NEAR(f1.cross, f2.cross, 1e-12 * std::abs(f2.cross)) << where;
    EXPECT_NEAR(f1.kl_numer.a_times_m, f2.kl_numer.a_times_m, 1e-12 * std::abs(f2.kl_numer.a_times_m)) << where;
    EXPECT_NEAR(f1.kl_accum.a_times_m, f2.kl_accum.a_times_m, 1e-12 * std::abs(f2.kl_accum.a_times_m)) << where;
    EXPECT_NEAR(f1.kl_accum.a_log_a_over_m, f2.kl_accum.a_log_a_over_m, 1e-12 * std::abs(f2.kl_accum.a_log_a_over_m))
        << where;
  }
  EXPECT_TRUE(s.engine->violations().empty()) << what << ": " << s.engine->violations().front();
  // 1 stats + 2 x (2 multiply + 2 KL) + 4 fused passes, each over every tile once.
  const long long passes = 1 + 2 * 4 + 4;
  EXPECT_EQ(streamed.operand_stats().passes, passes) << what;
  EXPECT_EQ(s.engine->copies(), passes * static_cast<long long>(streamed.tile_count())) << what;
  EXPECT_DOUBLE_EQ(streamed.operand_stats().bytes_read, static_cast<double>(passes) * m * n * sizeof(double)) << what;
}

class DeviceStream : public test::TempDirTest {};

TEST_F(DeviceStream, RegisteredBlockProductsEqualResidentBothStripeDirections) {
  const auto a = test::noisy_rank4(41, 29, 6, 0.3);
  backend::ReferenceKernels<double> kernels;
  for (const int depth : {2, 3}) {
    // Tiles of a few lines: uneven widths, more tiles than buffers.
    check_products(a, from_memory(kernels, a, Side::H, std::size_t{41} * 8 * 4, depth),
                   "columns depth " + std::to_string(depth));
    check_products(a, from_memory(kernels, a, Side::W, std::size_t{29} * 8 * 3, depth),
                   "rows depth " + std::to_string(depth));
  }
}

TEST_F(DeviceStream, StridedHostBlockIsCopiedTileByTile) {
  // A block inside a larger matrix (ld > rows): the copies are 2-D.
  const auto big = test::noisy_rank4(50, 30, 8);
  const auto a = test::noisy_rank4(37, 23, 8);
  DenseMatrix<double> padded = big;
  for (index_t j = 0; j < 23; ++j)
    for (index_t i = 0; i < 37; ++i) padded(i + 5, j + 4) = a(i, j);
  const DenseView<const double> block{padded.data() + 5 + std::ptrdiff_t{4} * 50, 37, 23, 50};
  backend::ReferenceKernels<double> kernels;
  auto engine = std::make_unique<HostTileEngine<double>>(kernels);
  DeviceStreamedOperand<double> op(std::move(engine), block, Side::H, std::size_t{37} * 8 * 5, 2);
  DenseMatrix<double> wt = test::random_dense<double>(3, 37, 1), p1(3, 23), p2(3, 23);
  op.multiply(Side::H, wt.view(), p1.view(), 0.0);
  kernels.multiply(MatrixRef<double>{a.view()}, Side::H, wt.view(), p2.view(), 0.0);
  EXPECT_LE(test::max_relative_difference(p1, p2), 1e-13);
  EXPECT_EQ(op.tile_count(), 5u);
  EXPECT_EQ(op.source_kind(), "memory");
}

TEST_F(DeviceStream, FileThroughHostRingProductsEqualResident) {
  const auto a = test::noisy_rank4(43, 31, 9, 0.2);
  io::write_npy<double>(path("f.npy"), a.view());
  io::write_npy_row_major<double>(path("c.npy"), test::row_major(a).data(), 43, 31);
  backend::ReferenceKernels<double> kernels;
  for (const int host_depth : {2, 3}) {
    const std::string d = " host depth " + std::to_string(host_depth);
    // Fortran order: lent from a mapping (automatic) or read into the host ring.
    for (const auto access : {stream::NpyAccess::automatic, stream::NpyAccess::read}) {
      auto f = from_source(
          kernels,
          std::make_unique<stream::NpySource<double>>(path("f.npy"), dist::Range{0, 43}, dist::Range{0, 31}, access),
          std::size_t{43} * 8 * 4, 2, host_depth);
      EXPECT_EQ(f.operand->fused_side(), Side::H);
      EXPECT_EQ(f.operand->source_kind(), "npy");
      check_products(a, std::move(f), "fortran file" + d);
    }
    auto c = from_source(kernels, stream::open_source<double>(path("c.npy"), {0, 43}, {0, 31}), std::size_t{31} * 8 * 5,
                         3, host_depth);
    EXPECT_EQ(c.operand->fused_side(), Side::W);
    check_products(a, std::move(c), "C-order file" + d);
  }
}

TEST_F(DeviceStream, FileBlockOfAGridRank) {
  // Rank (1, 0) of a 2x2 grid reads rows [22, 43) and columns [0, 16) of the file.
  const auto a = test::noisy_rank4(43, 31, 10);
  io::write_npy<double>(path("f.npy"), a.view());
  DenseMatrix<double> block(21, 16);
  for (index_t j = 0; j < 16; ++j)
    for (index_t i = 0; i < 21; ++i) block(i, j) = a(i + 22, j);
  backend::ReferenceKernels<double> kernels;
  auto s = from_source(kernels, stream::open_source<double>(path("f.npy"), {22, 43}, {0, 16}), std::size_t{21} * 8 * 3,
                       2, 2);
  check_products(block, std::move(s), "grid block");
}

TEST_F(DeviceStream, SolvesEqualResidentForEveryAlgorithmAndDepth) {
  const auto a = test::noisy_rank4(60, 45, 12, 0.1);
  io::write_npy<double>(path("a.npy"), a.view());
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp}) {
    const FactorOptions o = options_for(algo, 12);
    backend::ReferenceKernels<double> kernels, host;
    backend::ResidentOperand<double> resident_op(kernels, MatrixRef<double>{a.view()});
    const Outcome resident = test::solve_with(kernels, host, resident_op, o);
    for (const int depth : {2, 3}) {
      const std::string what = to_string(algo) + " depth " + std::to_string(depth);
      auto mem = from_memory(kernels, a, Side::H, std::size_t{60} * 8 * 4, depth);  // 12 tiles of 3-4 columns
      const Outcome m = test::solve_with(kernels, host, *mem.operand, o);
      expect_same(m, resident, what + " registered");
      EXPECT_TRUE(mem.engine->violations().empty()) << what;
      EXPECT_GE(m.stats.tiles, 12 * 12) << what;
      auto file = from_source(kernels, stream::open_source<double>(path("a.npy"), {0, 60}, {0, 45}),
                              std::size_t{60} * 8 * 7, depth, depth);
      const Outcome f = test::solve_with(kernels, host, *file.operand, o);
      expect_same(f, resident, what + " file");
      EXPECT_TRUE(file.engine->violations().empty()) << what;
      // The fused single pass: one pass over A per iteration (plus stats, the first product, the final check).
      EXPECT_LE(f.stats.passes, 12 + 4) << what;
    }
  }
}

TEST_F(DeviceStream, EmptyBlockGivesZeroProducts) {
  backend::ReferenceKernels<double> kernels;
  DenseMatrix<double> a(0, 5);
  auto s = from_memory(kernels, a, Side::W, 1024, 2);
  EXPECT_EQ(s.operand->tile_count(), 0u);
  DenseMatrix<double> p(2, 5, 3.0), wt(2, 0);
  s.operand->multiply(Side::H, wt.view(), p.view(), 0.0);
  for (const double v : p.storage()) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(s.operand->stats().squared_norm, 0.0);
}

TEST_F(DeviceStream, AbandonedPassLeavesTheNextOneWhole) {
  struct Flaky final : stream::TileSource<double> {
    stream::MemorySource<double> inner;
    int failures = 1;
    explicit Flaky(MatrixRef<double> a) : inner(a, Side::H) {}
    std::string name() const override { return "flaky"; }
    std::string kind() const override { return "flaky"; }
    index_t rows() const override { return inner.rows(); }
    index_t cols() const override { return inner.cols(); }
    bool sparse() const override { return false; }
    Side direction() const override { return Side::H; }
    index_t stored() const override { return inner.stored(); }
    std::size_t min_tile_bytes() const override { return inner.min_tile_bytes(); }
    std::vector<stream::TileExtent> partition(std::size_t b) const override { return inner.partition(b); }
    void read(const stream::TileExtent& e, stream::Tile<double>& t, bool v) override {
      if (e.range.first >= 4 && failures-- > 0) throw Error("flaky: transient read error");
      inner.read(e, t, v);
    }
  };
  const auto a = test::noisy_rank4(20, 12, 7);
  backend::ReferenceKernels<double> kernels;
  auto s = from_source(kernels, std::make_unique<Flaky>(MatrixRef<double>{a.view()}), std::size_t{20} * 8 * 2, 2, 2);
  EXPECT_NE(test::error_message([&] { (void)s.operand->stats(); }).find("transient"), std::string::npos);
  const backend::MatrixStats st = s.operand->stats();  // a whole pass from tile 0
  double sum = 0;
  for (const double v : a.storage()) sum += v;
  EXPECT_NEAR(st.sum, sum, 1e-12 * sum);
}

TEST_F(DeviceStream, CsrSourceIsRefusedWithTheFileName) {
  const auto a = test::noisy_rank4(20, 12, 7, 0.5);
  const auto csr = test::to_csr(a);
  backend::ReferenceKernels<double> kernels;
  const std::string message = test::error_message([&] {
    (void)from_source(kernels, std::make_unique<stream::MemorySource<double>>(MatrixRef<double>{csr.view()}, Side::W),
                      1024, 2, 2);
  });
  EXPECT_NE(message.find("CSR blocks cannot stream through the device"), std::string::npos) << message;
}

TEST_F(DeviceStream, DepthBelowTwoIsRefused) {
  const auto a = test::noisy_rank4(8, 8, 1);
  backend::ReferenceKernels<double> kernels;
  EXPECT_NE(test::error_message([&] { (void)from_memory(kernels, a, Side::H, 64, 1); }).find("depth >= 2"),
            std::string::npos);
}

}  // namespace
}  // namespace dnmf
