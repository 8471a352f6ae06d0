// `dnmf factor`: A ≈ W H from a matrix file, written as OUTDIR/W.npy, OUTDIR/H.npy and OUTDIR/report.json.
// Parsing and presentation only: dnmf::factor() does the work (every check that can fail runs before the
// factorisation); the outputs appear only after it succeeded, together, as one output set (output_set.hpp). Under
// mpirun every process runs this function and reads its own block of A (DESIGN §4); without mpirun it is the 1x1 grid.

#include "dnmf/factor.hpp"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "dnmf/blas.hpp"
#include "dnmf/context.hpp"
#include "dnmf/io.hpp"
#include "dnmf/output_set.hpp"
#include "dnmf/progress.hpp"
#include "dnmf/source.hpp"
#include "signals.hpp"
#include "solver_options.hpp"

namespace dnmf::cli {
namespace {

struct FactorArgs {
  std::string input;
  std::string output;
  std::string factors_format = "npy";
  bool verbose = false;
  SolverArgs solver;
};

/// --verbose: how the grid was chosen, and under the time model each candidate's predicted time.
void print_grid_choice(const GridChoiceFigures& f, const std::string& grid) {
  std::printf("grid %s (%s", grid.c_str(), f.rule.c_str());
  if (!f.by_words.empty()) std::printf("; fewest words: %s", f.by_words.c_str());
  if (f.cache_bytes > 0) std::printf("; cache %.0f KiB", f.cache_bytes / 1024);
  std::printf(")\n");
  for (const GridCandidate& c : f.candidates)
    std::printf("  %-7s %-8s predicted %8.3f ms/iter (compute %.3f, memory %.3f, network %.3f), %.0f words/rank%s\n",
                c.grid.c_str(), c.path.c_str(), c.predicted_seconds * 1e3, c.compute_seconds * 1e3,
                c.memory_seconds * 1e3, c.network_seconds * 1e3, c.words_per_rank, c.grid == grid ? "  <- chosen" : "");
}

/// One line for stdout after a streamed run: tiles, depth, waiting, peak RSS against the budget.
std::string memory_summary(const MemoryFigures& m) {
  char line[256];
  std::snprintf(line, sizeof line,
                "streamed (%s): %lld tiles of <= %s through %d slots, %lld passes, waited %.3g s for tiles; peak "
                "RSS %s of a %s budget",
                m.access.c_str(), static_cast<long long>(m.tiles_per_pass),
                human_bytes(static_cast<double>(m.tile_bytes)).c_str(), m.depth, m.passes, m.seconds_waiting,
                human_bytes(static_cast<double>(peak_rss_bytes())).c_str(),
                human_bytes(static_cast<double>(m.budget_bytes)).c_str());
  return line;
}

template <class T>
int factor(FactorArgs args) {
  Context context = Context::world();
  const bool root = context.rank() == 0;
  SolverArgs& solver = args.solver;
  // dnmf::factor() refuses an unusable backend, TF32 without it and an unknown file extension itself.
  on_every_process([&] { resolve_solver_options(solver, context); });

  // Before the staging folder exists: a signal while it was made killed the process and left it behind.
  stop_on_signals();
  std::optional<OutputSet> out;  // rank 0's; staging folder created now, removed if anything below throws
  context.on_root([&] { out.emplace(args.output, std::vector<std::string>{args.input, args.solver.mask}); });
  // Under --factors h5 every process writes into the staging folder that only rank 0 could name.
  const std::string staging = context.broadcast(root ? out->staging() : std::string());

  FactorOptions& options = solver.options;
  options.cancel = [] { return stop_signal() != 0; };
  if (!solver.quiet && root) {
    options.progress = [lines = ProgressLines{}](const IterationInfo& info) mutable {
      const std::string line = lines(info);
      if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
    };
  }
  // Said before the run: with a fallback kernel every BLAS product runs at a fraction of the machine's rate. Two
  // causes were seen: OPENBLAS_CORETYPE set to an older core, and OpenBLAS 0.3.21 taking a CPU newer than it knows
  // (an Emerald Rapids Xeon) for Prescott; the remedy for both is the variable, naming a core the CPU can run.
  if (root && options.backend != BackendKind::cuda && blas_info().generic_kernel)
    std::fprintf(stderr,
                 "dnmf: warning: the BLAS runs a generic kernel on a CPU with %s (%s); its products will be several "
                 "times slower than this CPU allows (set OPENBLAS_CORETYPE=%s, or configure with -DDNMF_BLAS=blis)\n",
                 blas_info().cpu_vector_isa.c_str(), blas_summary().c_str(),
                 blas_info().cpu_vector_isa == "avx512" ? "SkylakeX" : "Haswell");
  const bool h5_factors = args.factors_format == "h5";
  Factorization<T> run =
      dnmf::factor<T>(Source::file(args.input), options, context, h5_factors ? Gather::none : Gather::to_root);
  if (h5_factors) write_factors_h5<T>(run, staging + "/factors.h5", context);
  if (!root) return 0;

  const FactorResult<T>& result = run.result;
  if (!h5_factors) {
    io::write_npy<T>(out->file("W.npy"), result.W.view());
    io::write_npy<T>(out->file("H.npy"), result.H.view());
  }
  const std::string report = report_json(run);
  io::write_file_atomically(out->file("report.json"), [&report](std::ostream& stream) { stream << report; });
  // A signal during the writes or the commit's fsync: the user asked to stop, so the previous set stays (the
  // staging folder goes).
  commit_unless_stopped(*out);

  // A warning, not a failure: the capped columns were still solved exactly by the fallback.
  if (result.nnls_cap_hits > 0)
    std::fprintf(stderr, "dnmf: warning: %lld NNLS solves hit the pivoting round cap (see report.json)\n",
                 result.nnls_cap_hits);
  if (result.unobserved_rows > 0 || result.unobserved_cols > 0)
    std::fprintf(stderr,
                 "dnmf: warning: %lld rows and %lld columns of %s have no observed entry: their rows of W and columns "
                 "of H are zero\n",
                 static_cast<long long>(result.unobserved_rows), static_cast<long long>(result.unobserved_cols),
                 one_line(args.input).c_str());
  const double per_iteration = result.iterations > 0 ? result.seconds / result.iterations : 0.0;
  std::printf("k=%lld algo=%s grid=%s iterations=%d rel_error=%.2e seconds=%.3g (%.3g s/iter) -> %s\n",
              static_cast<long long>(options.rank), solver.algo.c_str(), run.grid.c_str(), result.iterations,
              result.rel_error, result.seconds, per_iteration, one_line(args.output).c_str());
  if (run.memory.streamed) std::printf("%s\n", memory_summary(run.memory).c_str());
  if (args.verbose) print_grid_choice(run.grid_choice, run.grid);
  return 0;
}

}  // namespace

Command add_factor(CLI::App& parent) {
  auto args = std::make_shared<FactorArgs>();
  CLI::App* app = parent.add_subcommand("factor", "factorise a matrix file: A ~ W H with W, H >= 0");
  app->add_option("FILE", args->input, std::string("input matrix: ") + kInputFormats)->required();
  app->add_option("-k,--rank", args->solver.options.rank, "rank k, 1 <= k <= min(m, n)")
      ->required()
      ->transform(decimal_integer());
  add_solver_options(*app, args->solver);
  app->add_option("-o,--output", args->output, "output directory (created if missing)")->required();
  app->add_option("--factors", args->factors_format,
                  "how W and H are written: npy (gathered on rank 0: W.npy, H.npy) or h5 (every process writes its "
                  "pieces into factors.h5, datasets W and H)")
      ->check(CLI::IsMember({"npy", "h5"}))
      ->capture_default_str();
  app->add_flag("--verbose", args->verbose, "also print how the process grid was chosen (predicted times per grid)");
  return {app, [args] { return args->solver.precision == "f32" ? factor<float>(*args) : factor<double>(*args); }};
}

}  // namespace dnmf::cli
