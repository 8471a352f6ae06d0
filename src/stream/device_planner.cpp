#include "stream/device_planner.hpp"

#include <algorithm>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/bytes.hpp"

namespace dnmf::stream {
namespace {

std::int64_t matrix_bytes(const DevicePlanInput& in) {
  const auto s = static_cast<std::int64_t>(in.scalar_bytes);
  if (!in.sparse) return in.stored * s;
  // Resident CSR: 32-bit offsets and indices below 2^31 entries, 64-bit from there (resident.hpp).
  const std::int64_t index = in.stored < (std::int64_t{1} << 31) ? 4 : 8;
  return in.stored * (s + index) + (in.layout.a_rows.size() + 1) * index;
}

// Scratch of one fused pass over `lines` stripe lines (a tile, or the whole block when resident): the
// numerator and the MU update's output (k x lines each), plus the KL model tile where KL runs.
std::int64_t pass_scratch(const DevicePlanInput& in, std::int64_t lines, std::int64_t tile_bytes) {
  const std::int64_t k = in.rank, s = static_cast<std::int64_t>(in.scalar_bytes);
  std::int64_t bytes = 2 * k * lines * s;
  if (in.algorithm == Algorithm::kl) bytes += std::min<std::int64_t>(tile_bytes, kKlChunkBytes);
  return bytes;
}

}  // namespace

std::int64_t device_factor_bytes(const DevicePlanInput& in) {
  const dist::Layout& l = in.layout;
  const std::int64_t k = in.rank, mb = l.a_rows.size(), nb = l.a_cols.size();
  const std::int64_t wr = l.w_rows.size(), hc = l.h_cols.size();
  const bool row_split = l.w_piece_sizes.size() > 1;
  const bool col_split = l.h_piece_sizes.size() > 1;
  // iterate(): the pieces, the gathered blocks where a grid direction splits them, the numerators P (k x nb)
  // and Qt (k x mb) with their owned parts, three Gram matrices and three row-sum vectors.
  const std::int64_t iteration = k * (wr + hc) + (row_split ? k * mb : 0) + (col_split ? k * nb : 0) + k * (mb + nb) +
                                 (row_split ? k * wr : 0) + (col_split ? k * hc : 0) + 3 * k * k + 3 * k;
  // The final error: the gathered blocks and one product k x nb.
  const std::int64_t final_check = k * (mb + 2 * nb);
  return std::max(iteration, final_check) * static_cast<std::int64_t>(in.scalar_bytes);
}

DevicePlan plan_device(const DevicePlanInput& in) {
  if (in.budget <= 0) throw Error("device memory budget must be positive");
  DevicePlan p;
  p.budget = in.budget;
  p.reserve = kDeviceLibraryReserve;
  p.factors = device_factor_bytes(in);
  const std::int64_t fixed = p.reserve + p.factors;
  const std::int64_t a_bytes = matrix_bytes(in);
  const std::int64_t widest = std::max(in.layout.a_rows.size(), in.layout.a_cols.size());
  const std::int64_t resident_workspace = pass_scratch(in, widest, a_bytes);
  p.resident_total = fixed + resident_workspace + a_bytes;
  if (p.resident_total <= in.budget && !(in.force_streamed && !in.sparse)) {
    p.workspace = resident_workspace;
    p.matrix = a_bytes;
    p.total = p.resident_total;
    return p;
  }
  if (in.sparse)
    throw Error("device memory budget " + describe_bytes(in.budget) + " is too small for this CSR block (" +
                describe_bytes(p.resident_total) +
                " with the factors), and CSR blocks cannot stream through the device yet");
  const std::size_t min_tile = std::max<std::size_t>(in.min_tile_bytes, 1);
  const std::size_t line = in.line_bytes > 0 ? in.line_bytes : min_tile;
  const std::size_t cap = std::max(in.max_tile_bytes > 0 ? in.max_tile_bytes : kDeviceMaxTileBytes, min_tile);
  const auto lines_of = [&](std::size_t tile) {
    return static_cast<std::int64_t>(std::max<std::size_t>(tile / line, 1));
  };
  const auto cost = [&](std::size_t tile, int depth) {
    return fixed + static_cast<std::int64_t>(tile) * depth +
           pass_scratch(in, lines_of(tile), static_cast<std::int64_t>(tile));
  };
  p.minimum_budget = cost(min_tile, 2);
  if (in.budget < p.minimum_budget)
    throw UsageError("device memory budget " + describe_bytes(in.budget) +
                     " is too small: streaming this block through the device needs at least " +
                     describe_bytes(p.minimum_budget) + " (library reserve " +
                     human_bytes(static_cast<double>(p.reserve)) + " + factors " +
                     human_bytes(static_cast<double>(p.factors)) + " + two tiles of one line, " +
                     human_bytes(static_cast<double>(min_tile)) + " each, and their scratch)");
  const std::size_t whole = std::max<std::size_t>(to_size(a_bytes), min_tile);
  // The largest tile (in whole lines, at most the cap and the block) whose ring of `depth` fits the budget.
  const auto largest = [&](int depth) {
    std::size_t lo = min_tile, hi = std::min(cap, whole);
    if (cost(lo, depth) > in.budget) return std::size_t{0};
    while (hi - lo > line) {  // cost grows with the tile: bisect on it
      const std::size_t mid = lo + (hi - lo) / 2;
      if (cost(mid, depth) <= in.budget) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    if (cost(hi, depth) <= in.budget) lo = hi;
    return std::max(lo / line, std::size_t{1}) * line;
  };
  int depth = 3;
  std::size_t tile = largest(3);
  if (tile == 0) {
    depth = 2;
    tile = largest(2);
  }
  const std::size_t tiles = (whole + tile - 1) / tile;
  if (depth == 3 && tiles > 3 && cost(tile, 4) <= in.budget) depth = 4;  // slack for uneven copies
  depth = static_cast<int>(std::clamp<std::size_t>(std::min<std::size_t>(to_size(depth), tiles), 2, to_size(depth)));
  p.streamed = true;
  p.tile_bytes = tile;
  p.depth = depth;
  p.ring = static_cast<std::int64_t>(tile) * depth;
  p.workspace = pass_scratch(in, lines_of(tile), static_cast<std::int64_t>(tile));
  p.total = fixed + p.ring + p.workspace;
  return p;
}

}  // namespace dnmf::stream
