// `dnmf factor`: A ≈ W H from a matrix file, written as OUTDIR/W.npy, OUTDIR/H.npy and OUTDIR/report.json.
// The order of the steps is the point of this file: every check that can fail runs before the factorisation,
// and the outputs appear only after it succeeded.

#include <cstdio>
#include <memory>
#include <regex>
#include <string>

#include "backend/kernels.hpp"
#include "commands.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/io.hpp"
#include "factor_report.hpp"
#include "input.hpp"
#include "output_dir.hpp"
#include "progress.hpp"

namespace dnmf::cli {
namespace {

struct FactorArgs {
  std::string input;
  std::string output;
  FactorOptions options;  // rank, iterations, tol, seed, threads and penalties are bound directly
  std::string algo = to_string(FactorOptions{}.algorithm);
  std::string init = to_string(FactorOptions{}.init);
  std::string backend = to_string(FactorOptions{}.backend);
  std::string precision = "f64";
  std::string grid = "auto";
  std::string memory_budget;  // empty: not given
  bool no_fuse = false;
  bool quiet = false;
};

/// The DESIGN §1 options whose machinery is not in this build: refused clearly unless trivial.
void check_unavailable_features(const FactorArgs& args) {
  if (args.grid != "auto" && args.grid != "1x1") {
    static const std::regex kGrid("[1-9][0-9]*x[1-9][0-9]*");
    if (!std::regex_match(args.grid, kGrid)) {
      throw Error("--grid: expected auto or PRxPC (e.g. 2x4), got '" + args.grid + "'");
    }
    throw Error("--grid " + args.grid + ": a grid other than 1x1 needs an MPI build");
  }
  if (args.options.tf32 && args.options.backend != BackendKind::cuda) {
    throw Error("--tf32: tensor-core float math needs --backend cuda");
  }
  if (!args.memory_budget.empty()) {
    throw Error("--memory-budget: out-of-memory streaming is not available in this build");
  }
  std::string why_not;
  if (!backend::backend_available(args.options.backend, &why_not)) {
    throw Error("--backend " + args.backend + ": " + why_not);
  }
}

template <class T>
int factor(FactorArgs args) {
  FactorOptions& options = args.options;
  options.algorithm = parse_algorithm(args.algo);
  options.init = parse_init(args.init);
  options.backend = parse_backend(args.backend);
  options.fused = !args.no_fuse;
  check_unavailable_features(args);
  const io::FileFormat format = io::format_of(args.input);  // an unknown extension fails before any output

  OutputDirectory out(args.output);  // created and probed now; cleaned up if anything below throws
  const LoadedMatrix<T> matrix = load_matrix<T>(args.input);
  require_nonnegative(matrix, args.input);
  const MatrixRef<T> a = matrix.ref();

  if (!args.quiet) options.progress = ProgressPrinter{};
  FactorResult<T> result;
  try {
    result = factorize<T>(a, options);
  } catch (const Error& e) {
    // The library's message (e.g. "rank k=0 does not fit a 20x10 matrix") does not know the file name.
    throw Error(args.input + ": " + e.what());
  }

  const EntryStats stats = entry_stats(a);
  // nnz of a sparse file is what it stores (as its header says); of a dense one, its non-zero entries.
  const index_t nnz = format == io::FileFormat::npy ? stats.nonzeros : stats.stored;
  const RunDescription run{args.input, format_name(format), args.precision, "1x1", stats.rows, stats.cols, nnz,
                           options};
  const std::string w_path = out.file("W.npy");
  const std::string h_path = out.file("H.npy");
  const std::string report_path = out.file("report.json");
  io::write_npy<T>(w_path, result.W.view());
  out.wrote(w_path);
  io::write_npy<T>(h_path, result.H.view());
  out.wrote(h_path);
  const std::string report = factor_report_json(run, result);
  io::write_file_atomically(report_path, [&report](std::ostream& stream) { stream << report; });
  out.commit();

  // A warning, not a failure: the capped columns were still solved exactly by the fallback.
  if (result.nnls_cap_hits > 0)
    std::fprintf(stderr, "dnmf: warning: %lld NNLS solves hit the pivoting round cap (see report.json)\n",
                 result.nnls_cap_hits);
  const double per_iteration = result.iterations > 0 ? result.seconds / result.iterations : 0.0;
  std::printf("k=%lld algo=%s iterations=%d rel_error=%.2e seconds=%.3g (%.3g s/iter) -> %s\n",
              static_cast<long long>(options.rank), args.algo.c_str(), result.iterations, result.rel_error,
              result.seconds, per_iteration, args.output.c_str());
  return 0;
}

}  // namespace

Command add_factor(CLI::App& parent) {
  auto args = std::make_shared<FactorArgs>();
  FactorOptions& o = args->options;
  CLI::App* app = parent.add_subcommand("factor", "factorise a matrix file: A ~ W H with W, H >= 0");
  app->add_option("FILE", args->input, "input matrix (.npy dense, .mtx sparse)")->required();
  app->add_option("-k,--rank", o.rank, "rank k, 1 <= k <= min(m, n)")->required();
  app->add_option("--algo", args->algo, "update rule")
      ->check(CLI::IsMember({"mu", "kl", "hals", "bpp"}))
      ->capture_default_str();
  app->add_option("--iters", o.max_iterations, "maximum iterations")->check(at_least(0))->capture_default_str();
  app->add_option("--tol", o.tol, "stop when the objective's relative change falls below this (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  app->add_option("--init", args->init, "initialisation")
      ->check(CLI::IsMember({"random", "nndsvd", "nndsvda"}))
      ->capture_default_str();
  app->add_option("--seed", o.seed, "random seed")->check(at_least(0))->capture_default_str();
  add_precision_option(*app, args->precision);
  app->add_option("--backend", args->backend, "where the kernels run")
      ->check(CLI::IsMember({"reference", "cpu", "cuda"}))
      ->capture_default_str();
  app->add_option("--threads", o.threads, "OpenMP threads (0: OpenMP's default)")->check(at_least(0));
  app->add_flag("--no-fuse", args->no_fuse, "never use the single-pass (fused) iteration");
  app->add_flag("--tf32", args->options.tf32, "cuda, f32: TF32 tensor-core products (off by default)");
  app->add_option("--l1-w", o.penalties.l1_w, "L1 penalty on W")->check(at_least(0));
  app->add_option("--l2-w", o.penalties.l2_w, "L2 penalty on W")->check(at_least(0));
  app->add_option("--l1-h", o.penalties.l1_h, "L1 penalty on H")->check(at_least(0));
  app->add_option("--l2-h", o.penalties.l2_h, "L2 penalty on H")->check(at_least(0));
  app->add_option("--memory-budget", args->memory_budget, "host memory budget, e.g. 2GiB (needs a streaming build)");
  app->add_option("--grid", args->grid, "process grid: auto or PRxPC (other than 1x1 needs an MPI build)")
      ->capture_default_str();
  app->add_flag("-q,--quiet", args->quiet, "no progress lines on stderr");
  app->add_option("-o,--output", args->output, "output directory (created if missing)")->required();
  return {app, [args] { return args->precision == "f32" ? factor<float>(*args) : factor<double>(*args); }};
}

}  // namespace dnmf::cli
