#include "stream/planner.hpp"

#include <algorithm>

#include "backend/cpu/cpu_kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/bytes.hpp"

namespace dnmf::stream {
namespace {

// Scratch each compute thread's kernels hold besides its accumulator: the cpu backend's fused-pass numerator
// and KL ratio buffers (about 1 MiB of A per sub-tile) and BLAS packing space.
constexpr std::int64_t kPerThreadScratch = std::int64_t{2} << 20;
// OpenBLAS touches its per-thread buffers and OpenMP its thread stacks on the first product, after planning;
// measured on x86-64 (OpenBLAS 0.3, libgomp): about 3 MiB per thread on top of the planning-time RSS.
constexpr std::int64_t kRuntimePerThread = std::int64_t{4} << 20;
// Allocator slack: glibc arenas keep freed accumulators of one size class around for the next tile.
constexpr std::int64_t kAllocatorSlack = std::int64_t{4} << 20;

std::int64_t matrix_bytes(const PlanInput& in) {
  const auto s = static_cast<std::int64_t>(in.scalar_bytes);
  if (!in.sparse) return in.stored * s;
  return in.stored * (s + static_cast<std::int64_t>(sizeof(col_index_t))) +
         (in.layout.a_rows.size() + 1) * static_cast<std::int64_t>(sizeof(index_t));
}

// Extrapolation (solvers/alternating.cpp): Ŵ and W_prev beside the extrapolated piece, a copy of the other piece
// (the pair a dropped step goes back to), then P̂ and P_prev beside the other one or Ŵ's gathered block, and Ĝ.
// The iteration may run on Aᵀ, so either piece may be the one.
std::int64_t extrapolation_elements(const PlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t k = in.rank;
  const std::int64_t piece = std::max(l.w_rows.size(), l.h_cols.size());
  const std::int64_t block = std::max(l.a_rows.size(), l.a_cols.size());
  return k * (3 * piece + std::max(2 * piece, block)) + k * k;
}

}  // namespace

std::int64_t factor_bytes(const PlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t k = in.rank, mb = l.a_rows.size(), nb = l.a_cols.size();
  const std::int64_t wr = l.w_rows.size(), hc = l.h_cols.size();
  const bool row_split = l.w_piece_sizes.size() > 1;  // W's block row is shared by pc > 1 ranks
  const bool col_split = l.h_piece_sizes.size() > 1;  // H's block column by pr > 1 ranks
  const std::int64_t pieces = k * (wr + hc);          // solve()'s host copy of this rank's pieces
  // iterate(): pieces on the backend, gathered blocks where a grid direction splits them, the numerators
  // P (k x nb) and Qt (k x mb) with their owned parts, three Gram matrices and the row sums.
  // MPI's reduce-scatter of a numerator holds scratch beside it: Open MPI's ring reduces into a temporary of the
  // whole input and receives into one (two ranks) or two of a piece's size (seen with strace -k: 22 + 11 MiB for a
  // 150000 x 20 numerator on a 1x2 grid, which then peaked 10% over its plan).
  const std::int64_t row_inbufs = l.w_piece_sizes.size() > 2 ? 2 : 1, col_inbufs = l.h_piece_sizes.size() > 2 ? 2 : 1;
  const std::int64_t reduce_scatter =
      std::max(row_split ? k * (mb + row_inbufs * wr) : 0, col_split ? k * (nb + col_inbufs * hc) : 0);
  const std::int64_t iteration = pieces + k * (wr + hc) + (row_split ? k * (mb + wr) : 0) +
                                 (col_split ? k * (nb + hc) : 0) + k * (mb + nb) + reduce_scatter + 3 * k * k + 4 * k +
                                 (in.extrapolate ? extrapolation_elements(in) : 0);
  // The final error: the gathered blocks on the host and on the backend, and one product k x nb.
  const std::int64_t final_check = pieces + 2 * k * (mb + nb) + k * nb + 2 * k * k;
  // gather_factors() on the receiving rank: W (m x k) with its transposed staging, H with its ranked copy.
  const std::int64_t gather = in.gathers_factors ? pieces + 2 * k * (l.m + l.n) : 0;
  return std::max({iteration, final_check, gather}) * static_cast<std::int64_t>(in.scalar_bytes);
}

namespace {

// cpu kernels: every thread but the first accumulates a k x (other side) product privately (a resident block
// may need more: resident_accumulator_bytes).
std::int64_t thread_accumulator_bytes(const PlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t widest = std::max(l.a_rows.size(), l.a_cols.size());
  return (std::max(in.threads, 1) - 1) * in.rank * widest * static_cast<std::int64_t>(in.scalar_bytes);
}

}  // namespace

std::int64_t workspace_bytes(const PlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t k = in.rank;
  const std::int64_t widest = std::max(l.a_rows.size(), l.a_cols.size());
  const std::int64_t threads = std::max(in.threads, 1);
  std::int64_t bytes = thread_accumulator_bytes(in) + threads * kPerThreadScratch;
  // NNLS (bpp) works in float64 on the scaled right-hand sides and solutions, plus per-column state.
  if (in.algorithm == Algorithm::bpp) bytes += (16 * k + 48) * widest;  // two float64 k-vectors per column
  return bytes;
}

std::int64_t resident_accumulator_bytes(const PlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t k = in.rank;
  const auto scalar = static_cast<std::int64_t>(in.scalar_bytes);
  // A pass over the resident block sums the other side's numerator into slots fixed by the problem, not by the
  // threads (backend/cpu/cpu_kernels.cpp), each after the first a private k x (that side) buffer: a 200000 x 20
  // block has two on one thread, which workspace_bytes' threads - 1 missed (the run peaked at 1.13x its budget).
  // Where the dense pass sums transposed the first slot has a buffer too (a 1500007 x 1 block at k = 1: 1.07x).
  // The iteration may run on A or Aᵀ, so either side may be the other. A streamed pass works a tile at a time,
  // whose few slots the thread term covers.
  const double work = static_cast<double>(k) * static_cast<double>(std::max<index_t>(in.stored, 0));
  std::int64_t slot_buffers = 0;
  for (const std::int64_t extent : {l.a_rows.size(), l.a_cols.size()}) {
    const std::int64_t buffer = k * extent * scalar;
    const index_t buffers =
        backend::cpu_accumulator_buffers(!in.sparse, k, static_cast<double>(buffer), work, in.scalar_bytes);
    slot_buffers = std::max(slot_buffers, buffers * buffer);
  }
  return std::max<std::int64_t>(0, slot_buffers - thread_accumulator_bytes(in));
}

std::int64_t tile_accumulator_bytes(const PlanInput& in, std::size_t tile_bytes) {
  // A streamed tile's pass sums into at most one slot per kernel sub-tile (about 1 MiB of A: cpu_kernels.cpp's
  // default_tile_bytes), each buffer k x the tile's lines: a 150000 x 20 block on a 1x2 grid at k = 20, one
  // thread, held two of 22 MiB for a tile of the whole block (strace -k) and peaked at 1.1x its budget while the
  // plan left them out. The stripes' direction is the source's, so the lines are bounded by the narrower side.
  // Never more than the resident pass's.
  const dist::Layout& l = in.layout;
  const std::int64_t widest = std::max(l.a_rows.size(), l.a_cols.size());
  const std::int64_t narrowest = std::max<std::int64_t>(std::min(l.a_rows.size(), l.a_cols.size()), 1);
  const auto scalar = static_cast<std::int64_t>(in.scalar_bytes);
  const std::int64_t lines = std::min(widest, static_cast<std::int64_t>(tile_bytes) / (scalar * narrowest) + 1);
  const auto sub_tiles = static_cast<std::int64_t>(tile_bytes >> 20) + 1;
  const std::int64_t buffers = sub_tiles * in.rank * lines * scalar;
  return std::min(resident_accumulator_bytes(in), std::max<std::int64_t>(0, buffers - thread_accumulator_bytes(in)));
}

Plan plan_memory(const PlanInput& in) {
  if (in.budget <= 0) throw Error("memory budget must be positive");
  Plan p;
  p.budget = in.budget;
  p.baseline = in.baseline;
  p.runtime_reserve = static_cast<std::int64_t>(std::max(in.threads, 1)) * kRuntimePerThread + kAllocatorSlack;
  p.factors = factor_bytes(in) + in.solver_bytes;
  p.workspace = workspace_bytes(in);
  const std::int64_t fixed = p.baseline + p.runtime_reserve + p.factors + p.workspace;
  const std::int64_t a_bytes = matrix_bytes(in);
  const std::int64_t resident_extra = resident_accumulator_bytes(in);
  p.resident_total = fixed + resident_extra + in.resident_beside +
                     static_cast<std::int64_t>(static_cast<double>(a_bytes) * in.resident_copies);
  const std::int64_t least_extra = tile_accumulator_bytes(in, in.min_tile_bytes);
  p.minimum_budget = fixed + least_extra + static_cast<std::int64_t>(in.staging_bytes + 2 * in.min_tile_bytes);
  if (in.allow_resident && p.resident_total <= in.budget) {
    p.workspace += resident_extra;
    p.matrix = p.resident_total - fixed - resident_extra;
    p.total = p.resident_total;
    return p;
  }
  if (in.budget < p.minimum_budget)
    throw UsageError(
        "memory budget " + describe_bytes(in.budget) + " is too small: streaming this block needs at least " +
        describe_bytes(p.minimum_budget + kStatedBaselineJitter) + " (baseline " +
        human_bytes(static_cast<double>(p.baseline)) + ", which varies between runs, + " +
        human_bytes(static_cast<double>(kStatedBaselineJitter)) + " for that + runtime " +
        human_bytes(static_cast<double>(p.runtime_reserve)) + " + factors " +
        human_bytes(static_cast<double>(p.factors)) + " + workspaces " +
        human_bytes(static_cast<double>(p.workspace + least_extra)) +
        (in.staging_bytes > 0 ? " + staging " + human_bytes(static_cast<double>(in.staging_bytes)) +
                                    " (converting the file's order or type)"
                              : std::string()) +
        " + two tiles of " + human_bytes(static_cast<double>(in.min_tile_bytes)) + ")" +
        // Where holding the block takes less than streaming it, that smaller figure is the budget
        // to ask for (a 400 x 300 .npy: 27.5 MiB held, 34.5 streamed).
        (in.allow_resident && p.resident_total < p.minimum_budget
             ? "; held in memory instead it needs " + describe_bytes(p.resident_total + kStatedBaselineJitter) +
                   ", which a budget that "
                   "large gives it"
             : std::string()));
  p.streamed = true;
  p.staging = static_cast<std::int64_t>(in.staging_bytes);
  // Tiles as large as the budget allows, with the slot buffers their passes need beside them; those shrink with
  // the tile, so the tiles cut after subtracting the first estimate need no more than it.
  const std::size_t whole = std::max<std::size_t>(to_size(a_bytes), in.min_tile_bytes);
  const auto cut = [&](std::int64_t extra, int& depth) {
    const auto available = to_size(std::max<std::int64_t>(in.budget - fixed - extra - p.staging, 0));
    std::size_t tile = std::min({kMaxTileBytes, available / 3, whole});
    depth = 3;
    if (tile < in.min_tile_bytes) {  // only two minimal tiles fit
      tile = std::max(std::min({kMaxTileBytes, available / 2, whole}), in.min_tile_bytes);
      depth = 2;
    } else {
      // Spare budget buys a fourth slot (slack for uneven reads); more tiles than the block has are useless.
      const std::size_t tiles = (whole + tile - 1) / tile;
      depth = static_cast<int>(std::clamp<std::size_t>(std::min<std::size_t>(available / tile, tiles), 2, 4));
    }
    return tile;
  };
  int depth = 2;
  const std::int64_t first_extra = tile_accumulator_bytes(in, cut(least_extra, depth));
  const std::size_t tile = cut(first_extra, depth);
  const std::int64_t extra = tile_accumulator_bytes(in, tile);
  p.workspace += extra;
  p.tile_bytes = tile;
  p.depth = depth;
  p.ring = static_cast<std::int64_t>(tile) * depth;
  p.total = fixed + extra + p.staging + p.ring;
  return p;
}

}  // namespace dnmf::stream
