// dnmf CLI: the solver options shared by `dnmf factor` and `dnmf nmfk` (everything but the input, the rank and
// the output), and their translation into FactorOptions and the Context.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "dnmf/context.hpp"
#include "dnmf/options.hpp"

namespace dnmf::cli {

/// The parsed solver options; names are resolved into `options` by resolve_solver_options().
struct SolverArgs {
  FactorOptions options;  ///< iterations, tol, seed, threads, tf32 and penalties are bound directly
  std::string algo = to_string(FactorOptions{}.algorithm);
  std::string init = to_string(FactorOptions{}.init);
  std::string backend = to_string(FactorOptions{}.backend);
  std::string precision = "f64";
  std::string grid = "auto";
  std::string memory_budget;  ///< empty: not given
  std::string mask;           ///< --mask FILE; empty: none
  std::string missing = "none";
  std::string unstored = "zero";
  bool no_fuse = false;
  bool quiet = false;
};

/// Which of the shared options a command can use. Those it cannot are still parsed, so that the command refuses
/// them with its reason, but left out of its --help.
struct SolverOptionScope {
  bool memory_budget = true;  ///< --memory-budget
  bool grid = true;           ///< --grid
  bool missing = true;        ///< --mask --missing --unstored
  bool extrapolate = true;    ///< --extrapolate
};

/// Adds --algo --iters --tol --init --seed --precision --backend --threads --no-fuse --tf32 --l1-w --l2-w --l1-h
/// --l2-h --memory-budget --grid --mask --missing --unstored -q/--quiet, bound to `args`; those outside `scope`
/// are hidden from --help.
void add_solver_options(CLI::App& app, SolverArgs& args, SolverOptionScope scope = {});

/// Fills args.options from the names, and `context` with how the job runs (backend, threads, grid, memory
/// budget), warning on stderr (rank 0) when --threads is far beyond the cores (threads_warning); throws
/// dnmf::Error for a malformed grid or budget. What else cannot run here (TF32 without CUDA, a
/// backend this build or machine lacks) dnmf::factor() and dnmf::nmfk() report themselves.
void resolve_solver_options(SolverArgs& args, Context& context);

/// The warning for `--threads threads` on `cores` available cores ("" when there are not far more threads).
[[nodiscard]] std::string threads_warning(int threads, int cores);

}  // namespace dnmf::cli
