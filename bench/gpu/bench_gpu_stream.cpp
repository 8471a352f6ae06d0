// bench_gpu_stream: the CUDA streamed mode on one GPU (DESIGN §5, §8), all figures from one run.
//   bench_gpu_stream [--quick] [--a-gib G] [--budget-gib B] [--k K] [--iters N] [--tiles-mib 16,64,256]
//                    [--depths 2,3,4] [--no-file] [--json FILE] [--timeline FILE]
// - pinned host-to-device bandwidth at several copy sizes (the bus the stream is bound by);
// - dense f32 MU with A = G GiB in host memory and the device budget forced to B GiB (default 4 and 1): seconds
//   per iteration for every tile size x ring depth that fits the budget, plus the planner's own choice, each
//   against the bound bytes(A) / H2D bandwidth (the target is a ratio <= 1.15);
// - device memory the run used (cudaMemGetInfo during the iterations) against the budget;
// - the per-tile event timeline of one fused pass at the best configuration, summarised (copy/compute overlap);
// - the composed path (disk -> pinned host ring -> device) from an .npy file of the same A, best configuration.
// Prints a table last; --json writes every figure, --timeline the per-tile intervals (CSV).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cuda/check.hpp"
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_memory.hpp"
#include "backend/cuda/streamed_cuda.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "gpu_ceilings.hpp"
#include "solvers/solve.hpp"
#include "solvers/update_rule.hpp"
#include "synthetic.hpp"

namespace {

using dnmf::index_t;
using Json = nlohmann::json;
using T = float;
namespace cuda = dnmf::backend::cuda;
namespace stream = dnmf::stream;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

struct Config {
  bool quick = false;
  double a_gib = 4;
  double budget_gib = 1;
  index_t k = 16;
  int iters = 6;
  std::vector<int> tiles_mib{16, 64, 256};
  std::vector<int> depths{2, 3, 4};
  bool file = true;
  std::string json_path, timeline_path;
};

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

bool parse(int argc, char** argv, Config& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      c.quick = true;
      c.a_gib = 0.5;
      c.budget_gib = 0.25;
      c.tiles_mib = {8, 32};
      c.depths = {2, 3};
    } else if (arg == "--a-gib" && has_value) {
      c.a_gib = std::atof(argv[++i]);
    } else if (arg == "--budget-gib" && has_value) {
      c.budget_gib = std::atof(argv[++i]);
    } else if (arg == "--k" && has_value) {
      c.k = std::atoi(argv[++i]);
    } else if (arg == "--iters" && has_value) {
      c.iters = std::atoi(argv[++i]);
    } else if (arg == "--tiles-mib" && has_value) {
      c.tiles_mib = parse_list(argv[++i]);
    } else if (arg == "--depths" && has_value) {
      c.depths = parse_list(argv[++i]);
    } else if (arg == "--no-file") {
      c.file = false;
    } else if (arg == "--json" && has_value) {
      c.json_path = argv[++i];
    } else if (arg == "--timeline" && has_value) {
      c.timeline_path = argv[++i];
    } else {
      return false;
    }
  }
  return c.a_gib > 0 && c.budget_gib > 0 && c.k >= 1 && c.iters >= 3 && !c.tiles_mib.empty() && !c.depths.empty();
}

// Seconds per MU iteration of a solve on `a` (best and median after two warm-up iterations), and the device
// memory in use during the iterations (least free memory seen, against `free_before`).
struct Run {
  double best = 0, median = 0;
  std::int64_t device_used = 0;
  long long passes = 0;
};

Run time_solve(dnmf::backend::CudaKernels<T>& gpu, dnmf::backend::Operand<T>& a, index_t k, int iters,
               std::int64_t free_before) {
  dnmf::backend::CpuKernels<T> host;
  dnmf::dist::SingleCommunicator self;
  const dnmf::dist::Grid grid(self, {1, 1});
  const dnmf::dist::Layout layout = dnmf::dist::make_layout(grid, a.rows(), a.cols());
  dnmf::FactorOptions o;
  o.rank = k;
  o.algorithm = dnmf::Algorithm::mu;
  o.max_iterations = iters + 2;
  o.tol = 0;
  o.seed = 1;
  std::vector<double> stamps;
  std::int64_t least_free = free_before;
  o.progress = [&](const dnmf::IterationInfo& info) {
    stamps.push_back(info.seconds);
    least_free = std::min(least_free, cuda::query_device_memory().free);
  };
  (void)dnmf::solvers::solve<T>(gpu, host, a, nullptr, grid, layout, o);
  std::vector<double> per_iter;
  for (std::size_t i = 2; i < stamps.size(); ++i) per_iter.push_back(stamps[i] - stamps[i - 1]);
  std::sort(per_iter.begin(), per_iter.end());
  return {per_iter.front(), per_iter[per_iter.size() / 2], free_before - least_free, a.operand_stats().passes};
}

// One fused MU pass over the streamed A with the per-tile events on: the timeline of the configuration.
stream::Timeline fused_pass_timeline(dnmf::backend::CudaKernels<T>& gpu, stream::DeviceStreamedOperand<T>& a,
                                     index_t k) {
  const index_t m = a.rows(), n = a.cols();
  T* x = gpu.allocate(dnmf::to_size(k * n));
  T* y = gpu.allocate(dnmf::to_size(k * m));
  T* gy = gpu.allocate(dnmf::to_size(k * k));
  T* other = gpu.allocate(dnmf::to_size(k * m));
  T* gx = gpu.allocate(dnmf::to_size(k * k));
  gpu.fill({x, k, n, k}, T(1));
  gpu.fill({y, k, m, k}, T(1e-3));
  gpu.fill({gy, k, k, k}, T(1));
  const dnmf::backend::UpdateRule rule = dnmf::solvers::update_rule(dnmf::Algorithm::mu, 1e-12, 0, 0);
  a.set_timeline(true);
  (void)a.fused_pass(dnmf::backend::Side::H, rule, {x, k, n, k}, {y, k, m, k}, {gy, k, k, k}, nullptr, {other, k, m, k},
                     {gx, k, k, k});
  stream::Timeline t = a.timeline();
  a.set_timeline(false);
  for (T* p : {x, y, gy, other, gx}) gpu.deallocate(p);
  return t;
}

Json summary_json(const stream::OverlapSummary& s) {
  return {{"tiles", s.tiles},
          {"wall_seconds", s.wall},
          {"copy_busy_seconds", s.copy_busy},
          {"compute_busy_seconds", s.compute_busy},
          {"overlapped_seconds", s.overlapped},
          {"overlap_fraction", s.overlap_fraction},
          {"copy_utilisation", s.copy_utilisation},
          {"copy_bytes_per_s", s.copy_bandwidth}};
}

struct Row {
  std::string what;
  double tile_mib = 0;
  int depth = 0;
  Run run;
  double ratio = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Config c;
  if (!parse(argc, argv, c)) {
    std::fprintf(stderr,
                 "usage: bench_gpu_stream [--quick] [--a-gib G] [--budget-gib B] [--k K] [--iters N >= 3] "
                 "[--tiles-mib LIST] [--depths LIST] [--no-file] [--json FILE] [--timeline FILE]\n");
    return 2;
  }
  std::string why;
  if (!dnmf::backend::backend_available(dnmf::BackendKind::cuda, &why)) {
    std::fprintf(stderr, "bench_gpu_stream: the cuda backend cannot run here: %s\n", why.c_str());
    return 2;
  }
  try {
    const auto t_start = std::chrono::steady_clock::now();
    const std::string device = dnmf::bench::device_description();
    Json out = {{"device", device}, {"quick", c.quick}, {"precision", "f32"}, {"k", c.k}};

    // The bus: pinned host-to-device copies of several sizes, in this run.
    double h2d = 0;
    for (const double mib : {4.0, 16.0, 64.0, 256.0, 1024.0}) {
      const double bw = dnmf::bench::pinned_h2d_bandwidth(static_cast<std::size_t>(mib * kMiB), 5);
      out["pinned_h2d_bytes_per_s"][std::to_string(static_cast<int>(mib)) + "MiB"] = bw;
      h2d = std::max(h2d, bw);
      std::fprintf(stderr, "pinned H2D %6.0f MiB: %.1f GB/s\n", mib, bw / 1e9);
    }
    out["h2d_bytes_per_s"] = h2d;

    // A: square f32, c.a_gib GiB, in host memory, registered once (the operands find it page-locked).
    const auto side = static_cast<index_t>(std::sqrt(c.a_gib * kGiB / sizeof(T)));
    const index_t m = side, n = side;
    const auto a = dnmf::bench::random_dense<T>(m, n, 7);
    const double a_bytes = static_cast<double>(m) * static_cast<double>(n) * sizeof(T);
    const double bound = a_bytes / h2d;  // seconds per pass the bus allows
    DNMF_CUDA_CHECK(cudaHostRegister(const_cast<T*>(a.data()), static_cast<std::size_t>(a_bytes), 0));
    const auto budget = static_cast<std::int64_t>(c.budget_gib * kGiB);
    out["a"] = {{"m", m}, {"n", n}, {"bytes", a_bytes}};
    out["device_budget_bytes"] = budget;
    out["bound_seconds_per_pass"] = bound;
    std::fprintf(stderr, "A %lldx%lld f32 (%.2f GiB), device budget %.2f GiB, bound %.4f s/pass\n",
                 static_cast<long long>(m), static_cast<long long>(n), a_bytes / kGiB, c.budget_gib, bound);

    dnmf::backend::CudaKernels<T> gpu;
    const std::int64_t free_before = cuda::query_device_memory().free;
    stream::DevicePlanInput in;
    in.layout = dnmf::dist::make_layout(dnmf::dist::GridShape{1, 1}, 0, 0, m, n);
    in.stored = m * n;
    in.scalar_bytes = sizeof(T);
    in.rank = c.k;
    in.budget = budget;
    in.min_tile_bytes = dnmf::to_size(m) * sizeof(T);
    const stream::DevicePlan plan = stream::plan_device(in);
    out["plan"] = {{"streamed", plan.streamed},     {"tile_bytes", plan.tile_bytes},
                   {"depth", plan.depth},           {"total_bytes", plan.total},
                   {"ring_bytes", plan.ring},       {"factors_bytes", plan.factors},
                   {"reserve_bytes", plan.reserve}, {"minimum_budget", plan.minimum_budget}};
    const std::int64_t beside_ring = plan.reserve + plan.factors + plan.workspace;

    std::vector<Row> rows;
    auto measure = [&](const std::string& what, std::size_t tile, int depth) {
      auto op = cuda::open_streamed_cuda<T>(gpu, a.view(), tile, depth);
      Row r{what, static_cast<double>(tile) / kMiB, depth, time_solve(gpu, *op, c.k, c.iters, free_before), 0};
      r.ratio = r.run.best / bound;
      out["configs"].push_back({{"what", what},
                                {"tile_bytes", tile},
                                {"depth", depth},
                                {"tiles", op->tile_count()},
                                {"seconds_per_iteration", r.run.best},
                                {"median_seconds_per_iteration", r.run.median},
                                {"ratio_to_bound", r.ratio},
                                {"device_bytes_used", r.run.device_used},
                                {"passes", r.run.passes}});
      std::fprintf(stderr, "%-8s tile %6.1f MiB depth %d: %.4f s/iter (median %.4f), %.3f x bound, device %.0f MiB\n",
                   what.c_str(), r.tile_mib, depth, r.run.best, r.run.median, r.ratio, r.run.device_used / kMiB);
      rows.push_back(r);
    };
    if (plan.streamed) measure("planned", plan.tile_bytes, plan.depth);
    for (const int mib : c.tiles_mib)
      for (const int depth : c.depths) {
        const auto tile = dnmf::to_size(mib) << 20;
        if (beside_ring + static_cast<std::int64_t>(tile) * depth > budget) {
          out["skipped"].push_back({{"tile_bytes", tile}, {"depth", depth}, {"why", "over the device budget"}});
          continue;
        }
        measure("sweep", tile, depth);
      }
    const Row best =
        *std::min_element(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.run.best < y.run.best; });
    out["best"] = {{"tile_bytes", best.tile_mib * kMiB},
                   {"depth", best.depth},
                   {"seconds_per_iteration", best.run.best},
                   {"ratio_to_bound", best.ratio}};

    // The timeline of one fused pass at the best configuration.
    {
      auto op = cuda::open_streamed_cuda<T>(gpu, a.view(), static_cast<std::size_t>(best.tile_mib * kMiB), best.depth);
      (void)fused_pass_timeline(gpu, *op, c.k);  // warm-up
      const stream::Timeline t = fused_pass_timeline(gpu, *op, c.k);
      const stream::OverlapSummary s = stream::summarise(t);
      out["timeline"] = summary_json(s);
      out["timeline"]["tile_bytes"] = best.tile_mib * kMiB;
      out["timeline"]["depth"] = best.depth;
      std::fprintf(stderr,
                   "timeline: %zu tiles, wall %.4f s, copy busy %.4f s (%.1f%%), compute busy %.4f s, "
                   "overlap %.2f, copies at %.1f GB/s\n",
                   s.tiles, s.wall, s.copy_busy, 100 * s.copy_utilisation, s.compute_busy, s.overlap_fraction,
                   s.copy_bandwidth / 1e9);
      if (!c.timeline_path.empty()) {
        std::ofstream csv(c.timeline_path);
        csv << "tile,copy_start,copy_end,compute_start,compute_end\n";
        for (std::size_t i = 0; i < t.tiles.size(); ++i)
          csv << i << "," << t.tiles[i].copy_start << "," << t.tiles[i].copy_end << "," << t.tiles[i].compute_start
              << "," << t.tiles[i].compute_end << "\n";
      }
    }
    DNMF_CUDA_CHECK(cudaHostUnregister(const_cast<T*>(a.data())));

    // Disk -> pinned host ring -> device: the same A from an .npy file (page cache warm after the write).
    Row composed;
    if (c.file) {
      const std::filesystem::path file = std::filesystem::temp_directory_path() / "dnmf_bench_gpu_stream.npy";
      const auto w0 = std::chrono::steady_clock::now();
      dnmf::io::write_npy<T>(file.string(), a.view());
      const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      auto op = cuda::open_streamed_cuda<T>(gpu, file.string(), {0, m}, {0, n},
                                            static_cast<std::size_t>(best.tile_mib * kMiB), best.depth);
      composed = {"file", best.tile_mib, best.depth, time_solve(gpu, *op, c.k, 3, free_before), 0};
      composed.ratio = composed.run.best / bound;
      const auto st = op->operand_stats();
      out["file"] = {{"tile_bytes", best.tile_mib * kMiB},
                     {"depth", best.depth},
                     {"seconds_per_iteration", composed.run.best},
                     {"ratio_to_bound", composed.ratio},
                     {"write_seconds", write_s},
                     {"producer_seconds_reading", st.seconds_reading},
                     {"consumer_seconds_waiting", st.seconds_waiting},
                     {"passes", st.passes}};
      std::fprintf(stderr, "file: %.4f s/iter (%.3f x bound), producer read %.2f s, consumer waited %.2f s\n",
                   composed.run.best, composed.ratio, st.seconds_reading, st.seconds_waiting);
      op.reset();
      std::filesystem::remove(file);
    }
    out["seconds_total"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    if (!c.json_path.empty()) std::ofstream(c.json_path) << out.dump(2) << "\n";

    std::printf("\n%s\n", device.c_str());
    std::printf(
        "streamed dense MU, f32, A %lldx%lld = %.2f GiB, device budget %.2f GiB, k %lld; pinned H2D %.1f GB/s "
        "-> bound %.4f s/iter\n",
        static_cast<long long>(m), static_cast<long long>(n), a_bytes / kGiB, c.budget_gib, static_cast<long long>(c.k),
        h2d / 1e9, bound);
    std::printf("%-8s %10s %6s %12s %12s %10s %14s\n", "what", "tile MiB", "depth", "s/iter", "median", "/bound",
                "device MiB");
    for (const Row& r : rows)
      std::printf("%-8s %10.1f %6d %12.4e %12.4e %10.3f %14.0f\n", r.what.c_str(), r.tile_mib, r.depth, r.run.best,
                  r.run.median, r.ratio, r.run.device_used / kMiB);
    if (c.file)
      std::printf("%-8s %10.1f %6d %12.4e %12.4e %10.3f %14.0f\n", "file", composed.tile_mib, composed.depth,
                  composed.run.best, composed.run.median, composed.ratio, composed.run.device_used / kMiB);
    std::printf("best: tile %.0f MiB depth %d, %.3f x bound (target <= 1.15): %s\n", best.tile_mib, best.depth,
                best.ratio, best.ratio <= 1.15 ? "met" : "NOT met");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_stream: %s\n", e.what());
    return 1;
  }
  return 0;
}
