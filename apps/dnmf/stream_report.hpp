// dnmf CLI: --memory-budget. Plans this rank's block against the budget (stream/planner.hpp), opens the tile
// source and builds the streamed operand when the plan streams, and turns the plan's figures and the stream's
// timings into report.json's "memory" object and a summary line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/kernels.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/options.hpp"
#include "io/block_read.hpp"
#include "solvers/operand.hpp"
#include "stream/planner.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::cli {

/// This rank's decision under --memory-budget.
template <class T>
struct MemoryPlan {
  std::int64_t budget = 0;  ///< bytes; 0: no budget given (resident, nothing planned)
  stream::Plan plan;
  std::string access;                             ///< streamed: "mapped" (tiles lent from the file) or "pread"
  std::unique_ptr<stream::TileSource<T>> source;  ///< streamed: the opened file, handed to the operand
};

/// --memory-budget's bytes (0 when not given); dnmf::Error naming the text otherwise.
[[nodiscard]] std::int64_t parse_memory_budget(const std::string& text);

/// Plans this rank's block of `path` (collective over `world`). When any rank must stream, every rank streams,
/// so that all run the single pass on the same side. A budget too small for this rank's block is a dnmf::Error
/// on that rank (stating the minimum budget) and a PeerError on the others; so is a block that must stream from
/// a format that cannot (.mtx, HDF5: convert to .dcsr or .npy).
template <class T>
MemoryPlan<T> plan_block(const std::string& path, const io::MatrixShape& shape, const dist::Layout& layout,
                         const FactorOptions& options, std::int64_t budget, dist::Communicator& world);

/// The operand that streams a streamed plan's source through the ring on `kernels`.
template <class T>
std::unique_ptr<solvers::Operand<T>> make_streamed_operand(backend::Kernels<T>& kernels, MemoryPlan<T>& plan);

/// report.json's "memory" object (this rank's figures) as JSON text; `stats` and `tiles` are the operand's.
template <class T>
std::string memory_report_json(const MemoryPlan<T>& plan, const solvers::OperandStats& stats, std::size_t tiles);

/// One line for stdout after a streamed run: tiles, depth, waiting, peak RSS against the budget.
template <class T>
std::string memory_summary(const MemoryPlan<T>& plan, const solvers::OperandStats& stats, std::size_t tiles);

}  // namespace dnmf::cli
