// Out-of-memory streaming against the resident run, in one process and one run (docs/benchmarks.md):
//   1. a dense matrix 8x the budget, file in the page cache: streamed vs resident seconds per iteration;
//   2. cold reads: the plain sequential read of the file against a streamed pass with drop-behind (every tile
//      read from the device), both after evicting the file from the page cache;
//   3. a sweep of tile size and ring depth.
//   bench_stream [--rows M] [--cols N] [--k K] [--algo mu] [--iters I] [--reps R] [--budget 128M]
//                [--file PATH] [--keep] [--no-sweep] [--no-cold] [--json out.json]
#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "dist/communicator.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "solvers/solve.hpp"
#include "stream/bytes.hpp"
#include "stream/npy_source.hpp"
#include "stream/planner.hpp"
#include "stream/process_memory.hpp"
#include "stream/read_file.hpp"
#include "stream/streamed_operand.hpp"
#include "util/memory.hpp"

namespace {

using namespace dnmf;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Args {
  index_t rows = 8192, cols = 16384, k = 16;  // 1 GiB of float64
  std::string algo = "mu";
  int iters = 5, reps = 3;
  std::string budget = "128M";
  std::string file = "/tmp/bench_stream.npy";
  bool keep = false, sweep = true, cold = true;
  std::string json_path;
};

// A planted rank-k matrix plus noise, written column by column as a Fortran-order float64 .npy (never held
// whole in memory).
void write_matrix(const Args& a) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> w(dnmf::to_size(a.rows * a.k)), col(dnmf::to_size(a.rows)), h(a.k);
  for (double& v : w) v = u(rng);
  std::string dict = "{'descr': '<f8', 'fortran_order': True, 'shape': (" + std::to_string(a.rows) + ", " +
                     std::to_string(a.cols) + "), }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((unpadded + 63) / 64 * 64 - unpadded, ' ');
  dict += '\n';
  std::ofstream out(a.file, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(dict.size() & 0xff), static_cast<char>(dict.size() >> 8)};
  out.write(len, 2);
  out << dict;
  for (index_t j = 0; j < a.cols; ++j) {
    for (double& v : h) v = u(rng);
    for (index_t i = 0; i < a.rows; ++i) {
      double s = 0.01 * u(rng);
      for (index_t l = 0; l < a.k; ++l) s += w[dnmf::to_size(i + l * a.rows)] * h[dnmf::to_size(l)];
      col[dnmf::to_size(i)] = s;
    }
    out.write(reinterpret_cast<const char*>(col.data()), static_cast<std::streamsize>(col.size() * 8));
  }
  if (!out) throw Error(a.file + ": write failed");
}

// A plain sequential read of the whole file in 8 MiB preads: bytes per second.
double sequential_read(const std::string& path) {
  const stream::ReadFile file(path);
  file.advise_sequential();
  std::vector<char> buffer(std::size_t{8} << 20);
  const auto t0 = Clock::now();
  for (std::uint64_t at = 0; at < file.size(); at += buffer.size())
    file.read(at, buffer.data(), dnmf::to_size(std::min<std::uint64_t>(buffer.size(), file.size() - at)));
  return static_cast<double>(file.size()) / since(t0);
}

struct Timing {
  double seconds_per_iter = 1e300;  // the fastest iteration of the run (noise on a shared machine only adds)
  double mean_seconds_per_iter = 0;
  double rel_error = 0;
  backend::OperandStats stats;
};

FactorOptions options_for(const Args& a) {
  FactorOptions o;
  o.rank = a.k;
  o.algorithm = parse_algorithm(a.algo);
  o.max_iterations = a.iters;
  o.tol = 0;
  o.seed = 3;
  return o;
}

Timing run(backend::Operand<double>& op, const Args& a) {
  backend::CpuKernels<double> kernels, host;
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, op.rows(), op.cols());
  Timing t;
  const backend::OperandStats before = op.operand_stats();
  FactorOptions options = options_for(a);
  double last = 0;
  options.progress = [&](const IterationInfo& info) {
    t.seconds_per_iter = std::min(t.seconds_per_iter, info.seconds - last);
    last = info.seconds;
  };
  const auto s = solvers::solve<double>(kernels, host, op, nullptr, grid, layout, options);
  t.mean_seconds_per_iter = s.result.seconds / std::max(s.result.iterations, 1);
  t.rel_error = s.result.rel_error;
  const backend::OperandStats after = op.operand_stats();
  t.stats = {after.passes - before.passes, after.tiles - before.tiles, after.bytes_read - before.bytes_read,
             after.seconds_waiting - before.seconds_waiting, after.seconds_reading - before.seconds_reading};
  return t;
}

stream::Plan plan_for(const Args& a, const stream::NpySource<double>& source) {
  stream::PlanInput in;
  in.layout = dist::make_layout(dist::GridShape{1, 1}, 0, 0, a.rows, a.cols);
  in.stored = a.rows * a.cols;
  in.rank = a.k;
  in.algorithm = parse_algorithm(a.algo);
  in.threads = omp_get_max_threads();
  in.budget = stream::parse_bytes(a.budget);
  in.baseline = stream::current_rss_bytes();
  in.min_tile_bytes = source.min_tile_bytes();
  in.staging_bytes = source.staging_bytes();
  return stream::plan_memory(in);
}

Timing streamed(const Args& a, std::size_t tile, int depth, int reps, bool drop_behind = false,
                stream::NpyAccess access = stream::NpyAccess::automatic) {
  Timing best;
  for (int r = 0; r < reps; ++r) {
    auto source =
        std::make_unique<stream::NpySource<double>>(a.file, dist::Range{0, a.rows}, dist::Range{0, a.cols}, access);
    source->set_drop_behind(drop_behind);
    backend::CpuKernels<double> kernels;
    stream::StreamedOperand<double> op(kernels, std::move(source), tile, depth);
    const Timing t = run(op, a);
    if (t.seconds_per_iter < best.seconds_per_iter) best = t;
  }
  return best;
}

int main_(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--rows")
      a.rows = std::stoll(next());
    else if (arg == "--cols")
      a.cols = std::stoll(next());
    else if (arg == "--k")
      a.k = std::stoll(next());
    else if (arg == "--algo")
      a.algo = next();
    else if (arg == "--iters")
      a.iters = std::stoi(next());
    else if (arg == "--reps")
      a.reps = std::stoi(next());
    else if (arg == "--budget")
      a.budget = next();
    else if (arg == "--file")
      a.file = next();
    else if (arg == "--keep")
      a.keep = true;
    else if (arg == "--no-sweep")
      a.sweep = false;
    else if (arg == "--no-cold")
      a.cold = false;
    else if (arg == "--json")
      a.json_path = next();
    else
      throw Error("unknown argument " + arg);
  }
  json out;
  const double a_bytes = static_cast<double>(a.rows * a.cols) * 8;
  const std::int64_t budget = stream::parse_bytes(a.budget);
  std::printf("matrix %lld x %lld float64 = %s, budget %s (%.1fx), k=%lld, %s, %d iterations, %d threads\n",
              static_cast<long long>(a.rows), static_cast<long long>(a.cols), stream::human_bytes(a_bytes).c_str(),
              stream::human_bytes(static_cast<double>(budget)).c_str(), a_bytes / static_cast<double>(budget),
              static_cast<long long>(a.k), a.algo.c_str(), a.iters, omp_get_max_threads());
  bool made = false;
  if (!std::filesystem::exists(a.file) || std::filesystem::file_size(a.file) < static_cast<std::uintmax_t>(a_bytes)) {
    const auto t0 = Clock::now();
    write_matrix(a);
    made = true;
    std::printf("wrote %s in %.1f s\n", a.file.c_str(), since(t0));
  }
  out["matrix"] = {{"rows", a.rows},
                   {"cols", a.cols},
                   {"bytes", a_bytes},
                   {"k", a.k},
                   {"algo", a.algo},
                   {"iterations", a.iters},
                   {"threads", omp_get_max_threads()},
                   {"budget", budget}};

  // 1. Warm: streamed (planned by the budget) first, so the peak RSS read after it is the streamed run's.
  const double warm_read = sequential_read(a.file);  // also brings the file into the page cache
  const stream::Plan plan = plan_for(a, stream::NpySource<double>(a.file, {0, a.rows}, {0, a.cols}));
  if (!plan.streamed) throw Error("the budget holds the whole matrix: nothing to stream");
  Timing s = streamed(a, plan.tile_bytes, plan.depth, 1);
  const double streamed_peak = static_cast<double>(util::peak_rss_bytes());
  Timing r, copied;  // copied: the same stream with pread into the slots instead of mapped tiles
  double load_seconds = 0;
  {
    const auto t0 = Clock::now();
    const DenseMatrix<double> whole = io::read_npy<double>(a.file);
    load_seconds = since(t0);
    backend::CpuKernels<double> kernels;
    // Interleaved, so that both see the same spells of load from the machine's other users.
    for (int rep = 0; rep < a.reps; ++rep) {
      backend::ResidentOperand<double> op(kernels, MatrixRef<double>{whole.view()});
      const Timing t = run(op, a);
      if (t.seconds_per_iter < r.seconds_per_iter) r = t;
      const Timing u = streamed(a, plan.tile_bytes, plan.depth, 1);
      if (u.seconds_per_iter < s.seconds_per_iter) s = u;
      const Timing c = streamed(a, plan.tile_bytes, plan.depth, 1, false, stream::NpyAccess::read);
      if (c.seconds_per_iter < copied.seconds_per_iter) copied = c;
    }
  }
  const double ratio = s.seconds_per_iter / r.seconds_per_iter;
  const double passes = static_cast<double>(s.stats.passes);
  std::printf("\npage cache (sequential read %.2f GB/s)\n", warm_read / 1e9);
  std::printf("  %-34s %10s %10s %10s %12s %12s\n", "run", "s/iter", "mean", "ratio", "wait s/pass", "read s/pass");
  std::printf("  %-34s %10.4f %10.4f %10s %12s %12s\n", "resident", r.seconds_per_iter, r.mean_seconds_per_iter, "1.00",
              "-", "-");
  std::printf("  %-34s %10.4f %10.4f %10.3f %12.4f %12.4f\n",
              ("streamed (tile " + stream::human_bytes(static_cast<double>(plan.tile_bytes)) + ", depth " +
               std::to_string(plan.depth) + ")")
                  .c_str(),
              s.seconds_per_iter, s.mean_seconds_per_iter, ratio, s.stats.seconds_waiting / passes,
              s.stats.seconds_reading / passes);
  const double copied_passes = static_cast<double>(copied.stats.passes);
  std::printf("  %-34s %10.4f %10.4f %10.3f %12.4f %12.4f\n", "streamed, pread into slots", copied.seconds_per_iter,
              copied.mean_seconds_per_iter, copied.seconds_per_iter / r.seconds_per_iter,
              copied.stats.seconds_waiting / copied_passes, copied.stats.seconds_reading / copied_passes);
  std::printf("  streamed peak RSS %s for a budget of %s (planned %s); resident load %.2f s\n",
              stream::human_bytes(streamed_peak).c_str(), stream::human_bytes(static_cast<double>(budget)).c_str(),
              stream::human_bytes(static_cast<double>(plan.total)).c_str(), load_seconds);
  out["warm"] = {{"sequential_read_bytes_per_s", warm_read},
                 {"resident_s_per_iter", r.seconds_per_iter},
                 {"streamed_s_per_iter", s.seconds_per_iter},
                 {"resident_mean_s_per_iter", r.mean_seconds_per_iter},
                 {"streamed_mean_s_per_iter", s.mean_seconds_per_iter},
                 {"ratio", ratio},
                 {"tile_bytes", plan.tile_bytes},
                 {"depth", plan.depth},
                 {"streamed_seconds_waiting_per_pass", s.stats.seconds_waiting / passes},
                 {"streamed_seconds_reading_per_pass", s.stats.seconds_reading / passes},
                 {"streamed_pread_s_per_iter", copied.seconds_per_iter},
                 {"streamed_pread_ratio", copied.seconds_per_iter / r.seconds_per_iter},
                 {"streamed_pread_seconds_reading_per_pass", copied.stats.seconds_reading / copied_passes},
                 {"streamed_peak_rss", streamed_peak},
                 {"planned_total", plan.total},
                 {"rel_error_resident", r.rel_error},
                 {"rel_error_streamed", s.rel_error}};

  // 2. Cold: the device's sequential rate against a streamed run that reads every tile from the device.
  if (a.cold) {
    if (!stream::evict_from_page_cache(a.file))
      std::printf("\n(cannot evict the file: cold figures skipped)\n");
    else {
      const double cold_read = sequential_read(a.file);
      stream::evict_from_page_cache(a.file);
      const Timing c = streamed(a, plan.tile_bytes, plan.depth, 1, true);
      const double cold_passes = static_cast<double>(c.stats.passes);
      const double achieved = c.stats.bytes_read / c.stats.seconds_reading;
      const double pass_seconds = c.seconds_per_iter;  // one fused pass per iteration
      std::printf("\ncold (drop-behind: every pass reads the device)\n");
      std::printf("  plain sequential read     %8.3f GB/s\n", cold_read / 1e9);
      std::printf("  streamed, producer reads  %8.3f GB/s (%.0f%% of sequential)\n", achieved / 1e9,
                  100 * achieved / cold_read);
      std::printf("  streamed, per iteration   %8.3f GB/s end to end (%.3f s/iter, waiting %.3f s/pass)\n",
                  a_bytes / pass_seconds / 1e9, pass_seconds, c.stats.seconds_waiting / cold_passes);
      out["cold"] = {{"sequential_read_bytes_per_s", cold_read},
                     {"streamed_read_bytes_per_s", achieved},
                     {"streamed_s_per_iter", pass_seconds},
                     {"streamed_seconds_waiting_per_pass", c.stats.seconds_waiting / cold_passes}};
    }
  }

  // 3. Tile size and depth.
  if (a.sweep) {
    std::printf("\nsweep (page cache)\n  %-12s %6s %10s %10s %12s\n", "tile", "depth", "s/iter", "ratio",
                "wait s/pass");
    json rows = json::array();
    Args quick = a;
    quick.iters = std::max(2, a.iters / 2);
    sequential_read(a.file);
    for (const std::size_t mib : {4, 16, 64})
      for (const int depth : {2, 3, 4}) {
        const std::size_t tile = std::max<std::size_t>(mib << 20, dnmf::to_size(a.rows) * 8);
        const Timing t = streamed(quick, tile, depth, std::max(1, a.reps - 1));
        const double p = static_cast<double>(t.stats.passes);
        std::printf("  %-12s %6d %10.4f %10.3f %12.4f\n", stream::human_bytes(static_cast<double>(tile)).c_str(), depth,
                    t.seconds_per_iter, t.seconds_per_iter / r.seconds_per_iter, t.stats.seconds_waiting / p);
        rows.push_back({{"tile_bytes", tile},
                        {"depth", depth},
                        {"s_per_iter", t.seconds_per_iter},
                        {"ratio", t.seconds_per_iter / r.seconds_per_iter},
                        {"seconds_waiting_per_pass", t.stats.seconds_waiting / p}});
      }
    out["sweep"] = rows;
  }
  if (!a.json_path.empty()) std::ofstream(a.json_path) << out.dump(2) << "\n";
  if (made && !a.keep) std::filesystem::remove(a.file);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_stream: %s\n", e.what());
    return 1;
  }
}
