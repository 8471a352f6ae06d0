// stream_rss_probe FILE BUDGET K ITERS [MASK]: a streamed factorisation of FILE (.npy or .dcsr) through the public
// entry point the CLI uses (dnmf::factor with a memory budget: baseline measured, plan, streamed operand, solve,
// factors gathered) and prints the plan and its peak RSS as one line of key=value pairs. The RSS test runs it as
// a child and reads its peak with wait4.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dnmf/context.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/source.hpp"

int main(int argc, char** argv) {
  using namespace dnmf;
  if (argc != 5 && argc != 6) {
    std::fprintf(stderr, "usage: stream_rss_probe FILE BUDGET K ITERS [MASK]\n");
    return 2;
  }
  try {
    FactorOptions options;
    options.rank = std::atoi(argv[3]);
    options.max_iterations = std::atoi(argv[4]);
    options.tol = 0;
    if (argc == 6) options.missing.mask = Source::file(argv[5]);  // a masked run streams the mask beside A
    Context context;
    context.memory_budget = parse_bytes(argv[2]);
    const Factorization<double> run = factor<double>(Source::file(argv[1]), options, context);
    const MemoryFigures& m = run.memory;
    if (!m.streamed) throw Error("the plan is resident; the probe wants a streamed run");
    std::printf(
        "streamed=1 budget=%lld baseline=%lld planned_total=%lld tile_bytes=%lld depth=%d tiles=%lld passes=%lld "
        "rel_error=%.6g waiting=%.3f reading=%.3f peak_rss=%lld\n",
        static_cast<long long>(m.budget_bytes), static_cast<long long>(m.baseline_bytes),
        static_cast<long long>(m.total_bytes), static_cast<long long>(m.tile_bytes), m.depth,
        static_cast<long long>(m.tiles_per_pass), m.passes, run.result.rel_error, m.seconds_waiting, m.seconds_reading,
        static_cast<long long>(peak_rss_bytes()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream_rss_probe: %s\n", e.what());
    return 1;
  }
}
