// The memory planner (DESIGN §5): from a block's shape, nnz, precision, k and a budget it counts the bytes of
// factors, workspaces and tiles and decides whether A can be resident or must stream, and with what tiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dist/grid.hpp"
#include "dnmf/options.hpp"

namespace dnmf::stream {

/// The baseline is the process's RSS when the plan is made, which differs between two runs of one command (by
/// about 0.2 MiB here, a few MiB where transparent huge pages are on): the minimum a refusal states carries this
/// much on top of Plan::minimum_budget, so that rerunning with the stated figure is accepted.
inline constexpr std::int64_t kStatedBaselineJitter = std::int64_t{4} << 20;

/// What the planner needs to know about one rank's share of a factorisation.
struct PlanInput {
  dist::Layout layout;           ///< the block (a_rows x a_cols), the factor pieces and the global m, n
  bool sparse = false;           ///< CSR block
  index_t stored = 0;            ///< entries of the block: rows*cols (dense) or nnz (CSR; an upper bound will do)
  std::size_t scalar_bytes = 8;  ///< sizeof(T)
  index_t rank = 1;              ///< k
  Algorithm algorithm = Algorithm::mu;
  bool extrapolate = false;      ///< FactorOptions::extrapolate: its copies of the factors and numerators
  int threads = 1;               ///< compute threads (each but one holds a private accumulator)
  bool gathers_factors = true;   ///< this rank ends up holding the whole W and H (rank 0 of the CLI)
  std::int64_t budget = 0;       ///< bytes this process may hold at its peak
  std::int64_t baseline = 0;     ///< bytes it holds before the factorisation (current RSS)
  double resident_copies = 1.0;  ///< copies of the block that loading it resident holds at once
  /// Resident only: bytes held beside those copies that do not scale with the block (the in-memory masked
  /// path's mask as read and its Gram lists).
  std::int64_t resident_beside = 0;
  bool allow_resident = true;  ///< false: stream even if the block would fit (ranks that must agree)
  /// Streaming: the narrowest tile the source can make, and its producer's scratch.
  std::size_t min_tile_bytes = 0;
  std::size_t staging_bytes = 0;
  /// Bytes a solver other than the alternating iteration holds beside the factors (the masked streamed
  /// iteration's per-line accumulators); counted with the factors.
  std::int64_t solver_bytes = 0;
};

/// The decision and every figure behind it (bytes), for report.json.
struct Plan {
  bool streamed = false;
  std::size_t tile_bytes = 0;  ///< streamed: the most one tile may take
  int depth = 0;               ///< streamed: ring slots, >= 2
  std::int64_t budget = 0;
  std::int64_t baseline = 0;         ///< RSS at planning time (libraries, runtime buffers)
  std::int64_t runtime_reserve = 0;  ///< what BLAS and OpenMP add once they run (thread buffers and stacks)
  std::int64_t factors = 0;          ///< factor pieces, gathered blocks, numerators, Gram matrices, final check, gather
  std::int64_t workspace = 0;        ///< kernels' per-thread accumulators and scratch
  std::int64_t matrix = 0;           ///< resident: the block (times resident_copies); streamed: 0
  std::int64_t ring = 0;             ///< streamed: depth x tile_bytes
  std::int64_t staging = 0;          ///< streamed: the producer's scratch
  std::int64_t total = 0;            ///< the sum of the above: the expected peak
  std::int64_t minimum_budget = 0;   ///< the smallest budget streaming would accept (two minimal tiles)
  std::int64_t resident_total = 0;   ///< what the resident run would need
};

/// Plans a run. Resident when everything with the whole block fits the budget; otherwise streamed, with the
/// largest tiles (up to a cap) that leave room for depth >= 2, and depth 3 or 4 where the budget allows.
/// Throws dnmf::Error stating the minimum budget (bytes and MiB/GiB) when not even two minimal tiles fit.
[[nodiscard]] Plan plan_memory(const PlanInput& input);

/// Bytes of factor-sized memory the iteration, the final check and the gather hold at their peak.
[[nodiscard]] std::int64_t factor_bytes(const PlanInput& input);
/// Bytes of the kernels' per-call scratch (private accumulators of all but one thread, NNLS workspaces).
[[nodiscard]] std::int64_t workspace_bytes(const PlanInput& input);

/// What a resident block's passes hold beyond workspace_bytes: the private accumulators of the CPU's fixed
/// slots (set by the problem, not the threads) beyond the threads' count. Part of the resident plan's workspace.
[[nodiscard]] std::int64_t resident_accumulator_bytes(const PlanInput& input);
/// The same for a streamed tile of `tile_bytes`: its pass has at most one slot per kernel sub-tile, with buffers
/// up to the block's lines. Part of the streamed plan's workspace.
[[nodiscard]] std::int64_t tile_accumulator_bytes(const PlanInput& input, std::size_t tile_bytes);

/// The largest tile the planner hands out: beyond it, bigger tiles gain nothing and delay the first one.
constexpr std::size_t kMaxTileBytes = std::size_t{64} << 20;

}  // namespace dnmf::stream
