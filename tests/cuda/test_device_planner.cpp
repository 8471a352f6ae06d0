// The plain-C++ parts of the CUDA streamed mode and of NCCL, tested without a GPU: the device memory planner
// (resident when it fits, streamed tiles and depth within the budget, the minimum-budget error), the overlap
// summary of a tile timeline, and the padding of uneven NCCL pieces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cuda/nccl_communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/index.hpp"
#include "stream/device_planner.hpp"
#include "stream/timeline.hpp"
#include "support/error_message.hpp"

namespace dnmf {
namespace {

using stream::DevicePlan;
using stream::DevicePlanInput;
using stream::plan_device;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// One process holding an m x n dense f64 block in column stripes (a line is one column of m entries).
DevicePlanInput dense(index_t m, index_t n, index_t k, std::int64_t budget, Algorithm algo = Algorithm::mu) {
  DevicePlanInput in;
  in.layout = dist::make_layout(dist::GridShape{1, 1}, 0, 0, m, n);
  in.stored = m * n;
  in.scalar_bytes = 8;
  in.rank = k;
  in.algorithm = algo;
  in.budget = budget;
  in.min_tile_bytes = to_size(m) * 8;
  return in;
}

TEST(DevicePlanner, ResidentWhenTheBlockAndFactorsFit) {
  const DevicePlan p = plan_device(dense(10000, 5000, 16, 2 * kGiB));
  EXPECT_FALSE(p.streamed);
  EXPECT_EQ(p.matrix, 10000LL * 5000 * 8);
  EXPECT_EQ(p.total, p.reserve + p.factors + p.workspace + p.matrix);
  EXPECT_LE(p.total, p.budget);
  EXPECT_EQ(p.resident_total, p.total);
}

TEST(DevicePlanner, StreamsWhenTheBlockExceedsTheBudgetAndStaysWithinIt) {
  // 4 GiB of A on a 1 GiB budget: the benchmark's case.
  const DevicePlanInput in = dense(32768, 16384, 16, kGiB);
  const DevicePlan p = plan_device(in);
  ASSERT_TRUE(p.streamed);
  EXPECT_GT(p.resident_total, in.budget);
  EXPECT_EQ(p.tile_bytes, stream::kDeviceMaxTileBytes);  // room for full-size tiles
  EXPECT_EQ(p.tile_bytes % in.min_tile_bytes, 0u);       // whole columns
  EXPECT_EQ(p.depth, 4);
  EXPECT_EQ(p.ring, static_cast<std::int64_t>(p.tile_bytes) * p.depth);
  EXPECT_EQ(p.total, p.reserve + p.factors + p.workspace + p.ring);
  EXPECT_LE(p.total, p.budget);
}

TEST(DevicePlanner, EveryBudgetFromTheMinimumUpIsKept) {
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
    const DevicePlanInput base = dense(20000, 3000, 8, kGiB, algo);
    DevicePlanInput forced = base;
    forced.budget = 4 * kGiB;
    forced.force_streamed = true;
    const std::int64_t minimum = plan_device(forced).minimum_budget;
    for (std::int64_t budget = minimum; budget < 600 * kMiB; budget = budget * 5 / 4 + 12345) {
      DevicePlanInput in = base;
      in.budget = budget;
      const DevicePlan p = plan_device(in);
      EXPECT_LE(p.total, budget) << to_string(algo) << " budget " << budget;
      if (p.streamed) {
        EXPECT_GE(p.depth, 2);
        EXPECT_LE(p.depth, 4);
        EXPECT_GE(p.tile_bytes, in.min_tile_bytes);
        EXPECT_LE(p.tile_bytes, stream::kDeviceMaxTileBytes);
      }
    }
  }
}

TEST(DevicePlanner, TooSmallABudgetNamesTheMinimum) {
  DevicePlanInput in = dense(100000, 1000, 32, 50 * kMiB);
  const std::string message = test::error_message([&] { (void)plan_device(in); });
  EXPECT_NE(message.find("device memory budget"), std::string::npos) << message;
  EXPECT_NE(message.find("needs at least"), std::string::npos) << message;
  in.budget = 4 * kGiB;
  in.force_streamed = true;
  const std::int64_t minimum = plan_device(in).minimum_budget;
  EXPECT_NE(message.find(std::to_string(minimum) + " bytes"), std::string::npos) << message;
  in.budget = minimum;
  const DevicePlan p = plan_device(in);
  EXPECT_TRUE(p.streamed);
  EXPECT_EQ(p.depth, 2);
  EXPECT_EQ(p.tile_bytes, in.min_tile_bytes);
  in.budget = minimum - 1;
  EXPECT_THROW((void)plan_device(in), Error);
}

TEST(DevicePlanner, ForcedStreamingAndTheTileCap) {
  DevicePlanInput in = dense(4000, 3000, 8, 8 * kGiB);
  in.force_streamed = true;
  in.max_tile_bytes = std::size_t{4000} * 8 * 100;  // 100 columns
  const DevicePlan p = plan_device(in);
  EXPECT_TRUE(p.streamed);
  EXPECT_EQ(p.tile_bytes, in.max_tile_bytes);
  EXPECT_EQ(p.depth, 4);
  in.max_tile_bytes = 0;
  in.stored = index_t{4000} * 2;  // a block of two columns: two tiles at most, so depth 2
  in.layout = dist::make_layout(dist::GridShape{1, 1}, 0, 0, 4000, 2);
  EXPECT_EQ(plan_device(in).depth, 2);
}

TEST(DevicePlanner, CsrThatDoesNotFitIsAnError) {
  DevicePlanInput in = dense(1000000, 1000000, 16, 256 * kMiB);
  in.sparse = true;
  in.stored = 200000000;
  const std::string message = test::error_message([&] { (void)plan_device(in); });
  EXPECT_NE(message.find("CSR blocks cannot stream through the device"), std::string::npos) << message;
  in.stored = 1000000;
  in.budget = 2 * kGiB;
  EXPECT_FALSE(plan_device(in).streamed);
}

TEST(DevicePlanner, GridSplitsCountTheGatheredBlocks) {
  // A 2x2 grid holds gathered k x block copies beside its pieces: more factor bytes than a 1x2 grid's rank.
  DevicePlanInput a = dense(1000, 1000, 10, kGiB), b = a;
  a.layout = dist::make_layout(dist::GridShape{2, 2}, 0, 0, 2000, 2000);
  b.layout = dist::make_layout(dist::GridShape{1, 1}, 0, 0, 1000, 1000);
  EXPECT_GT(stream::device_factor_bytes(a), stream::device_factor_bytes(b));
}

using stream::summarise;
using stream::Timeline;

TEST(TileTimeline, CopiesAfterComputesDoNotOverlap) {
  Timeline t;
  for (int i = 0; i < 4; ++i) t.tiles.push_back({2.0 * i, 2.0 * i + 1, 2.0 * i + 1, 2.0 * i + 2});
  t.bytes_copied = 400;
  const auto s = summarise(t);
  EXPECT_EQ(s.tiles, 4u);
  EXPECT_DOUBLE_EQ(s.wall, 8);
  EXPECT_DOUBLE_EQ(s.copy_busy, 4);
  EXPECT_DOUBLE_EQ(s.compute_busy, 4);
  EXPECT_DOUBLE_EQ(s.overlapped, 0);
  EXPECT_DOUBLE_EQ(s.overlap_fraction, 0);
  EXPECT_DOUBLE_EQ(s.copy_utilisation, 0.5);
  EXPECT_DOUBLE_EQ(s.copy_bandwidth, 100);
}

TEST(TileTimeline, ComputeUnderTheNextCopyIsHidden) {
  // Back-to-back copies of 1 s; tile t computes for 0.5 s right after its copy, under copy t+1.
  Timeline t;
  for (int i = 0; i < 5; ++i) t.tiles.push_back({1.0 * i, 1.0 * i + 1, 1.0 * i + 1, 1.0 * i + 1.5});
  const auto s = summarise(t);
  EXPECT_DOUBLE_EQ(s.copy_busy, 5);
  EXPECT_DOUBLE_EQ(s.compute_busy, 2.5);
  EXPECT_DOUBLE_EQ(s.overlapped, 2.0);  // all but the last tile's compute
  EXPECT_DOUBLE_EQ(s.overlap_fraction, 0.8);
  EXPECT_DOUBLE_EQ(s.wall, 5.5);
}

TEST(TileTimeline, OverlappingIntervalsOfOneKindAreMergedAndEmptyOnesIgnored) {
  Timeline t;
  t.tiles.push_back({0, 2, 1, 3});
  t.tiles.push_back({1, 3, 2, 2});  // an empty compute
  const auto s = summarise(t);
  EXPECT_DOUBLE_EQ(s.copy_busy, 3);
  EXPECT_DOUBLE_EQ(s.compute_busy, 2);
  EXPECT_DOUBLE_EQ(s.overlapped, 2);
  EXPECT_DOUBLE_EQ(s.overlap_fraction, 1);
  EXPECT_EQ(summarise(Timeline{}).tiles, 0u);
}

TEST(NcclPadding, UnevenPiecesArePaddedToTheLargest) {
  const auto p = dist::padded_pieces({3, 5, 0, 5});
  EXPECT_FALSE(p.even);
  EXPECT_EQ(p.piece, 5u);
  EXPECT_EQ(p.offsets, (std::vector<std::size_t>{0, 3, 8, 8}));
  const auto e = dist::padded_pieces({4, 4, 4});
  EXPECT_TRUE(e.even);
  EXPECT_EQ(e.piece, 4u);
  EXPECT_EQ(e.offsets, (std::vector<std::size_t>{0, 4, 8}));
}

}  // namespace
}  // namespace dnmf
