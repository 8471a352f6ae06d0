// `dnmf cv`: choose k by cross-validation on held-out entries (docs/masked.md). Writes OUTDIR/cv.json and
// OUTDIR/cv.csv as one output set and prints the per-k table; one process, A in memory.

#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "dnmf/context.hpp"
#include "dnmf/cross_validation.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/output_set.hpp"
#include "dnmf/source.hpp"
#include "signals.hpp"
#include "solver_options.hpp"

namespace dnmf::cli {
namespace {

struct CvArgs {
  std::string input;
  std::string output;
  std::string k_range;
  CrossValidationOptions options;  // folds and holdout bound directly
  SolverArgs solver;
};

std::string csv_text(const CrossValidationResult& r) {
  std::ostringstream c;
  c.precision(9);
  c << "k,mean_heldout_error,standard_error,selected\n";
  for (const auto& k : r.ranks)
    c << k.k << "," << k.mean << "," << k.standard_error << "," << (k.k == r.selected_k ? 1 : 0) << "\n";
  return c.str();
}

template <class T>
int run_cv(CvArgs args) {
  // The world, so that cross_validate refuses mpirun (every rank would otherwise run the whole sweep and write
  // the same folder).
  Context context = Context::world();
  if (context.size() > 1)  // before any rank makes the output folder
    throw CollectiveError(UsageError("cross-validation runs on one process (run dnmf cv without mpirun)"));
  CrossValidationOptions& o = args.options;
  on_every_process([&] {
    resolve_solver_options(args.solver, context);
    o.ks = parse_k_range(args.k_range);
    o.factor = args.solver.options;
  });
  stop_on_signals();  // before the staging folder exists (a signal while it was made left it behind)
  OutputSet out(args.output, {args.input, args.solver.mask});
  o.factor.cancel = [] { return stop_signal() != 0; };
  if (!args.solver.quiet) {
    o.progress = [](const CrossValidationProgress& p) {
      std::fprintf(stderr, "cv: fold %d/%d k=%lld held-out error %.4e (fit %.4e, %d iterations)\n", p.fold + 1, p.folds,
                   static_cast<long long>(p.k), p.heldout_error, p.fit_error, p.iterations);
    };
  }
  const CrossValidationResult result = cross_validate<T>(Source::file(args.input), o, context);
  if (const std::string warning = cross_validation_warning(result); !warning.empty())
    std::fprintf(stderr, "dnmf: warning: %s: %s\n", one_line(args.input).c_str(), one_line(warning).c_str());
  const std::string json = cross_validation_json(result, o);
  const std::string csv = csv_text(result);
  io::write_file_atomically(out.file("cv.json"), [&json](std::ostream& s) { s << json; });
  io::write_file_atomically(out.file("cv.csv"), [&csv](std::ostream& s) { s << csv; });
  commit_unless_stopped(out);
  std::printf("%6s  %18s  %14s\n", "k", "held-out error", "std. error");
  for (const auto& k : result.ranks)
    std::printf("%6lld  %18.6g  %14.3g%s\n", static_cast<long long>(k.k), k.mean, k.standard_error,
                k.k == result.selected_k ? "  <- selected" : "");
  std::printf("selected k=%lld (lowest mean at k=%lld; one-standard-error rule), %d %s of %.3g%% -> %s\n",
              static_cast<long long>(result.selected_k), static_cast<long long>(result.best_k), o.folds,
              o.folds == 1 ? "fold" : "folds", 100 * o.holdout, one_line(args.output).c_str());
  return 0;
}

}  // namespace

Command add_cv(CLI::App& parent) {
  auto args = std::make_shared<CvArgs>();
  CrossValidationOptions& o = args->options;
  CLI::App* app = parent.add_subcommand(
      "cv", "choose k by cross-validation: hide random observed entries, fit each k on the rest, score the hidden");
  app->add_option("FILE", args->input, std::string("input matrix: ") + kInputFormats)->required();
  app->add_option("--k", args->k_range, "the k to try: FIRST:LAST[:STEP] (inclusive) or one K")->required();
  app->add_option("--folds", o.folds, "independent random hold-outs (keyed by --seed)")
      ->transform(decimal_integer())
      ->check(at_least(1))
      ->capture_default_str();
  app->add_option("--holdout", o.holdout, "fraction of the observed entries hidden in each fold")
      ->check(fraction())
      ->capture_default_str();
  // Every fit must be converged for the errors to compare k fairly: BPP reaches tight tolerances in few
  // iterations.
  args->solver.algo = to_string(Algorithm::bpp);
  args->solver.options.max_iterations = 500;
  add_solver_options(*app, args->solver, {.memory_budget = false, .grid = false, .extrapolate = false});
  app->add_option("-o,--output", args->output, "output directory (created if missing)")->required();
  return {app, [args] { return args->solver.precision == "f32" ? run_cv<float>(*args) : run_cv<double>(*args); }};
}

}  // namespace dnmf::cli
