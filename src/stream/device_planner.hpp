// The device memory planner (DESIGN §5, host -> device level): from one rank's block, k, the precision and a
// device budget it counts the device bytes of the factors, the kernels' scratch and either the resident block
// or a ring of device tiles, and decides resident or streamed (tile size, ring depth). Plain C++: the budget
// itself (free memory minus a margin) comes from device_budget() in device_memory.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dist/grid.hpp"
#include "dnmf/options.hpp"

namespace dnmf::stream {

/// What the planner needs to know.
struct DevicePlanInput {
  dist::Layout layout;           ///< the block (a_rows x a_cols) and the factor pieces of this rank
  bool sparse = false;           ///< CSR block (resident only: streaming CSR through the device is not built)
  index_t stored = 0;            ///< entries of the block: rows*cols (dense) or nnz (CSR)
  std::size_t scalar_bytes = 8;  ///< sizeof(T)
  index_t rank = 1;              ///< k
  Algorithm algorithm = Algorithm::mu;
  std::int64_t budget = 0;         ///< device bytes the run may hold
  std::size_t min_tile_bytes = 0;  ///< the narrowest tile: one column (column stripes) or row of the block
  std::size_t line_bytes = 0;      ///< bytes of one stripe line (a column or a row); 0: min_tile_bytes
  std::size_t max_tile_bytes = 0;  ///< largest tile worth having; 0: kDeviceMaxTileBytes
  bool force_streamed = false;     ///< stream even when the block would fit (benchmarks, tests)
};

/// The decision and the figures behind it, in bytes.
struct DevicePlan {
  bool streamed = false;
  std::size_t tile_bytes = 0;  ///< streamed: the most one device tile holds
  int depth = 0;               ///< streamed: device tile buffers (>= 2)
  std::int64_t budget = 0;
  std::int64_t reserve = 0;         ///< cuBLAS/cuSPARSE workspaces, reduction buffers, allocator rounding
  std::int64_t factors = 0;         ///< factor pieces, gathered blocks, numerators, Gram matrices, final check
  std::int64_t workspace = 0;       ///< per-call scratch: fused-pass numerator, update scratch, KL model tile
  std::int64_t matrix = 0;          ///< resident: the block; streamed: 0
  std::int64_t ring = 0;            ///< streamed: depth x tile_bytes
  std::int64_t total = 0;           ///< the sum: the expected device peak
  std::int64_t minimum_budget = 0;  ///< the smallest budget streaming accepts (two minimal tiles)
  std::int64_t resident_total = 0;  ///< what the resident run needs
};

/// The largest device tile the planner hands out by default: big enough for full-rate copies and GEMMs,
/// small enough that the first tile's copy (which nothing hides) is a few percent of a pass.
constexpr std::size_t kDeviceMaxTileBytes = std::size_t{64} << 20;
/// Device memory the libraries take beside our buffers (cuBLAS workspace, reduction buffers, rounding).
constexpr std::int64_t kDeviceLibraryReserve = std::int64_t{96} << 20;
/// The dense KL ratio forms its model tile in chunks of at most this many bytes (CudaKernels' default).
constexpr std::size_t kKlChunkBytes = std::size_t{256} << 20;

/// Plans one rank's device memory. Resident when the block and everything else fit the budget (unless
/// forced to stream); else streamed with depth 3 (4 when the budget has room, 2 when only two fit) and the
/// largest tile up to the cap. Throws dnmf::Error stating the minimum budget when not even two one-line
/// tiles fit, and for a CSR block that does not fit (it cannot stream through the device yet).
[[nodiscard]] DevicePlan plan_device(const DevicePlanInput& input);

/// Device bytes of the factor-sized buffers solve() holds on the device at its peak.
[[nodiscard]] std::int64_t device_factor_bytes(const DevicePlanInput& input);

}  // namespace dnmf::stream
