// factor()'s memory planning under a host budget (DESIGN §5): this process's block planned resident or
// streamed, the tile source opened when it streams, and the plan's figures for the report.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/io.hpp"
#include "dnmf/options.hpp"
#include "stream/planner.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::api {

/// This process's decision under a memory budget.
template <class T>
struct MemoryPlan {
  std::int64_t budget = 0;  ///< bytes; 0: no budget given (resident, nothing planned)
  stream::Plan plan;
  std::string access;                             ///< streamed: "mapped" (tiles lent from the file) or "pread"
  std::unique_ptr<stream::TileSource<T>> source;  ///< streamed: the opened file, handed to the operand
};

/// Plans this rank's block of `path` (collective over `world`). When any rank must stream, every rank streams,
/// so that all run the single pass on the same side. A budget too small for this rank's block is a dnmf::Error
/// on that rank (stating the minimum budget) and a PeerError on the others; so is a block that must stream from
/// a format that cannot (.mtx, HDF5: convert to .dcsr or .npy).
template <class T>
MemoryPlan<T> plan_block(const std::string& path, const io::MatrixShape& shape, const dist::Layout& layout,
                         const FactorOptions& options, std::int64_t budget, dist::Communicator& world);

/// The operand that streams a streamed plan's source through the ring on `kernels`.
template <class T>
std::unique_ptr<backend::Operand<T>> make_streamed_operand(backend::Kernels<T>& kernels, MemoryPlan<T>& plan);

/// The plan's figures and, for a streamed run, the operand's (`stats`, `tiles` per pass).
template <class T>
MemoryFigures memory_figures(const MemoryPlan<T>& plan, const backend::OperandStats& stats, std::size_t tiles);

}  // namespace dnmf::api
