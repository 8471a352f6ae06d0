// The byte parser and the memory planner: arithmetic against hand counts, decisions, and the error that states
// the minimum budget.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "backend/cpu/skinny_products.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/bytes.hpp"
#include "stream/planner.hpp"
#include "support/error_message.hpp"

namespace dnmf::stream {
namespace {

using test::error_message;

TEST(ParseBytes, SuffixesArePowersOf1024) {
  EXPECT_EQ(parse_bytes("1048576"), 1048576);
  EXPECT_EQ(parse_bytes("256M"), 256LL << 20);
  EXPECT_EQ(parse_bytes("2G"), 2LL << 30);
  EXPECT_EQ(parse_bytes("2g"), 2LL << 30);
  EXPECT_EQ(parse_bytes("1.5GiB"), 3LL << 29);
  EXPECT_EQ(parse_bytes("64KB"), 64LL << 10);
  EXPECT_EQ(parse_bytes("1T"), 1LL << 40);
  EXPECT_EQ(parse_bytes("100B"), 100);
}

TEST(ParseBytes, ErrorsNameTheText) {
  for (const std::string bad : {"", "M", "12X", "1.2.3G", "-5M", "0", "5MX", "GiB", "0.1"}) {
    const std::string message = error_message([&] { (void)parse_bytes(bad); });
    EXPECT_NE(message.find("'" + bad + "'"), std::string::npos) << message;
  }
  // A fraction of a byte without a unit was rounded down ("1.5" became one byte): a unit was meant.
  EXPECT_NE(error_message([&] { (void)parse_bytes("1.5"); }).find("must be whole"), std::string::npos);
  EXPECT_EQ(parse_bytes("1.5K"), 1536);
  EXPECT_EQ(parse_bytes("2.0"), 2);
  // Reported by a helper session: a negative size was "no number", and bytes went through a double.
  EXPECT_NE(error_message([&] { (void)parse_bytes("-1"); }).find("a size cannot be negative"), std::string::npos);
  EXPECT_NE(error_message([&] { (void)parse_bytes("1.9999999999999999999999"); }).find("must be whole"),
            std::string::npos);
  EXPECT_EQ(parse_bytes("9007199254740993"), 9007199254740993LL);
  EXPECT_EQ(parse_bytes("9223372036854775807"), std::numeric_limits<std::int64_t>::max());  // as Python accepts
  EXPECT_NE(error_message([&] { (void)parse_bytes("9223372036854775808"); }).find("too large"), std::string::npos);
}

TEST(DescribeBytes, ExactAndHuman) {
  EXPECT_EQ(describe_bytes(256LL << 20), "268435456 bytes (256.0 MiB)");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(12), "12 B");
}

// A 1x1 layout of an m x n problem.
PlanInput single(index_t m, index_t n, index_t k, std::int64_t budget) {
  PlanInput in;
  in.layout = dist::make_layout(dist::GridShape{1, 1}, 0, 0, m, n);
  in.stored = m * n;
  in.scalar_bytes = 8;
  in.rank = k;
  in.threads = 2;
  in.budget = budget;
  in.baseline = 10 << 20;
  in.min_tile_bytes = to_size(m) * 8;
  return in;
}

TEST(Planner, FactorBytesFollowTheIterationsAllocations) {
  // 1x1: pieces k(m+n) + iterate's pieces and numerators 2k(m+n) + Grams 3k² + sums; the gather holds
  // pieces + 2k(m+n) and the final check pieces + 2k(m+n) + kn: the largest is the final check.
  const index_t m = 1000, n = 600, k = 8;
  PlanInput in = single(m, n, k, 1LL << 30);
  const std::int64_t iteration = k * (m + n) * 3 + 3 * k * k + 4 * k;
  const std::int64_t final_check = k * (m + n) * 3 + k * n + 2 * k * k;
  EXPECT_EQ(factor_bytes(in), std::max(iteration, final_check) * 8);
  // A rank of a 2x2 grid holds gathered blocks beside its pieces and gathers nothing; MPI's reduce-scatter of
  // the larger numerator (k x mb, two ranks) holds a copy of it and a piece.
  in.layout = dist::make_layout(dist::GridShape{2, 2}, 1, 0, m, n);
  in.gathers_factors = false;
  const std::int64_t mb = 500, nb = 300, wr = 250, hc = 150;
  const std::int64_t grid_iteration =
      k * (wr + hc) * 2 + k * (mb + wr) + k * (nb + hc) + k * (mb + nb) + k * (mb + wr) + 3 * k * k + 4 * k;
  const std::int64_t grid_final = k * (wr + hc) + 2 * k * (mb + nb) + k * nb + 2 * k * k;
  EXPECT_EQ(factor_bytes(in), std::max(grid_iteration, grid_final) * 8);
}

TEST(Planner, WorkspaceCountsPrivateAccumulators) {
  PlanInput in = single(1000, 600, 8, 1LL << 30);
  in.threads = 4;
  const std::int64_t base = workspace_bytes(in);
  in.threads = 5;
  // One more thread: one more k x max(m, n) accumulator and its scratch.
  EXPECT_EQ(workspace_bytes(in) - base, 8 * 1000 * 8 + (2 << 20));
  in.algorithm = Algorithm::bpp;
  EXPECT_GT(workspace_bytes(in), base + 8 * 1000 * 8);
}

TEST(Planner, ResidentPlanCountsTheFixedSlotsOfATallBlock) {
  // 200000 x 20, k = 5, f64: the pass over the 20 columns sums k x 200000 (1e6 entries, 8 MB) over 2e7 element
  // operations: at least 8 operations per accumulator entry, less than 32 per entry per slot beyond two, so two
  // slots whatever the threads (backend/cpu/cpu_kernels.cpp). Where the skinny kernels take k = 5 (AVX2 or
  // AVX-512) the dense pass sums transposed, and both slots hold a private 8 MB buffer; through BLAS only the
  // second does. On one thread the threads' count (none) misses them; on two it covers one.
  const std::int64_t buffers = backend::cpu::skinny_pays<double>(5) ? 2 : 1;
  PlanInput in = single(200000, 20, 5, 1LL << 30);
  in.threads = 1;
  EXPECT_EQ(resident_accumulator_bytes(in), buffers * 5 * 200000 * 8);
  const Plan one = plan_memory(in);
  EXPECT_FALSE(one.streamed);
  EXPECT_EQ(one.workspace, workspace_bytes(in) + buffers * 5 * 200000 * 8);
  EXPECT_EQ(one.total, one.baseline + one.runtime_reserve + one.factors + one.workspace + one.matrix);
  in.threads = 2;
  EXPECT_EQ(resident_accumulator_bytes(in), (buffers - 1) * 5 * 200000 * 8);
  // Sparse passes sum in place into the first slot.
  in.sparse = true;
  in.threads = 1;
  EXPECT_EQ(resident_accumulator_bytes(in), 5 * 200000 * 8);
}

TEST(Planner, StreamedPlanCountsTheSlotsOfItsTiles) {
  // The same tall block streamed: a tile's pass sums into up to one slot per MiB of tile, each k x the tile's
  // lines, never more than the resident pass's. A one-row tile needs almost nothing; a tile of the whole block
  // needs what residence does; a plan between them counts its own tile's and stays within the budget.
  PlanInput in = single(200000, 20, 5, 1LL << 30);
  in.threads = 1;
  in.min_tile_bytes = 20 * 8;
  const std::int64_t resident = resident_accumulator_bytes(in);
  EXPECT_LE(tile_accumulator_bytes(in, in.min_tile_bytes), 2 * 5 * 8);
  EXPECT_EQ(tile_accumulator_bytes(in, 200000 * 20 * 8), resident);
  const std::size_t mib = std::size_t{1} << 20;
  EXPECT_EQ(tile_accumulator_bytes(in, mib / 2), std::min<std::int64_t>(resident, 5 * (mib / 2 / 160 + 1) * 8));
  const Plan resident_plan = plan_memory(in);
  ASSERT_FALSE(resident_plan.streamed);
  in.budget = resident_plan.total - (8 << 20);
  const Plan p = plan_memory(in);
  ASSERT_TRUE(p.streamed);
  EXPECT_EQ(p.workspace, workspace_bytes(in) + tile_accumulator_bytes(in, p.tile_bytes));
  EXPECT_EQ(p.total, p.baseline + p.runtime_reserve + p.factors + p.workspace + p.staging + p.ring);
  EXPECT_LE(p.total, p.budget);
}

TEST(Planner, ResidentWhenEverythingFits) {
  const Plan p = plan_memory(single(2000, 1000, 8, 1LL << 30));
  EXPECT_FALSE(p.streamed);
  EXPECT_EQ(p.matrix, 2000 * 1000 * 8);
  EXPECT_EQ(p.total, p.baseline + p.runtime_reserve + p.factors + p.workspace + p.matrix);
  EXPECT_LE(p.total, p.budget);
  EXPECT_EQ(p.total, p.resident_total);
}

TEST(Planner, StreamsWhenTheMatrixDoesNotFit) {
  // A 1 GiB matrix (8192 x 16384 doubles) under a 256 MiB budget.
  const Plan p = plan_memory(single(8192, 16384, 16, 256LL << 20));
  ASSERT_TRUE(p.streamed);
  EXPECT_GE(p.depth, 2);
  EXPECT_LE(p.depth, 4);
  EXPECT_GE(p.tile_bytes, 8192u * 8);
  EXPECT_LE(p.tile_bytes, kMaxTileBytes);
  EXPECT_EQ(p.matrix, 0);
  EXPECT_EQ(p.ring, static_cast<std::int64_t>(p.tile_bytes) * p.depth);
  EXPECT_EQ(p.total, p.baseline + p.runtime_reserve + p.factors + p.workspace + p.staging + p.ring);
  EXPECT_LE(p.total, p.budget);
  EXPECT_GT(p.resident_total, p.budget);
}

TEST(Planner, TightBudgetGivesTwoSmallTiles) {
  PlanInput in = single(8192, 16384, 16, 0);
  in.budget = 1LL << 40;
  const Plan loose = plan_memory(in);
  // Room for two and a half minimal tiles: the third slot does not fit.
  in.budget = loose.minimum_budget + static_cast<std::int64_t>(in.min_tile_bytes) / 2;
  const Plan p = plan_memory(in);
  ASSERT_TRUE(p.streamed);
  EXPECT_EQ(p.depth, 2);
  EXPECT_GE(p.tile_bytes, in.min_tile_bytes);
  EXPECT_LE(p.total, p.budget);
}

TEST(Planner, TooSmallBudgetStatesTheMinimum) {
  PlanInput in = single(8192, 16384, 16, 1LL << 40);
  const std::int64_t minimum = plan_memory(in).minimum_budget;
  in.budget = minimum - 1;
  const std::string message = error_message([&] { (void)plan_memory(in); });
  EXPECT_NE(message.find("too small"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(minimum + kStatedBaselineJitter) + " bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("MiB"), std::string::npos) << message;
  in.budget = minimum;
  EXPECT_TRUE(plan_memory(in).streamed);
}

TEST(Planner, TilesNeverExceedTheMatrix) {
  // Loading resident would hold four copies (a reader's staging), so streaming is chosen with room for more
  // than the whole matrix per slot: one tile holds it all, and slots beyond two would stay empty.
  PlanInput in = single(1000, 1000, 4, 1LL << 40);
  in.resident_copies = 4;
  in.budget = plan_memory(in).resident_total - 1;
  const Plan p = plan_memory(in);
  ASSERT_TRUE(p.streamed);
  EXPECT_EQ(p.tile_bytes, 1000u * 1000 * 8);
  EXPECT_EQ(p.depth, 2);
}

TEST(Planner, ResidentCopiesCountTheLoader) {
  PlanInput in = single(1000, 1000, 4, 1LL << 40);
  const Plan one = plan_memory(in);
  in.resident_copies = 2;
  EXPECT_EQ(plan_memory(in).resident_total - one.resident_total, 1000 * 1000 * 8);
}

TEST(Planner, SparseCountsIndicesAndRowPointers) {
  PlanInput in = single(1000, 800, 4, 1LL << 40);
  in.sparse = true;
  in.stored = 5000;
  const Plan p = plan_memory(in);
  EXPECT_EQ(p.matrix, 5000 * (8 + 4) + 1001 * 8);
}

}  // namespace
}  // namespace dnmf::stream
