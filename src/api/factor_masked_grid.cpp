// See factor_masked_grid.hpp. The order follows factor(): the checks every rank makes alike first (options,
// shapes, flags, grid), then each rank reads only its blocks of A and of the mask, then the blocks' checks,
// agreed so that every rank reports the same first failure, then the solve.

#include "api/factor_masked_grid.hpp"

#include <omp.h>

#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/context_state.hpp"
#include "api/distribution.hpp"
#include "api/factorization_parts.hpp"
#include "api/on_every_rank.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/collective_failure.hpp"
#include "solvers/masked_block.hpp"
#include "solvers/masked_grid.hpp"
#include "solvers/solve.hpp"
#include "util/thread_count.hpp"

namespace dnmf::api {
namespace {

/// The option that asked for missing values, for the refusals (as factor_masked.cpp names it).
std::string flag_of(const MissingValues& m) {
  if (m.mask) return "--mask";
  if (m.nan_missing) return "--missing nan";
  return "--unstored missing";
}

/// The shape of the caller's A (or mask) behind `source`: a file's header (read on rank 0 and broadcast, a
/// CollectiveError when it fails) or the matrix in memory, in A's orientation.
io::MatrixShape shape_of_source(const Source& source, dist::Communicator& world) {
  if (source.is_file()) return io::read_shape(source.name(), world);
  io::MatrixShape s;
  if (const auto* f = source.stored<float>()) {
    s = io::shape_of(*f);
  } else {
    s = io::shape_of(*source.stored<double>());
  }
  if (source.transposed()) std::swap(s.rows, s.cols);
  return s;
}

/// This rank's block (rows x cols of A) of a source, as stored: Aᵀ's block of a transposed source. Files are read
/// without the entry check: a missing entry may hold anything, and the observed ones are checked later.
template <class T>
io::LocalBlock<T> block_of(const Source& source, dist::Range rows, dist::Range cols, dist::Communicator& world) {
  const dist::Range r = source.transposed() ? cols : rows, c = source.transposed() ? rows : cols;
  if (source.is_file()) return io::read_block<T>(source.name(), r, c, world, false);
  return io::detail::run_agreed(world, source.name(), [&] {
    if (const auto* same = source.stored<T>()) return io::slice_block<T>(*same, r, c);
    if (const auto* f = source.stored<float>()) return io::slice_block<T>(*f, r, c);
    return io::slice_block<T>(*source.stored<double>(), r, c);
  });
}

/// Runs `step` on every rank; when it fails anywhere, every rank throws a CollectiveError with the failure of
/// the lowest failing rank, so the job reports one clear error (the first in rank order) and ends normally.
template <class Step>
void agree_on_first_failure(dist::Communicator& world, const std::string& name, Step&& step) {
  std::optional<Error> failure;
  try {
    std::forward<Step>(step)();
  } catch (const Error& e) {
    failure = e;
  } catch (const std::bad_alloc&) {
    failure = Error(name + ": out of memory while building this rank's block of the masked problem");
  }
  const int p = world.size();
  const auto top = world.max<std::int64_t>(failure ? p - world.rank() : 0);
  if (top == 0) return;
  const int reporter = p - static_cast<int>(top);
  dist::throw_root_error(world, reporter, failure ? failure->what() : std::string(),
                         failure ? failure->kind() : ErrorKind::general);
}

}  // namespace

template <class T>
Factorization<T> factor_masked_grid(const Source& source, const FactorOptions& requested, const Context& context,
                                    Gather gather_mode, const InitialFactors<T>* initial) {
  dist::Communicator& world = api::communicator(context);
  const std::string& name = source.name();
  const std::string flag = flag_of(requested.missing);
  const std::optional<Source>& mask_source = requested.missing.mask;

  // Checks every rank makes identically: reported once, and every process ends normally.
  FactorOptions options;
  std::string format = "memory";
  api::on_every_rank([&] {
    options = api::resolve(requested, context);
    if (options.backend == BackendKind::cuda) throw UsageError(flag + " is not supported with --backend cuda yet");
    if (context.memory_budget > 0)
      throw UsageError(flag + " with --memory-budget runs on one process only, not on a process grid yet");
    if (source.is_file()) format = io::format_name(io::format_of(name));
  });
  const io::MatrixShape shape = api::on_every_rank([&] { return shape_of_source(source, world); });
  const std::string mask_name = mask_source ? mask_source->name() : std::string();
  const dist::GridShape grid_shape = api::on_every_rank([&] {
    if (mask_source) {
      const io::MatrixShape ms = shape_of_source(*mask_source, world);
      if (ms.rows != shape.rows || ms.cols != shape.cols)
        throw DataError(mask_name + ": the mask is " + std::to_string(ms.rows) + "x" + std::to_string(ms.cols) +
                        " but " + name + " is " + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                        " (a mask must have A's shape)");
    }
    if (options.missing.unstored == Unstored::missing && !shape.sparse)
      throw UsageError(name +
                       ": --unstored missing applies to a sparse matrix; this one is dense (use --mask or "
                       "--missing nan)");
    // Extrapolation waits for the mask's scan: a mask that masks nothing runs the unmasked solver, which has it
    // (as on one process; the grid refused what one process ran).
    FactorOptions early = options;
    early.extrapolate = false;
    try {
      solvers::check_options(early, shape.rows, shape.cols);
    } catch (const Error& e) {
      throw_as(e.kind(), name + ": " + e.what());
    }
    return context.grid == "auto" ? dist::choose_grid(world.size(), shape.rows, shape.cols, options.rank)
                                  : dist::parse_grid(context.grid);
  });
  const dist::Grid grid = api::on_every_rank([&] { return dist::Grid(world, grid_shape); });
  if (world.rank() != 0) options.progress = nullptr;  // progress is rank 0's to tell
  if ((options.init == InitMethod::given) != (initial != nullptr))
    throw CollectiveError(name + (initial != nullptr
                                      ? ": initial factors were given but the init method is " + to_string(options.init)
                                      : ": the init method 'given' needs initial factors"));
  if (options.init != InitMethod::random && options.init != InitMethod::given)
    throw CollectiveError(
        UsageError("--init " + to_string(options.init) + " needs one process; use --init random on a grid"));

  // Each rank reads its own blocks; a read that fails on one rank fails the job as the unmasked reads do.
  const dist::Layout layout = dist::make_layout(grid, shape.rows, shape.cols);
  const util::ThreadCountScope thread_count(options.threads);
  const io::LocalBlock<T> a_block = block_of<T>(source, layout.a_rows, layout.a_cols, world);
  std::optional<io::LocalBlock<T>> mask_block;
  if (mask_source) mask_block = block_of<T>(*mask_source, layout.a_rows, layout.a_cols, world);
  const MatrixRef<T> a_ref = a_block.ref();
  const std::optional<MatrixRef<T>> mask_ref = mask_block ? std::optional(mask_block->ref()) : std::nullopt;
  const solvers::StoredMatrix<T> stored_a{&a_ref, source.transposed(), name};
  const solvers::StoredMatrix<T> stored_mask{mask_ref ? &*mask_ref : nullptr, mask_source && mask_source->transposed(),
                                             mask_name};
  solvers::MaskedBlock<T> block;
  agree_on_first_failure(world, name, [&] {
    block = solvers::build_masked_block<T>(stored_a, stored_mask, options.missing, layout.a_rows, layout.a_cols);
  });
  solvers::agree_masked_block(block, grid, layout, name);

  if (block.problem.all_unit) {
    // A mask that masks nothing is no mask: the unmasked grid solver, with its exact results, runs instead.
    FactorOptions plain = requested;
    plain.missing = MissingValues{};
    return factor<T>(source, plain, context, gather_mode, initial);
  }
  api::on_every_rank([&] {
    try {
      solvers::check_options(options, shape.rows, shape.cols);
    } catch (const Error& e) {
      throw_as(e.kind(), name + ": " + e.what());
    }
  });
  solvers::Solution<T> solution;
  try {
    solution = solvers::solve_masked_grid<T>(block, grid, layout, options, initial != nullptr ? &initial->W : nullptr,
                                             initial != nullptr ? &initial->H : nullptr);
  } catch (const Cancelled&) {
    throw;
  } catch (const CollectiveError& e) {
    throw CollectiveError(name + ": " + e.what(), e.kind());
  } catch (const Error& e) {
    throw_as(e.kind(), name + ": " + e.what());
  }

  Factorization<T> run;
  run.result = std::move(solution.result);
  keep_pieces(run, std::move(solution.pieces), context, grid_shape, layout);
  describe_input(run, name, format, shape.rows, shape.cols, options);
  // The masked iteration's paths are not in the time model: auto keeps the words-only rule here.
  if (context.grid == "auto") run.grid_choice = {"words", run.grid, {}};
  run.nnz = block.problem.observed_nonzero;
  record_traffic(run, world, solution.iteration_traffic,
                 solvers::masked_words_per_rank(grid_shape, shape.rows, shape.cols, options.rank, options.algorithm,
                                                !block.problem.h_half.direct_gram) *
                     sizeof(T));
  if (gather_mode == Gather::to_root) gather(run, context);
  return run;
}

template Factorization<float> factor_masked_grid<float>(const Source&, const FactorOptions&, const Context&, Gather,
                                                        const InitialFactors<float>*);
template Factorization<double> factor_masked_grid<double>(const Source&, const FactorOptions&, const Context&, Gather,
                                                          const InitialFactors<double>*);

}  // namespace dnmf::api
