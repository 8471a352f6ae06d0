// See solver_options.hpp.

#include "solver_options.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "commands.hpp"
#include "dnmf/error.hpp"
#include "dnmf/options.hpp"

namespace dnmf::cli {
namespace {

// The cores this process may run on (its affinity mask, which a batch system or taskset narrows), else the
// machine's.
int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::string threads_warning(int threads, int cores) {
  // Twice the cores: a little oversubscription (hyperthreads, a core busy elsewhere) is common and harmless;
  // beyond that each thread waits for the others at every barrier of every product.
  // Above kMaxThreads the run is refused with its own message; a warning before it said the same twice.
  if (threads <= 2 * cores || threads > kMaxThreads) return "";
  return "--threads " + std::to_string(threads) + " is far more than the " + std::to_string(cores) + " core" +
         (cores == 1 ? "" : "s") +
         " this process may use: threads beyond the cores only wait for each other and slow the run; use --threads " +
         std::to_string(cores) + " or fewer";
}

void add_solver_options(CLI::App& app, SolverArgs& args, SolverOptionScope scope) {
  FactorOptions& o = args.options;
  // CLI11 leaves options of the empty group out of the help.
  const auto group = [&app](bool shown) { return shown ? app.option_defaults()->get_group() : std::string(); };
  app.add_option("--algo", args.algo, "update rule")
      ->check(CLI::IsMember({"mu", "kl", "hals", "bpp"}))
      ->capture_default_str();
  app.add_option("--iters", o.max_iterations, "maximum iterations")
      ->transform(decimal_integer())
      ->check(at_least(0))
      ->capture_default_str();
  app.add_option("--tol", o.tol, "stop when the objective's relative change falls below this (0: never)")
      ->check(at_least(0))
      ->capture_default_str();
  app.add_option("--init", args.init, "initialisation (nndsvd/nndsvda need one process and a resident matrix)")
      ->check(CLI::IsMember({"random", "nndsvd", "nndsvda"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")
      ->transform(decimal_integer(false))
      ->check(seed_value())
      ->capture_default_str();
  add_precision_option(app, args.precision);
  app.add_option("--backend", args.backend, "where the kernels run")
      ->check(CLI::IsMember({"reference", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "OpenMP threads per process (0: OpenMP's default)")
      ->transform(decimal_integer())
      ->check(at_least(0));
  app.add_flag("--no-fuse", args.no_fuse, "never use the single-pass (fused) iteration");
  app.add_flag("--extrapolate", o.extrapolate,
               "hals, bpp: extrapolated iteration with restarts, fewer iterations to a given error "
               "(docs/algorithms.md)")
      ->group(group(scope.extrapolate));
  app.add_flag("--tf32", o.tf32, "cuda, f32: TF32 tensor-core products (off by default)");
  app.add_option("--l1-w", o.penalties.l1_w, "L1 penalty on W")->check(at_least(0));
  app.add_option("--l2-w", o.penalties.l2_w, "L2 penalty on W")->check(at_least(0));
  app.add_option("--l1-h", o.penalties.l1_h, "L1 penalty on H")->check(at_least(0));
  app.add_option("--l2-h", o.penalties.l2_h, "L2 penalty on H")->check(at_least(0));
  app.add_option("--memory-budget", args.memory_budget,
                 "host memory budget per process, e.g. 256M or 2G (K/M/G/T are powers of 1024): stream A from the "
                 "file in tiles when it does not fit")
      ->check(not_empty())
      ->group(group(scope.memory_budget));
  app.add_option("--grid", args.grid, "process grid: auto, or PRxPC matching the number of MPI processes")
      ->capture_default_str()
      ->group(group(scope.grid));
  app.add_option("--mask", args.mask,
                 "weights of A's shape (.npy, .mtx, .dcsr, ...): 0 = missing, positive = weight (docs/masked.md)")
      ->check(not_empty())
      ->group(group(scope.missing));
  app.add_option("--missing", args.missing, "nan: NaN entries of A are missing (none: a NaN is an error)")
      ->check(CLI::IsMember({"none", "nan"}))
      ->capture_default_str()
      ->group(group(scope.missing));
  app.add_option("--unstored", args.unstored,
                 "sparse A: unstored entries are observed zeros (zero) or missing (missing: fit stored entries only)")
      ->check(CLI::IsMember({"zero", "missing"}))
      ->capture_default_str()
      ->group(group(scope.missing));
  app.add_flag("-q,--quiet", args.quiet, "no progress lines on stderr");
}

void resolve_solver_options(SolverArgs& args, Context& context) {
  FactorOptions& o = args.options;
  o.algorithm = parse_algorithm(args.algo);
  o.init = parse_init(args.init);
  o.backend = parse_backend(args.backend);
  o.fused = !args.no_fuse;
  if (!args.mask.empty()) o.missing.mask = Source::file(args.mask);
  o.missing.nan_missing = args.missing == "nan";
  o.missing.unstored = parse_unstored(args.unstored);
  check_grid(args.grid);  // kept: nmfk() parses the grid after reading the shape, and not as a CollectiveError
  context.backend = o.backend;
  context.threads = o.threads;
  if (const std::string warning = threads_warning(o.threads, available_cores());
      !warning.empty() && context.rank() == 0)
    std::fprintf(stderr, "dnmf: warning: %s\n", one_line(warning).c_str());
  context.grid = args.grid;
  if (!args.memory_budget.empty()) {
    try {
      context.memory_budget = parse_bytes(args.memory_budget);
    } catch (const Error& e) {
      throw UsageError(std::string("--memory-budget: ") + e.what());
    }
    // The plan keeps within the budget, not within the machine: a budget beyond it (64G typed for 64M, or a
    // figure from another machine) plans a run that the kernel may end, and said nothing.
    const double physical =
        static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    if (physical > 0 && static_cast<double>(context.memory_budget) > physical && context.rank() == 0)
      std::fprintf(stderr,
                   "dnmf: warning: --memory-budget %s is more than this machine's memory (%s): the run is planned "
                   "within the budget, not within the machine\n",
                   human_bytes(static_cast<double>(context.memory_budget)).c_str(), human_bytes(physical).c_str());
  }
}

}  // namespace dnmf::cli
