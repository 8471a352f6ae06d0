// dnmf::factor: the one path from a Source to a factorisation on a Context — the same steps `dnmf factor`,
// the Python package and host programs take. The order is the point: every check that can fail runs before
// the factorisation; every process reads (or slices) only its own block.

#include "dnmf/factor.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/context_state.hpp"
#include "api/distribution.hpp"
#include "api/factor_masked.hpp"
#include "api/factorization_parts.hpp"
#include "api/grid_choice.hpp"
#include "api/memory_plan.hpp"
#include "api/on_every_rank.hpp"
#include "backend/gathering_operand.hpp"
#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/collective_failure.hpp"
#include "io/hdf5_io.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_loop.hpp"
#include "solvers/solve.hpp"
#include "stream/streamed_operand.hpp"
#include "util/dense_transpose.hpp"
#include "util/thread_count.hpp"

namespace dnmf {
namespace {

/// This rank's block of A as the solver reads it, with whatever owns its storage.
template <class T>
struct LocalOperand {
  io::LocalBlock<T> block;           ///< a copy of the block when one was read or sliced
  std::optional<MatrixRef<T>> host;  ///< the block in host memory (resident mode)
  MatrixRef<T> on_backend;           ///< the block in the kernels' memory
  std::unique_ptr<backend::Operand<T>> operand;
  api::MemoryPlan<T> memory;  ///< the budget's plan; budget 0 when none was given
  const stream::StreamedOperand<T>* streamed = nullptr;
};

/// An in-memory source's block: the caller's matrix itself when one process of the same precision holds it all
/// (no copy), else a sliced (and converted) copy. Its entries are checked once its operand exists (make_operand).
template <class T>
void take_memory_block(const Source& source, const dist::Layout& layout, LocalOperand<T>& local) {
  const bool whole = layout.a_rows.size() == layout.m && layout.a_cols.size() == layout.n;
  if (const MatrixRef<T>* same = source.stored<T>(); same != nullptr && whole) {
    local.host = *same;
  } else if (same != nullptr) {
    local.block = io::slice_block<T>(*same, layout.a_rows, layout.a_cols);
  } else if (const auto* f = source.stored<float>()) {
    local.block = io::slice_block<T>(*f, layout.a_rows, layout.a_cols);
  } else {
    local.block = io::slice_block<T>(*source.stored<double>(), layout.a_rows, layout.a_cols);
  }
  if (!local.host) local.host = local.block.ref();
}

/// Reads or slices this rank's block and makes it resident on the kernels, or, when the budget says it does not
/// fit, streams it from the file in tiles.
template <class T>
LocalOperand<T> make_operand(backend::Kernels<T>& kernels, const Source& source, const io::MatrixShape& shape,
                             const dist::Layout& layout, const FactorOptions& options, std::int64_t budget,
                             bool transposed, dist::Communicator& world) {
  LocalOperand<T> local;
  if (source.is_file()) {
    if (budget > 0) {
      local.memory = api::plan_block<T>(source.name(), shape, layout, options, budget, world);
      if (local.memory.plan.streamed) {
        auto streamed = api::make_streamed_operand<T>(kernels, local.memory);
        auto* host_streamed = dynamic_cast<stream::StreamedOperand<T>*>(streamed.get());
        // One process alone may stop inside a pass; on a grid the ranks must stop together, between iterations.
        if (host_streamed != nullptr && world.size() == 1) host_streamed->set_cancel(options.cancel);
        local.streamed = host_streamed;
        local.operand = std::move(streamed);
        return local;
      }
    }
    local.block = io::read_block<T>(source.name(), layout.a_rows, layout.a_cols, world);
    local.host = local.block.ref();
  } else {
    io::detail::run_agreed(world, source.name(), [&] { take_memory_block<T>(source, layout, local); });
  }
  local.on_backend = kernels.make_resident(*local.host);
  // Under a budget, A's transpose (the CSR operand's second copy) only where the plan leaves room for it.
  const double copy_room =
      local.memory.budget > 0
          ? static_cast<double>(std::max<std::int64_t>(0, local.memory.budget - local.memory.plan.total))
          : -1.0;
  local.operand = backend::make_resident_operand(kernels, local.on_backend, copy_room, options.max_iterations);
  if (!source.is_file()) {
    // The file readers check entries as they read; an in-memory block is checked by the statistics pass the
    // solver needs anyway where the kernels check in it (the CPU's), else by a pass of its own.
    io::detail::run_agreed(world, source.name(), [&] {
      const backend::MatrixStats stats = local.operand->stats();
      if (!stats.entries_checked || !stats.entries_acceptable)
        std::visit(
            [&](const auto& v) {
              io::check_nonnegative<T>(v, source.name(), layout.a_rows.first, layout.a_cols.first, transposed);
            },
            *local.host);
    });
  }
  return local;
}

/// Entries != 0 in this rank's block (dense) or stored (CSR).
template <class T>
index_t local_nonzeros(const MatrixRef<T>& block) {
  if (const auto* csr = std::get_if<CsrView<T>>(&block)) return csr->nnz();
  const auto& dense = std::get<DenseView<const T>>(block);
  index_t count = 0;
  for (index_t j = 0; j < dense.cols; ++j)
    for (index_t i = 0; i < dense.rows; ++i) count += dense(i, j) != T(0) ? 1 : 0;
  return count;
}

/// The factorisation of a source stored as it is (not transposed).
/// `transposed`: `source` holds Aᵀ of the caller's A (it only changes how bad entries are reported).
template <class T>
Factorization<T> factor_stored(const Source& source, bool transposed, const FactorOptions& requested,
                               const Context& context, Gather gather_mode, const InitialFactors<T>* initial) {
  dist::Communicator& world = api::communicator(context);
  const std::string& name = source.name();
  std::int64_t budget = 0;

  // Checks every rank makes identically: reported once, and every process ends normally.
  FactorOptions options;
  std::string format = "memory";
  GridChoiceFigures grid_choice;
  const io::MatrixShape shape = api::on_every_rank([&] {
    options = api::resolve(requested, context);  // backend and TF32 checks included
    budget = context.memory_budget;
    if (!source.is_file()) {
      if (budget > 0)
        throw UsageError(name + ": a memory budget applies to file sources (an in-memory matrix is held already)");
      if (const auto* f = source.stored<float>()) return io::shape_of(*f);
      return io::shape_of(*source.stored<double>());
    }
    format = io::format_name(io::format_of(name));  // an unknown extension fails before anything is read
    return io::read_shape(name, world);
  });
  // The time model weighs the cache every rank has: the smallest, so that every rank picks the same grid.
  const double cache_bytes =
      context.grid == "auto" && world.size() > 1 ? -world.max(-api::local_cache_bytes()) : api::local_cache_bytes();
  const dist::GridShape grid_shape = api::on_every_rank([&] {
    try {
      // In A's terms: the caller's matrix is A even when its storage is Aᵀ's (the checks are symmetric).
      solvers::check_options(options, transposed ? shape.cols : shape.rows, transposed ? shape.rows : shape.cols);
    } catch (const Error& e) {
      throw_as(e.kind(), name + ": " + e.what());  // "rank k=0 does not fit a 20x10 matrix" names no file
    }
    return api::pick_grid(context, world.size(), shape, options, sizeof(T), cache_bytes, grid_choice);
  });
  const dist::Grid grid = api::on_every_rank([&] { return dist::Grid(world, grid_shape); });
  if (world.rank() != 0) options.progress = nullptr;  // progress is rank 0's to tell
  if ((options.init == InitMethod::given) != (initial != nullptr))
    throw CollectiveError(
        name + (initial != nullptr ? ": initial factors were given but the init method is " + to_string(options.init)
                                   : ": the init method 'given' needs initial factors"),
        ErrorKind::usage);
  if (options.init != InitMethod::random && options.init != InitMethod::given && grid_shape.size() > 1)
    throw CollectiveError("--init " + to_string(options.init) + " needs one process; use --init random on a grid",
                          ErrorKind::usage);

  // From here on a failure may be one rank's own (its part of the file is corrupt, say).
  const dist::Layout layout = dist::make_layout(grid, shape.rows, shape.cols);
  const util::ThreadCountScope thread_count(options.threads);
  auto kernels = backend::make_kernels<T>(options.backend);
  kernels->set_tf32(options.tf32);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  LocalOperand<T> local = make_operand<T>(*kernels, source, shape, layout, options, budget, transposed, world);

  solvers::Solution<T> solution;
  try {
    const MatrixRef<T>* whole = grid_shape.size() == 1 && local.host ? &*local.host : nullptr;
    solution = solvers::solve(*kernels, *host, *local.operand, whole, grid, layout, options,
                              initial != nullptr ? &initial->W : nullptr, initial != nullptr ? &initial->H : nullptr,
                              transposed);
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    // The library's message (e.g. "numerical breakdown at iteration 12") does not know the file name; a
    // streamed read's (the file shrank) starts with it already. A failure all ranks share stays one (reported
    // once, the processes end normally): as a plain Error each rank printed it and MPI aborted the job.
    const std::string what = e.what();
    const Error named(what.starts_with(name + ": ") ? what : name + ": " + what, e.kind());
    if (dynamic_cast<const CollectiveError*>(&e) != nullptr) throw CollectiveError(named);
    throw_as(e.kind(), named.what());
  }

  Factorization<T> run;
  run.result = std::move(solution.result);
  api::keep_pieces(run, std::move(solution.pieces), context, grid_shape, layout);
  api::describe_input(run, name, format, shape.rows, shape.cols, options);
  run.grid_choice = std::move(grid_choice);

  // Every rank's share of the traffic, for the report (DESIGN §4's model beside it).
  api::record_traffic(run, world, solution.iteration_traffic,
                      dist::words_per_rank(grid_shape, shape.rows, shape.cols, options.rank) * sizeof(T));
  // Counted from the blocks as read: a symmetric .mtx's header counts its mirrored entries once, and duplicate
  // lines (or HDF5 entries) are summed into one. A streamed sparse input is a .dcsr, whose header is exact.
  if (local.streamed != nullptr && shape.sparse) {
    run.nnz = shape.stored;
  } else {
    run.nnz =
        world.sum<std::int64_t>(local.streamed != nullptr ? local.streamed->nonzeros() : local_nonzeros(*local.host));
  }
  if (budget > 0)
    run.memory = api::memory_figures(local.memory, local.operand->operand_stats(),
                                     local.streamed != nullptr ? local.streamed->tile_count() : 0);
  if (gather_mode == Gather::to_root) gather(run, context);
  return run;
}

// The stored run sees the initial factors of a transposed source swapped and transposed, and would name them so:
// they are checked here first, as the caller gave them: against A's shape where it is in memory, else for k and
// their values alone.
template <class T>
void check_initial_as_given(const Source& source, index_t k, const InitialFactors<T>& initial) {
  const MatrixRef<T>* stored = source.stored<T>();  // Aᵀ
  solvers::check_initial_factor(&initial.W, stored != nullptr ? cols_of(*stored) : initial.W.rows(), k, "W");
  solvers::check_initial_factor(&initial.H, k, stored != nullptr ? rows_of(*stored) : initial.H.cols(), "H");
}

}  // namespace

template <class T>
Factorization<T> factor(const Source& source, const FactorOptions& options, const Context& context, Gather gather_mode,
                        const InitialFactors<T>* initial) {
  if (options.missing.any()) return api::factor_masked<T>(source, options, context, gather_mode, initial);
  if (!source.transposed()) return factor_stored<T>(source, false, options, context, gather_mode, initial);
  // Aᵀ ≈ H'ᵀ... : factoring the stored Aᵀ = W' H' gives A = H'ᵀ W'ᵀ, so W = H'ᵀ and H = W'ᵀ, with no copy of A.
  std::optional<InitialFactors<T>> initial_t;
  if (initial != nullptr) {
    // Agreed: a rank given a bad start must not leave the others waiting in the run's first collective.
    io::detail::run_agreed(api::communicator(context), "initial W and H",
                           [&] { check_initial_as_given(source, options.rank, *initial); });
    initial_t = InitialFactors<T>{util::transposed(initial->H), util::transposed(initial->W)};
  }
  FactorOptions options_t = options;  // W's penalties are H's of the stored run, and the other way round
  std::swap(options_t.penalties.l1_w, options_t.penalties.l1_h);
  std::swap(options_t.penalties.l2_w, options_t.penalties.l2_h);
  Factorization<T> run = factor_stored<T>(source.as_untransposed(), true, options_t, context, Gather::none,
                                          initial_t ? &*initial_t : nullptr);
  std::swap(run.options.penalties.l1_w, run.options.penalties.l1_h);  // reported as asked
  std::swap(run.options.penalties.l2_w, run.options.penalties.l2_h);
  std::swap(run.w_block, run.h_block);
  std::swap(run.w_row_first, run.h_col_first);
  std::swap(run.result.initial_w_exponent, run.result.initial_h_exponent);
  std::swap(run.m, run.n);
  auto distribution = std::make_shared<detail::Distribution<T>>(*run.distribution);
  distribution->transposed = true;
  run.distribution = distribution;
  if (run.options.normalize) {
    // KL's objective is the divergence, which rescaling leaves as it is, plus the penalty terms, which it changes.
    const Penalties& pen = run.options.penalties;
    const bool kl_penalised = run.options.algorithm == Algorithm::kl && pen.any();
    const double kl_before =
        kl_penalised ? solvers::factor_penalties(api::communicator(context), run.w_block, run.h_block, pen) : 0.0;
    // W's columns sum to 1 as for any other source, normalised once (solve() leaves a transposed A's pair as it
    // is: its own normalisation made H's rows sum to 1 first, and a dead component of W kept an H row of sum 1,
    // another pair than the same data in Fortran order gave); each of W's rows is owned by exactly one process.
    solvers::normalise_across(api::communicator(context), run.w_block, run.h_block);
    // The penalties of the pair as now normalised (solve() took them of the stored run's normalisation).
    if (solvers::normalising_changes_penalties(run.options)) {
      const double e = run.result.rel_error * run.result.norm_a;
      run.result.objective = 0.5 * e * e + solvers::factor_penalties(api::communicator(context), run.w_block,
                                                                     run.h_block, run.options.penalties);
    } else if (kl_penalised) {
      run.result.objective +=
          solvers::factor_penalties(api::communicator(context), run.w_block, run.h_block, pen) - kl_before;
    }
  }
  if (gather_mode == Gather::to_root) gather(run, context);
  return run;
}

template <class T>
void gather(Factorization<T>& run, const Context& context) {
  if (!run.distribution) throw UsageError("gather: this Factorization does not come from factor()");
  const detail::Distribution<T>& d = *run.distribution;
  if (api::communicator(context).size() == 1) {
    // One process holds all of Wᵀ and H, in A's terms whether or not its source was transposed (factor() swapped
    // the blocks into A's roles): no pieces to collect, and no copies of them on the way (a tenth of a
    // one-iteration fit of 20000x10000 from Python went to gathering with itself).
    run.result.W = util::transposed(run.w_block);
    run.result.H = run.h_block;
    return;
  }
  const dist::Grid grid(api::communicator(context), d.shape);
  solvers::Factors<T> pieces;
  // A transposed run's blocks were swapped into A's roles; the grid knows them in Aᵀ's.
  pieces.wt = d.transposed ? run.h_block : run.w_block;
  pieces.h = d.transposed ? run.w_block : run.h_block;
  DenseMatrix<T> w, h;
  solvers::gather_factors(grid, d.layout, pieces, w, h);
  if (grid.world().rank() != 0) return;
  if (d.transposed) {
    run.result.W = util::transposed(h);
    run.result.H = util::transposed(w);
  } else {
    run.result.W = std::move(w);
    run.result.H = std::move(h);
  }
}

template <class T>
void write_factors_h5(const Factorization<T>& run, const std::string& path, const Context& context) {
  if (!run.distribution) throw UsageError(path + ": this Factorization does not come from factor()");
  const detail::Distribution<T>& d = *run.distribution;
  const dist::Grid grid(api::communicator(context), d.shape);
  if (!d.transposed) {
    io::write_factors_h5<T>(path, grid, d.layout, run.w_block.view(), run.h_block.view());
    return;
  }
  // A transposed (row-major or CSC) source: the layout is Aᵀ's and the blocks are in A's roles (factor() swapped
  // them), so the rows of W this rank owns are the layout's columns of H, and its columns of H the rows of W.
  dist::Layout a_layout = d.layout;
  std::swap(a_layout.m, a_layout.n);
  std::swap(a_layout.w_rows, a_layout.h_cols);
  io::write_factors_h5<T>(path, grid, a_layout, run.w_block.view(), run.h_block.view());
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type in these explicit instantiations
#define DNMF_INSTANTIATE_FACTOR(T)                                                                 \
  template Factorization<T> factor<T>(const Source&, const FactorOptions&, const Context&, Gather, \
                                      const InitialFactors<T>*);                                   \
  template void gather<T>(Factorization<T>&, const Context&);                                      \
  template void write_factors_h5<T>(const Factorization<T>&, const std::string&, const Context&);
// NOLINTEND(bugprone-macro-parentheses)
DNMF_INSTANTIATE_FACTOR(float)
DNMF_INSTANTIATE_FACTOR(double)
#undef DNMF_INSTANTIATE_FACTOR

}  // namespace dnmf
