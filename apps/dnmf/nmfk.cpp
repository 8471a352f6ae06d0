// `dnmf nmfk`: choose k (DESIGN §6). Runs the NMFk sweep on a matrix file and writes OUTDIR/nmfk.json,
// nmfk.csv, the plot (nmfk.svg, nmfk.png), k_<K>/W.npy and H.npy, with checkpoints in OUTDIR/checkpoints so
// that a rerun of the same command resumes. Under mpirun the processes form --groups groups; each rank reads
// only its own block of the file.

#include "dnmf/nmfk.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "dnmf/context.hpp"
#include "dnmf/cross_validation.hpp"
#include "dnmf/output_set.hpp"
#include "dnmf/progress.hpp"
#include "dnmf/source.hpp"
#include "signals.hpp"
#include "solver_options.hpp"

namespace dnmf::cli {
namespace {

struct NmfkArgs {
  std::string input;
  std::string output;
  std::string k_range;
  std::string perturbation = "uniform";
  std::string rule = "silhouette";
  std::optional<double> err_threshold;
  NmfkOptions options;  // perturbations, epsilon, thresholds, groups, flags are bound directly
  SolverArgs solver;
};

template <class T>
int run_nmfk(NmfkArgs args) {
  Context context = Context::world();
  const bool root = context.rank() == 0;
  NmfkOptions& o = args.options;
  SolverArgs& solver = args.solver;

  // dnmf::nmfk() refuses --memory-budget, an unusable backend and an unknown file extension itself.
  on_every_process([&] {
    resolve_solver_options(solver, context);
    o.ks = parse_k_range(args.k_range);
    o.perturbation = parse_perturbation(args.perturbation);
    o.rule = parse_selection_rule(args.rule);
    o.err_threshold = args.err_threshold;
    o.factor = solver.options;
  });

  // Before the staging folder exists: a signal while it was made killed the process and left it behind.
  stop_on_signals();
  std::optional<OutputSet> out;  // rank 0's; staging folder created now, removed if anything below throws
  context.on_root([&] { out.emplace(args.output, std::vector<std::string>{args.input, args.solver.mask}); });
  o.factor.cancel = [] { return stop_signal() != 0; };
  // Checkpoints outlive output sets (a rerun resumes from them), so they live in the current OUT, not in the
  // staging folder, and are carried into each new set by commit().
  // The folder as typed, normalised ("-o sub/../out" made sub/ for the checkpoints and left it empty), where it is
  // the folder the output set resolves to; else that folder: a dangling link ("-o lnk" failed creating
  // lnk/checkpoints, where the commit follows the link), or a link followed by ".." ("-o lnk/../res" wrote the
  // results beside the link's target and the checkpoints in ./res). Rank 0's, which every rank writes its jobs under.
  std::string folder = std::filesystem::path(args.output).lexically_normal().string();
  if (root) {
    std::error_code ec;
    std::filesystem::path typed = std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ec), ec);
    typed = typed.lexically_normal();
    if (!typed.has_filename() && typed.has_parent_path()) typed = typed.parent_path();
    if (ec || typed != std::filesystem::path(out->target())) folder = out->target();
  }
  o.checkpoint_dir = (std::filesystem::path(context.broadcast(folder)) / "checkpoints").string();
  if (root) o.notice = [](const std::string& line) { std::fprintf(stderr, "nmfk: %s\n", one_line(line).c_str()); };
  if (!solver.quiet) {
    const int groups = o.groups;
    o.progress = [groups](const NmfkProgress& p) {
      std::fprintf(stderr, "%s\n", nmfk_progress_line(p, groups).c_str());
    };
  }

  const Source source = Source::file(args.input);
  const NmfkResult<T> result = [&] {
    try {
      return nmfk<T>(source, o, context);
    } catch (const Cancelled& e) {
      // "cancelled at iteration 1" said neither what was kept nor what to do next.
      // With --restart the same command would discard them again.
      throw Cancelled(
          std::string(e.what()) + "; the jobs finished so far are checkpointed in " + o.checkpoint_dir +
          (o.restart ? ": the same command without --restart resumes them" : ": the same command resumes them"));
    }
  }();
  if (!root) return 0;

  const NmfkRunInfo run = nmfk_run_info<T>(source);
  const NmfkOutputs files = write_nmfk_outputs<T>(result, o, run, out->staging(), args.output);
  commit_unless_stopped(*out, {"checkpoints"});
  // Where the files are now that the set is in place (write_nmfk_outputs named them in the staging folder).
  const auto final_path = [&args](const std::string& staged) {
    return staged.empty() ? staged
                          : (std::filesystem::path(args.output) / std::filesystem::path(staged).filename()).string();
  };
  if (!files.plot_warning.empty()) std::fprintf(stderr, "dnmf: warning: %s\n", one_line(files.plot_warning).c_str());
  const NmfkSelection& s = result.selection;
  std::printf("nmfk: %s\n", s.message.c_str());
  if (s.selected_k)
    std::printf("selected k=%lld (decided by the %s rule)\n", static_cast<long long>(*s.selected_k),
                to_string(s.decided_by).c_str());
  else
    std::printf("no k passed; best candidate k=%lld\n", static_cast<long long>(s.best_candidate));
  if (result.cv) {
    const CrossValidationResult& cv = *result.cv;
    if (const std::string warning = cross_validation_warning(cv); !warning.empty())
      std::fprintf(stderr, "dnmf: warning: %s: %s\n", one_line(args.input).c_str(), one_line(warning).c_str());
    std::printf("%6s  %18s  %14s\n", "k", "held-out error", "std. error");
    for (const auto& k : cv.ranks)
      std::printf("%6lld  %18.6g  %14.3g%s\n", static_cast<long long>(k.k), k.mean, k.standard_error,
                  k.k == cv.selected_k ? "  <- cross-validation" : "");
    std::printf(
        "cross-validation: k=%lld (lowest held-out error at k=%lld; one-standard-error rule), %d %s of %.3g%%\n",
        static_cast<long long>(cv.selected_k), static_cast<long long>(cv.best_k), o.cv_folds,
        o.cv_folds == 1 ? "fold" : "folds", 100 * o.cv_holdout);
  }
  std::printf("jobs: %d run, %d from checkpoints; %.1f s -> %s\n", result.jobs_run, result.jobs_loaded, result.seconds,
              one_line(final_path(files.json)).c_str());
  if (!files.svg.empty())
    std::printf("plot: %s, %s\n", one_line(final_path(files.svg)).c_str(), one_line(final_path(files.png)).c_str());
  return 0;
}

}  // namespace

Command add_nmfk(CLI::App& parent) {
  auto args = std::make_shared<NmfkArgs>();
  NmfkOptions& o = args->options;
  CLI::App* app = parent.add_subcommand("nmfk", "choose k: NMFk stability analysis over a range of k");
  app->add_option("FILE", args->input, std::string("input matrix: ") + kInputFormats)->required();
  app->add_option("--k", args->k_range, "the k to try: FIRST:LAST[:STEP] (inclusive) or one K")->required();
  app->add_option("--perturbations", o.perturbations,
                  "perturbed copies of A per k (at least 2: the silhouettes compare them)")
      ->transform(decimal_integer())
      ->capture_default_str();
  app->add_option("--epsilon", o.epsilon, "uniform perturbation amplitude: a(1 + eps(2U - 1)), 0 <= eps < 1")
      ->check(at_least(0))
      ->capture_default_str();
  app->add_option("--perturbation", args->perturbation, "uniform, or poisson (resampling of count data)")
      ->check(CLI::IsMember({"uniform", "poisson"}))
      ->capture_default_str();
  app->add_option("--sil-threshold", o.sil_threshold, "minimum silhouette a k needs to be accepted")
      ->capture_default_str();
  app->add_option("--err-threshold", args->err_threshold, "maximum relative error a k may have to be accepted")
      ->check(at_least(0));
  app->add_option("--rule", args->rule, "which rule decides: silhouette (largest accepted k) or wilcoxon")
      ->check(CLI::IsMember({"silhouette", "wilcoxon"}))
      ->capture_default_str();
  app->add_flag("--h-silhouettes", o.h_silhouettes, "also report silhouettes of H's rows");
  app->add_option("--groups", o.groups, "process groups running different (k, p) jobs (<= processes)")
      ->transform(decimal_integer())
      ->check(at_least(1))
      ->capture_default_str();
  app->add_option("--cluster-iters", o.max_cluster_iterations, "cap on the clustering's assignment rounds")
      ->transform(decimal_integer())
      ->check(at_least(1))
      ->capture_default_str();
  app->add_option("--accept-factor", o.accept_factor,
                  "leave out of the clustering factorisations whose error exceeds this times the best of their k")
      ->check(at_least(1))
      ->capture_default_str();
  CLI::Option* cv = app->add_flag(
      "--cv", o.cv, "also choose k by cross-validation: held-out error per k beside the silhouettes (one process)");
  // Without --cv they would be ignored silently: a run the user believes cross-validated.
  app->add_option("--cv-folds", o.cv_folds, "--cv: independent random hold-outs (keyed by --seed)")
      ->transform(decimal_integer())
      ->check(at_least(1))
      ->needs(cv)
      ->capture_default_str();
  app->add_option("--cv-holdout", o.cv_holdout, "--cv: fraction of the entries hidden in each fold")
      ->check(fraction())
      ->needs(cv)
      ->capture_default_str();
  app->add_flag("--restart", o.restart,
                "discard the checkpoints in OUT/checkpoints and recompute every job (without it, checkpoints of "
                "these data and options are reused and others refused); deleted when the run starts, even if it "
                "is then interrupted");
  // NMFk needs every perturbed factorisation converged (an unconverged one looks unstable): HALS with a
  // generous cap reaches the tolerance in tens of iterations where MU's 200 often do not (docs/nmfk.md).
  args->solver.algo = to_string(Algorithm::hals);
  args->solver.options.max_iterations = 1000;
  add_solver_options(*app, args->solver, {.memory_budget = false, .missing = false});
  app->add_option("-o,--output", args->output, "output directory (created if missing)")->required();
  return {app, [args] { return args->solver.precision == "f32" ? run_nmfk<float>(*args) : run_nmfk<double>(*args); }};
}

}  // namespace dnmf::cli
