// stream_rss_probe FILE BUDGET K ITERS: plans and runs a streamed factorisation of FILE (.npy or .dcsr) the way
// the CLI does (baseline measured, plan, streamed operand, solve, factors gathered) and prints the plan and its
// peak RSS as one line of key=value pairs. The RSS test runs it as a child and reads its peak with wait4.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend/cpu/cpu_kernels.hpp"
#include "dist/communicator.hpp"
#include "solvers/solve.hpp"
#include "stream/bytes.hpp"
#include "stream/planner.hpp"
#include "stream/process_memory.hpp"
#include "stream/streamed_operand.hpp"
#include "util/memory.hpp"

int main(int argc, char** argv) {
  using namespace dnmf;
  if (argc != 5) {
    std::fprintf(stderr, "usage: stream_rss_probe FILE BUDGET K ITERS\n");
    return 2;
  }
  try {
    const std::string path = argv[1];
    const io::MatrixShape shape = stream::source_shape(path);
    dist::SingleCommunicator self;
    const dist::Grid grid(self, {1, 1});
    const dist::Layout layout = dist::make_layout(grid, shape.rows, shape.cols);
    auto source = stream::open_source<double>(path, layout.a_rows, layout.a_cols);
    FactorOptions options;
    options.rank = std::atoi(argv[3]);
    options.max_iterations = std::atoi(argv[4]);
    options.tol = 0;

    stream::PlanInput in;
    in.layout = layout;
    in.sparse = source->sparse();
    in.stored = source->stored();
    in.scalar_bytes = sizeof(double);
    in.rank = options.rank;
    in.threads = omp_get_max_threads();
    in.budget = stream::parse_bytes(argv[2]);
    in.baseline = stream::current_rss_bytes();
    in.min_tile_bytes = source->min_tile_bytes();
    in.staging_bytes = source->staging_bytes();
    const stream::Plan plan = stream::plan_memory(in);
    if (!plan.streamed) throw Error("the plan is resident; the probe wants a streamed run");

    backend::CpuKernels<double> kernels, host;
    stream::StreamedOperand<double> operand(kernels, std::move(source), plan.tile_bytes, plan.depth);
    solvers::Solution<double> solution = solvers::solve<double>(kernels, host, operand, nullptr, grid, layout, options);
    DenseMatrix<double> w, h;
    solvers::gather_factors(grid, layout, solution.pieces, w, h);
    const solvers::OperandStats s = operand.operand_stats();
    std::printf(
        "streamed=1 budget=%lld baseline=%lld planned_total=%lld tile_bytes=%zu depth=%d tiles=%zu passes=%lld "
        "rel_error=%.6g waiting=%.3f reading=%.3f peak_rss=%lld\n",
        static_cast<long long>(plan.budget), static_cast<long long>(plan.baseline), static_cast<long long>(plan.total),
        plan.tile_bytes, plan.depth, operand.tile_count(), s.passes, solution.result.rel_error, s.seconds_waiting,
        s.seconds_reading, static_cast<long long>(util::peak_rss_bytes()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream_rss_probe: %s\n", e.what());
    return 1;
  }
}
