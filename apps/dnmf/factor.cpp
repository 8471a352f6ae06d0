// `dnmf factor`: A ≈ W H from a matrix file, written as OUTDIR/W.npy, OUTDIR/H.npy and OUTDIR/report.json.
// The order of the steps is the point of this file: every check that can fail runs before the factorisation,
// and the outputs appear only after it succeeded. Under mpirun every process runs this function on its own
// block of A (DESIGN §4); without mpirun it is the 1x1 grid.

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/kernels.hpp"
#include "collective.hpp"
#include "commands.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "factor_report.hpp"
#include "input.hpp"
#include "io/block_read.hpp"
#include "io/hdf5_io.hpp"
#include "output_dir.hpp"
#include "progress.hpp"
#include "solver_options.hpp"
#include "solvers/operand.hpp"
#include "solvers/solve.hpp"
#include "stream/streamed_operand.hpp"
#include "stream_report.hpp"

namespace dnmf::cli {
namespace {

struct FactorArgs {
  std::string input;
  std::string output;
  std::string factors_format = "npy";
  SolverArgs solver;
};

/// This rank's block of A as the solver reads it, with whatever owns its storage.
template <class T>
struct LocalOperand {
  io::LocalBlock<T> block;  ///< the block in host memory (resident mode)
  MatrixRef<T> on_backend;  ///< the block in the kernels' memory
  std::unique_ptr<solvers::Operand<T>> operand;
  MemoryPlan<T> memory;  ///< --memory-budget's plan (stream_report.hpp); budget 0 when none was given
};

/// Reads this rank's block and makes it resident on the kernels, or, when --memory-budget says it does not fit,
/// streams it from the file in tiles.
template <class T>
LocalOperand<T> make_operand(backend::Kernels<T>& kernels, const std::string& path, const io::MatrixShape& shape,
                             const dist::Layout& layout, const FactorOptions& options, std::int64_t budget,
                             dist::Communicator& world) {
  LocalOperand<T> local;
  if (budget > 0) {
    local.memory = plan_block<T>(path, shape, layout, options, budget, world);
    if (local.memory.plan.streamed) {
      local.operand = make_streamed_operand<T>(kernels, local.memory);
      return local;
    }
  }
  local.block = io::read_block<T>(path, layout.a_rows, layout.a_cols, world);
  local.on_backend = kernels.make_resident(local.block.ref());
  local.operand = std::make_unique<solvers::ResidentOperand<T>>(kernels, local.on_backend);
  return local;
}

/// Entries != 0 in this rank's block (dense) or stored (CSR).
template <class T>
index_t local_nonzeros(const io::LocalBlock<T>& block) {
  if (block.sparse) return block.csr.nnz();
  index_t count = 0;
  for (T v : block.dense.storage()) count += v != T(0) ? 1 : 0;
  return count;
}

template <class T>
int factor(FactorArgs args) {
  dist::Communicator& world = dist::world();
  const bool root = world.rank() == 0;
  SolverArgs& solver = args.solver;
  FactorOptions& options = solver.options;
  std::int64_t budget = 0;  // --memory-budget in bytes; 0: not given

  // Checks every rank makes identically: reported once, and every process ends normally.
  const io::MatrixShape shape = on_every_rank([&] {
    resolve_solver_options(solver);
    budget = parse_memory_budget(solver.memory_budget);
    (void)io::format_of(args.input);  // an unknown extension fails before any output
    return io::read_shape(args.input, world);
  });
  const dist::GridShape grid_shape = on_every_rank([&] {
    try {
      solvers::check_options(options, shape.rows, shape.cols);
    } catch (const Error& e) {
      throw Error(args.input + ": " + e.what());  // "rank k=0 does not fit a 20x10 matrix" names no file
    }
    return solver.grid == "auto" ? dist::choose_grid(world.size(), shape.rows, shape.cols, options.rank)
                                 : dist::parse_grid(solver.grid);
  });
  const dist::Grid grid = on_every_rank([&] { return dist::Grid(world, grid_shape); });
  if (options.init != InitMethod::random && grid_shape.size() > 1)
    throw CollectiveError("--init " + to_string(options.init) + " needs one process; use --init random on a grid");

  std::optional<OutputDirectory> out;  // rank 0's; created and probed now, cleaned up if anything below throws
  on_root_for_all(world, [&] { out.emplace(args.output); });

  // From here on a failure may be one rank's own (its part of the file is corrupt, say).
  const dist::Layout layout = dist::make_layout(grid, shape.rows, shape.cols);
  if (options.threads > 0) omp_set_num_threads(options.threads);
  auto kernels = backend::make_kernels<T>(options.backend);
  kernels->set_tf32(options.tf32);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  LocalOperand<T> local = make_operand<T>(*kernels, args.input, shape, layout, options, budget, world);
  const auto* streamed = dynamic_cast<const stream::StreamedOperand<T>*>(local.operand.get());

  if (!solver.quiet && root) options.progress = ProgressPrinter{};
  const MatrixRef<T> host_block = local.block.ref();
  solvers::Solution<T> solution;
  try {
    solution =
        solvers::solve(*kernels, *host, *local.operand,
                       grid_shape.size() == 1 && streamed == nullptr ? &host_block : nullptr, grid, layout, options);
  } catch (const Error& e) {
    // The library's message (e.g. "numerical breakdown at iteration 12") does not know the file name.
    throw Error(args.input + ": " + e.what());
  }
  FactorResult<T>& result = solution.result;
  // W and H: gathered on rank 0 into .npy files, or written by every rank into one HDF5 file.
  const bool h5_factors = args.factors_format == "h5";
  const std::string h5_path = args.output + "/factors.h5";
  if (h5_factors) {
    io::write_factors_h5<T>(h5_path, grid, layout, solution.pieces.wt.view(), solution.pieces.h.view());
  } else {
    solvers::gather_factors(grid, layout, solution.pieces, result.W, result.H);
  }

  // Every rank's share of the traffic, for the report (DESIGN §4's model beside it).
  const int iterations = std::max(result.iterations, 1);
  std::vector<double> bytes_per_rank(static_cast<std::size_t>(world.size()));
  const double mine = solution.iteration_traffic.bytes_sent / iterations;
  world.gather(&mine, bytes_per_rank.data(), std::vector<std::size_t>(bytes_per_rank.size(), 1), dist::Scalar::f64, 0);
  const index_t nnz =
      shape.sparse ? shape.stored
                   : world.sum<std::int64_t>(streamed != nullptr ? streamed->nonzeros() : local_nonzeros(local.block));

  if (root) {
    RunDescription run{args.input,
                       format_name(io::format_of(args.input)),
                       solver.precision,
                       grid_shape.str(),
                       shape.rows,
                       shape.cols,
                       nnz,
                       options,
                       {},
                       {}};
    run.communication.bytes_per_iteration_per_rank = bytes_per_rank;
    run.communication.model_bytes_per_iteration =
        dist::words_per_rank(grid_shape, shape.rows, shape.cols, options.rank) * sizeof(T);
    run.communication.processes = world.size();
    if (budget > 0)
      run.memory_json = memory_report_json(local.memory, local.operand->operand_stats(),
                                           streamed != nullptr ? streamed->tile_count() : 0);
    const std::string report_path = out->file("report.json");
    if (h5_factors) {
      out->wrote(h5_path);
    } else {
      const std::string w_path = out->file("W.npy");
      const std::string h_path = out->file("H.npy");
      io::write_npy<T>(w_path, result.W.view());
      out->wrote(w_path);
      io::write_npy<T>(h_path, result.H.view());
      out->wrote(h_path);
    }
    const std::string report = factor_report_json(run, result);
    io::write_file_atomically(report_path, [&report](std::ostream& stream) { stream << report; });
    out->commit();

    // A warning, not a failure: the capped columns were still solved exactly by the fallback.
    if (result.nnls_cap_hits > 0)
      std::fprintf(stderr, "dnmf: warning: %lld NNLS solves hit the pivoting round cap (see report.json)\n",
                   result.nnls_cap_hits);
    const double per_iteration = result.iterations > 0 ? result.seconds / result.iterations : 0.0;
    std::printf("k=%lld algo=%s grid=%s iterations=%d rel_error=%.2e seconds=%.3g (%.3g s/iter) -> %s\n",
                static_cast<long long>(options.rank), solver.algo.c_str(), grid_shape.str().c_str(), result.iterations,
                result.rel_error, result.seconds, per_iteration, args.output.c_str());
    if (streamed != nullptr)
      std::printf("%s\n", memory_summary(local.memory, streamed->operand_stats(), streamed->tile_count()).c_str());
  }
  return 0;
}

}  // namespace

Command add_factor(CLI::App& parent) {
  auto args = std::make_shared<FactorArgs>();
  CLI::App* app = parent.add_subcommand("factor", "factorise a matrix file: A ~ W H with W, H >= 0");
  app->add_option("FILE", args->input,
                  "input matrix: .npy (dense), .mtx (sparse), .h5/.hdf5[:/object] (dense dataset or CSR group), "
                  ".dcsr (binary CSR, see dnmf convert)")
      ->required();
  app->add_option("-k,--rank", args->solver.options.rank, "rank k, 1 <= k <= min(m, n)")->required();
  add_solver_options(*app, args->solver);
  app->add_option("-o,--output", args->output, "output directory (created if missing)")->required();
  app->add_option("--factors", args->factors_format,
                  "how W and H are written: npy (gathered on rank 0: W.npy, H.npy) or h5 (every process writes its "
                  "pieces into factors.h5, datasets W and H)")
      ->check(CLI::IsMember({"npy", "h5"}))
      ->capture_default_str();
  return {app, [args] { return args->solver.precision == "f32" ? factor<float>(*args) : factor<double>(*args); }};
}

}  // namespace dnmf::cli
