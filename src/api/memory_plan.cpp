// See memory_plan.hpp.

#include "api/memory_plan.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>

#include "dnmf/error.hpp"
#include "io/collective_failure.hpp"
#include "stream/bytes.hpp"
#include "stream/npy_source.hpp"
#include "stream/process_memory.hpp"
#include "stream/streamed_operand.hpp"

namespace dnmf::api {

template <class T>
MemoryPlan<T> plan_block(const std::string& path, const io::MatrixShape& shape, const dist::Layout& layout,
                         const FactorOptions& options, std::int64_t budget, dist::Communicator& world) {
  MemoryPlan<T> out;
  out.budget = budget;
  stream::PlanInput in;
  in.layout = layout;
  in.sparse = shape.sparse;
  in.scalar_bytes = sizeof(T);
  in.rank = options.rank;
  in.algorithm = options.algorithm;
  in.extrapolate = options.extrapolate;
  in.threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  in.gathers_factors = world.rank() == 0;
  in.budget = budget;
  // The block's share of the entries, assumed evenly spread.
  const double share = static_cast<double>(layout.a_rows.size()) * static_cast<double>(layout.a_cols.size()) /
                       std::max(1.0, static_cast<double>(shape.rows) * static_cast<double>(shape.cols));
  const bool streamable = stream::streamable(path);
  auto plan_here = [&](bool allow_resident) {
    in.allow_resident = allow_resident;
    in.baseline = stream::current_rss_bytes();
    if (!streamable) {  // residence or nothing: ask what residence needs before the budget is judged
      stream::PlanInput unlimited = in;
      unlimited.budget = std::numeric_limits<std::int64_t>::max() / 4;
      const std::int64_t needed = stream::plan_memory(unlimited).resident_total;
      // The stated figure has the planner's margin for the process's baseline, which varies between runs: the
      // need itself, stated bare, was refused again on a rerun (33893264 bytes asked, 33921936 needed).
      if (!allow_resident || needed > budget)
        throw UsageError(path + ": this block needs " + stream::describe_bytes(needed + stream::kStatedBaselineJitter) +
                         " to be held in memory (with " +
                         stream::human_bytes(static_cast<double>(stream::kStatedBaselineJitter)) +
                         " for the process's baseline, which varies between runs), more than --memory-budget " +
                         stream::describe_bytes(budget) +
                         "; streaming reads .npy and .dcsr files (`dnmf convert` makes a .dcsr from .mtx, HDF5 or "
                         ".npz)");
    }
    try {
      return stream::plan_memory(in);
    } catch (const Error& e) {
      throw_as(e.kind(), path + ": " + e.what());  // the planner knows budgets, not files
    }
  };
  // Rank-local failures (this block is too large for the budget) reach every rank, so none waits alone.
  const bool streamed = io::detail::run_agreed(world, path, [&] {
    if (streamable) {
      out.source = stream::open_source<T>(path, layout.a_rows, layout.a_cols);
      in.stored = out.source->stored();
      in.min_tile_bytes = out.source->min_tile_bytes();
      in.staging_bytes = out.source->staging_bytes();
    } else {  // resident only
      in.stored =
          static_cast<index_t>(static_cast<double>(shape.sparse ? shape.stored : shape.rows * shape.cols) * share);
    }
    // What the resident reader holds at its peak, in bytes of its own records where it has them: counted as
    // copies of the block, an .npz's members (f8 values read into f32) and Matrix Market's records in transit
    // were undercounted, and resident runs peaked at 1.07-1.41x their budget.
    const io::ReadFootprint reading = io::resident_read_footprint(path, in.stored, sizeof(T), world.size());
    in.resident_copies = reading.copies;
    in.resident_beside = reading.beside;
    out.plan = plan_here(true);
    return out.plan.streamed;
  });
  // The single pass's side follows the block's layout in memory, which streaming may change (a C-order .npy
  // streams in row stripes): all ranks stream or none.
  const bool anyone = world.size() > 1 ? world.max<std::int64_t>(streamed ? 1 : 0) != 0 : streamed;
  if (anyone)
    io::detail::run_agreed(world, path, [&] {
      if (!streamed) out.plan = plan_here(false);
    });
  if (!anyone) {
    out.source.reset();
    return out;
  }
  const auto* npy = dynamic_cast<const stream::NpySource<T>*>(out.source.get());
  out.access = npy != nullptr && npy->mapped() ? "mapped" : "pread";
  return out;
}

template <class T>
std::unique_ptr<backend::Operand<T>> make_streamed_operand(backend::Kernels<T>& kernels, MemoryPlan<T>& plan) {
  return std::make_unique<stream::StreamedOperand<T>>(kernels, std::move(plan.source), plan.plan.tile_bytes,
                                                      plan.plan.depth);
}

template <class T>
MemoryFigures memory_figures(const MemoryPlan<T>& plan, const backend::OperandStats& stats, std::size_t tiles) {
  const stream::Plan& p = plan.plan;
  MemoryFigures f;
  f.budget_bytes = plan.budget;
  f.streamed = p.streamed;
  f.baseline_bytes = p.baseline;
  f.runtime_reserve_bytes = p.runtime_reserve;
  f.factors_bytes = p.factors;
  f.workspace_bytes = p.workspace;
  f.matrix_bytes = p.matrix;
  f.ring_bytes = p.ring;
  f.staging_bytes = p.staging;
  f.total_bytes = p.total;
  f.resident_total_bytes = p.resident_total;
  f.minimum_budget_bytes = p.minimum_budget;
  if (p.streamed) {
    f.access = plan.access;
    f.tile_bytes = p.tile_bytes;
    f.depth = p.depth;
    f.tiles_per_pass = static_cast<std::int64_t>(tiles);
    f.passes = stats.passes;
    f.tiles_delivered = stats.tiles;
    f.bytes_read = stats.bytes_read;
    f.seconds_waiting = stats.seconds_waiting;
    f.seconds_reading = stats.seconds_reading;
  }
  return f;
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type in these explicit instantiations
#define DNMF_INSTANTIATE_MEMORY_PLAN(T)                                                                         \
  template MemoryPlan<T> plan_block<T>(const std::string&, const io::MatrixShape&, const dist::Layout&,         \
                                       const FactorOptions&, std::int64_t, dist::Communicator&);                \
  template std::unique_ptr<backend::Operand<T>> make_streamed_operand<T>(backend::Kernels<T>&, MemoryPlan<T>&); \
  template MemoryFigures memory_figures<T>(const MemoryPlan<T>&, const backend::OperandStats&, std::size_t);
// NOLINTEND(bugprone-macro-parentheses)
DNMF_INSTANTIATE_MEMORY_PLAN(float)
DNMF_INSTANTIATE_MEMORY_PLAN(double)
#undef DNMF_INSTANTIATE_MEMORY_PLAN

}  // namespace dnmf::api
