// One run, one table: seconds per iteration of every solver next to the two plain products WᵀA and AHᵀ
// on the same matrix, so every ratio printed is measured on the same machine in the same run.
//   bench_iteration [--quick] [--threads N] [--reps R] [--json out.json]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/index.hpp"
#include "dnmf/planted.hpp"

namespace {

using dnmf::index_t;
using Clock = std::chrono::steady_clock;

double best_of(int reps, const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// STREAM-style copy bandwidth (bytes read + bytes written per second) of a buffer far larger than cache.
double copy_bandwidth(int reps) {
  const std::size_t bytes = std::size_t{1} << 30;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  const double s = best_of(reps, [&] {
    const std::size_t chunk = bytes / dnmf::to_size(omp_get_max_threads());
#pragma omp parallel for
    for (int t = 0; t < omp_get_max_threads(); ++t) std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk);
  });
  return 2.0 * static_cast<double>(bytes) / s;
}

struct Row {
  std::string workload, what;
  double seconds_per_iter = 0, gflops = 0, ratio = 0, bytes_per_s = 0;
};

template <class T>
std::vector<Row> run_workload(const std::string& name, const dnmf::PlantedOptions& po, index_t k, int iters, int reps,
                              double copy_bw) {
  const auto planted = dnmf::make_planted<T>(po);
  const dnmf::MatrixRef<T> a = planted.matrix();
  const index_t m = po.rows, n = po.cols;
  const double nnz = planted.sparse ? static_cast<double>(planted.csr.nnz()) : static_cast<double>(m) * n;
  const double flops = 4.0 * nnz * static_cast<double>(k);  // the two products with A per iteration
  const double a_bytes =
      planted.sparse ? nnz * (sizeof(T) + sizeof(dnmf::col_index_t)) + (m + 1.0) * sizeof(index_t) : nnz * sizeof(T);
  std::vector<Row> rows;

  // The two plain products, as a two-pass iteration would issue them.
  dnmf::backend::CpuKernels<T> cpu;
  dnmf::DenseMatrix<T> wt(k, m, T(0.5)), h(k, n, T(0.5)), p(k, n), qt(k, m);
  const double products = best_of(reps * 3, [&] {
    cpu.multiply(a, dnmf::backend::Side::H, wt.view(), p.view(), T(0));
    cpu.multiply(a, dnmf::backend::Side::W, h.view(), qt.view(), T(0));
  });
  rows.push_back({name, "WtA + AHt", products, flops / products / 1e9, 1.0, 2 * a_bytes / products});

  for (auto algo : {dnmf::Algorithm::mu, dnmf::Algorithm::kl, dnmf::Algorithm::hals, dnmf::Algorithm::bpp})
    for (bool fused : {true, false}) {
      if (!fused && algo != dnmf::Algorithm::mu) continue;
      dnmf::FactorOptions o;
      o.rank = k;
      o.algorithm = algo;
      o.max_iterations = iters;
      o.tol = 0;
      o.fused = fused;
      double best = 1e300;
      for (int r = 0; r < reps; ++r) {
        const auto res = dnmf::factorize<T>(a, o);
        best = std::min(best, res.seconds / res.iterations);
      }
      const double passes = fused ? 1.0 : 2.0;
      rows.push_back({name, dnmf::to_string(algo) + (fused ? " (fused)" : " (two-pass)"), best, flops / best / 1e9,
                      best / products, passes * a_bytes / best});
    }
  std::printf("  %s done: copy bandwidth %.1f GB/s\n", name.c_str(), copy_bw / 1e9);
  return rows;
}

int run(int argc, char** argv) {
  bool quick = false;
  int threads = 2, reps = 5;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick")
      quick = true;
    else if (arg == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (arg == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (arg == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_iteration [--quick] [--threads N] [--reps R] [--json FILE]\n");
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const int iters = quick ? 5 : 20;
  const double copy_bw = copy_bandwidth(reps);
  const index_t scale = quick ? 4 : 1;
  std::vector<Row> rows;
  const dnmf::PlantedOptions dense{
      .rows = 4000 / scale, .cols = 3000 / scale, .rank = 10, .density = 1.0, .noise = 0.01, .seed = 1};
  const dnmf::PlantedOptions sparse{
      .rows = 20000 / scale, .cols = 10000 / scale, .rank = 10, .density = 0.005, .noise = 0.01, .seed = 1};
  for (auto& r : run_workload<double>("dense f64 " + std::to_string(dense.rows) + "x" + std::to_string(dense.cols),
                                      dense, 16, iters, reps, copy_bw))
    rows.push_back(r);
  for (auto& r : run_workload<float>("dense f32 " + std::to_string(dense.rows) + "x" + std::to_string(dense.cols),
                                     dense, 16, iters, reps, copy_bw))
    rows.push_back(r);
  for (auto& r : run_workload<double>("sparse f64 " + std::to_string(sparse.rows) + "x" + std::to_string(sparse.cols),
                                      sparse, 16, iters, reps, copy_bw))
    rows.push_back(r);

  std::printf("\nthreads=%d  k=16  copy bandwidth (read+write) %.2f GB/s\n", threads, copy_bw / 1e9);
  std::printf("%-24s %-18s %12s %10s %16s %14s %12s\n", "workload", "what", "s/iter", "GFLOP/s", "iter/(2 prod)",
              "A bytes/s", "of copy bw");
  nlohmann::json out = {
      {"threads", threads}, {"k", 16}, {"copy_bandwidth_bytes_per_s", copy_bw}, {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    std::printf("%-24s %-18s %12.5f %10.2f %16.3f %12.2e %11.1f%%\n", r.workload.c_str(), r.what.c_str(),
                r.seconds_per_iter, r.gflops, r.ratio, r.bytes_per_s, 100.0 * r.bytes_per_s / copy_bw);
    out["rows"].push_back({{"workload", r.workload},
                           {"what", r.what},
                           {"seconds_per_iteration", r.seconds_per_iter},
                           {"gflops", r.gflops},
                           {"ratio_to_two_products", r.ratio},
                           {"a_bytes_per_s", r.bytes_per_s},
                           {"fraction_of_copy_bandwidth", r.bytes_per_s / copy_bw}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_iteration: error: %s\n", e.what());
    return 1;
  }
}
