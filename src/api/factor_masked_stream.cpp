// See factor_masked_stream.hpp. The order follows factor_masked(): shapes and options checked from the headers,
// the plan, then the first pass (every weight and observed entry checked), then the iteration.

#include "api/factor_masked_stream.hpp"

#include <omp.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "api/context_state.hpp"
#include "api/distribution.hpp"
#include "api/factorization_parts.hpp"
#include "api/masked_resident_bytes.hpp"
#include "api/memory_plan.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "solvers/masked_stream.hpp"
#include "solvers/solve.hpp"
#include "stream/bytes.hpp"
#include "stream/masked_tiles.hpp"
#include "stream/npy_source.hpp"
#include "stream/planner.hpp"
#include "stream/process_memory.hpp"
#include "util/dense_transpose.hpp"
#include "util/thread_count.hpp"

namespace dnmf::api {
namespace {

std::string shape_text(index_t rows, index_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

bool is_npy(const std::string& path) {
  try {
    return io::format_of(path) == io::FileFormat::npy;
  } catch (const Error&) {
    return false;
  }
}

/// Why this masked problem cannot stream, or "" when it can.
std::string why_not_streamable(const std::string& name, const io::MatrixShape& shape, const MissingValues& missing) {
  if (!stream::streamable(name))
    return name + ": streaming reads .npy and .dcsr files (`dnmf convert` makes a .dcsr from .mtx, HDF5 or .npz)";
  if (shape.sparse && missing.unstored != Unstored::missing)
    return name +
           ": a sparse A streams with --unstored missing only (with observed zeros and a mask the masked problem is "
           "dense: save A as a .npy)";
  if (shape.sparse && missing.mask)
    return missing.mask->name() +
           ": a mask beside a sparse A does not stream yet (--unstored missing streams A's "
           "stored entries with weight 1)";
  if (missing.mask && !is_npy(missing.mask->name()))
    return missing.mask->name() + ": a streamed mask must be a .npy file (convert it with numpy.save)";
  return {};
}

/// Copies of A's bytes the in-memory masked path holds at its peak (masked_problem.cpp): A and the mask as read,
/// the dense values and weights, and w∘A and w in both orientations; for --unstored missing, the entry lists
/// (about twice the CSR's bytes each) and both sparse halves. What does not scale with A (the mask beside a
/// sparse A, the Gram lists) is masked_resident_extra_bytes'.
double in_memory_copies(bool sparse_problem, bool mask) {
  if (sparse_problem) return 13.0;
  return mask ? 8.0 : 7.0;
}

}  // namespace

template <class T>
std::optional<Factorization<T>> factor_masked_streamed(const Source& source, const FactorOptions& options,
                                                       const FactorOptions& requested, const Context& context,
                                                       Gather gather, const InitialFactors<T>* initial,
                                                       MemoryFigures& resident) {
  const std::string& name = source.name();
  const MissingValues& missing = options.missing;
  const std::int64_t budget = context.memory_budget;
  if (!source.is_file())
    throw UsageError(name + ": a memory budget applies to file sources (an in-memory matrix is held already)");
  if (missing.mask && !missing.mask->is_file())
    throw UsageError(missing.mask->name() +
                     ": a memory budget applies to a mask in a file (an in-memory mask is held already)");
  const io::MatrixShape shape = io::read_shape(name);
  const auto check = [&](const FactorOptions& o) {
    try {
      solvers::check_options(o, shape.rows, shape.cols);
    } catch (const Error& e) {
      throw_as(e.kind(), name + ": " + e.what());
    }
  };
  // Extrapolation waits for the tiles' scan: a mask that masks nothing runs the unmasked solver, which has it (as
  // in memory; streaming refused what the in-memory path ran).
  FactorOptions early = options;
  early.extrapolate = false;
  check(early);
  if (missing.unstored == Unstored::missing && !shape.sparse)
    throw UsageError(name +
                     ": --unstored missing applies to a sparse matrix; this one is dense (use --mask or "
                     "--missing nan)");
  const std::string mask_name = missing.mask ? missing.mask->name() : std::string();
  std::optional<io::MatrixShape> mask_shape;
  if (missing.mask) {
    const io::MatrixShape& ms = mask_shape.emplace(io::read_shape(mask_name));
    if (ms.rows != shape.rows || ms.cols != shape.cols)
      throw DataError(mask_name + ": the mask is " + shape_text(ms.rows, ms.cols) + " but " + name + " is " +
                      shape_text(shape.rows, shape.cols) + " (a mask must have A's shape)");
  }

  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, shape.rows, shape.cols);
  const bool sparse_problem = shape.sparse && missing.unstored == Unstored::missing;
  stream::PlanInput in;
  in.layout = layout;
  in.scalar_bytes = sizeof(T);
  in.rank = options.rank;
  in.algorithm = options.algorithm;
  in.threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  in.gathers_factors = true;
  in.budget = budget;
  in.baseline = stream::current_rss_bytes();
  const std::string refusal = why_not_streamable(name, shape, missing);
  if (!refusal.empty()) {
    // Residence or nothing: what the in-memory masked path needs (a sparse A with observed zeros is held dense).
    stream::PlanInput unlimited = in;
    unlimited.sparse = sparse_problem;
    unlimited.stored = sparse_problem ? shape.stored : shape.rows * shape.cols;
    unlimited.resident_copies = in_memory_copies(sparse_problem, missing.mask.has_value());
    unlimited.resident_beside = masked_resident_extra_bytes<T>(name, shape, mask_shape, missing, layout, false);
    unlimited.budget = std::numeric_limits<std::int64_t>::max() / 4;
    const std::int64_t needed = stream::plan_memory(unlimited).resident_total;
    if (needed <= budget) {
      MemoryPlan<T> held;
      held.budget = budget;
      unlimited.budget = budget;
      held.plan = stream::plan_memory(unlimited);
      resident = memory_figures(held, {}, 0);
      return std::nullopt;
    }
    throw UsageError(name + ": the masked problem needs " + stream::describe_bytes(needed) +
                     " in memory, more than --memory-budget " + stream::describe_bytes(budget) +
                     ", and cannot stream: " + refusal);
  }

  std::unique_ptr<stream::TileSource<T>> a = stream::open_source<T>(name, layout.a_rows, layout.a_cols);
  std::unique_ptr<stream::TileSource<T>> mask;
  if (missing.mask) mask = stream::open_source<T>(mask_name, layout.a_rows, layout.a_cols);
  in.sparse = a->sparse();
  // The pair of tiles is what a slot holds: a dense mask doubles the bytes per stripe.
  in.stored = a->stored() * (mask ? 2 : 1);
  in.resident_copies = in_memory_copies(sparse_problem, mask != nullptr) / (mask ? 2.0 : 1.0);
  in.min_tile_bytes = stream::min_pair_bytes(*a, mask.get());
  in.staging_bytes = a->staging_bytes() + (mask ? mask->staging_bytes() : 0);
  const index_t other_lines = a->direction() == backend::Side::H ? shape.rows : shape.cols;
  const auto solver_bytes = [&](bool grams) {
    return solvers::masked_stream_bytes(options.algorithm, options.rank, shape.rows, shape.cols, other_lines, grams,
                                        sizeof(T));
  };
  in.solver_bytes = solver_bytes(true);
  // Residence is planned with the Gram lists' bound from the headers; the lists are counted (a pass over the
  // files) only when that bound alone keeps the run from residence.
  in.resident_beside = masked_resident_extra_bytes<T>(name, shape, mask_shape, missing, layout, false);
  MemoryPlan<T> memory;
  memory.budget = budget;
  try {
    memory.plan = stream::plan_memory(in);
  } catch (const Error& e) {
    const bool gram = options.algorithm == Algorithm::hals || options.algorithm == Algorithm::bpp;
    if (gram) {
      stream::PlanInput without = in;
      without.solver_bytes = solver_bytes(false);
      bool fits_without = false;
      try {
        (void)stream::plan_memory(without);
        fits_without = true;
      } catch (const Error&) {
      }
      if (fits_without)
        throw UsageError(name + ": --algo " + to_string(options.algorithm) + " with missing values under a memory " +
                         "budget holds a " + std::to_string(options.rank) + "x" + std::to_string(options.rank) +
                         " weighted Gram matrix per " + (a->direction() == backend::Side::H ? "row" : "column") +
                         " of A (" + stream::describe_bytes(in.solver_bytes - without.solver_bytes) +
                         "), which --memory-budget " + stream::describe_bytes(budget) +
                         " leaves no room for; raise the budget or use --algo mu or kl (their sums grow with k only)");
    }
    throw_as(e.kind(), name + ": " + e.what());
  }
  if (memory.plan.streamed && memory.plan.resident_total - in.resident_beside <= budget) {
    stream::PlanInput counted = in;
    counted.resident_beside = masked_resident_extra_bytes<T>(name, shape, mask_shape, missing, layout, true);
    if (counted.resident_beside < in.resident_beside) {
      const stream::Plan replanned = stream::plan_memory(counted);
      if (!replanned.streamed) memory.plan = replanned;
    }
  }
  if (!memory.plan.streamed) {
    resident = memory_figures(memory, {}, 0);
    return std::nullopt;
  }
  const auto* npy = dynamic_cast<const stream::NpySource<T>*>(a.get());
  memory.access = npy != nullptr && npy->mapped() ? "mapped" : "pread";

  auto tiles = std::make_unique<stream::MaskedTiles<T>>(std::move(a), std::move(mask), memory.plan.tile_bytes,
                                                        memory.plan.depth);
  tiles->set_cancel(options.cancel);  // one process (factor_masked sends grids elsewhere): stop inside a pass
  solvers::StreamedMaskedProblem<T> problem;
  problem.tiles = tiles.get();
  problem.a_name = name;
  problem.mask_name = mask_name;
  problem.nan_missing = missing.nan_missing;
  problem.m = shape.rows;
  problem.n = shape.cols;
  solvers::scan_masked_tiles(problem);
  if (problem.all_unit) {
    // A mask that masks nothing is no mask: the unmasked (streaming) solver, with its exact results, runs.
    tiles.reset();
    FactorOptions plain = requested;
    plain.missing = MissingValues{};
    return factor<T>(source, plain, context, gather, initial);
  }
  check(options);
  const util::ThreadCountScope thread_count(options.threads);
  solvers::Factors<T> factors;
  Factorization<T> run;
  try {
    run.result =
        solvers::solve_masked_streamed<T>(problem, options, factors, initial != nullptr ? &initial->W : nullptr,
                                          initial != nullptr ? &initial->H : nullptr);
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    const std::string what = e.what();
    throw_as(e.kind(), what.starts_with(name + ": ") || what.starts_with(mask_name + ": ") ? what : name + ": " + what);
  }
  run.memory = memory_figures(memory, tiles->stats(), tiles->tile_count());
  tiles.reset();
  describe_input(run, name, io::format_name(io::format_of(name)), shape.rows, shape.cols, options);
  keep_one_process(run, std::move(factors), context, api::communicator(context), gather);
  run.nnz = problem.observed_nonzero;
  return run;
}

template std::optional<Factorization<float>> factor_masked_streamed<float>(const Source&, const FactorOptions&,
                                                                           const FactorOptions&, const Context&, Gather,
                                                                           const InitialFactors<float>*,
                                                                           MemoryFigures&);
template std::optional<Factorization<double>> factor_masked_streamed<double>(const Source&, const FactorOptions&,
                                                                             const FactorOptions&, const Context&,
                                                                             Gather, const InitialFactors<double>*,
                                                                             MemoryFigures&);

}  // namespace dnmf::api
