// bench_gpu: the cuda backend against the same GPU's own ceilings, all measured in one run (DESIGN §8).
//   bench_gpu [--quick] [--reps R] [--iters N] [--json FILE]
// - dense MU per iteration (4mnk flops) against cuBLAS alone on that iteration's two GEMM shapes;
// - sparse MU: bytes of CSR read per second (A is read twice per iteration) against device copy bandwidth;
// - pinned host-to-device bandwidth (what a streamed A would be fed at);
// - cpu against cuda seconds per iteration on one matrix.
// Per-iteration times come from factorize()'s progress callback (the iteration ends in a dot product that
// returns to the host, so each stamp follows the GPU's work); the best iteration after two warm-up ones.
// Prints a table last; --json writes the same figures.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cuda/cuda_kernels.hpp"
#include "backend/kernels.hpp"
#include "dnmf/factorize.hpp"
#include "gpu_ceilings.hpp"
#include "synthetic.hpp"

namespace {

using dnmf::index_t;
using Json = nlohmann::json;

struct Config {
  bool quick = false;
  int reps = 5;
  int iters = 20;
  std::string json_path;
};

// One line of the final table.
struct Row {
  std::string what, workload, precision;
  index_t k = 0;
  double seconds_per_iter = 0;
  double achieved = 0, ceiling = 0;  // in `unit`
  std::string unit;
};

template <class T>
const char* precision_name() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

std::string shape(index_t m, index_t n) { return std::to_string(m) + "x" + std::to_string(n); }

// Best and median seconds per MU iteration of factorize() on `backend`, warm-up iterations left out.
struct IterTimes {
  double best = 0, median = 0;
};
template <class T>
IterTimes time_mu(const dnmf::MatrixRef<T>& a, dnmf::BackendKind backend, index_t k, int iters) {
  dnmf::FactorOptions o;
  o.rank = k;
  o.algorithm = dnmf::Algorithm::mu;
  o.max_iterations = std::max(iters, 3);
  o.tol = 0;
  o.seed = 1;
  o.backend = backend;
  std::vector<double> stamps;
  o.progress = [&](const dnmf::IterationInfo& info) { stamps.push_back(info.seconds); };
  (void)dnmf::factorize<T>(a, o);
  std::vector<double> per_iter;
  for (std::size_t i = 2; i < stamps.size(); ++i) per_iter.push_back(stamps[i] - stamps[i - 1]);
  std::sort(per_iter.begin(), per_iter.end());
  return {per_iter.front(), per_iter[per_iter.size() / 2]};
}

template <class T>
void dense_mu(const Config& c, index_t m, index_t n, std::vector<Row>& rows, Json& out) {
  const auto a = dnmf::bench::random_dense<T>(m, n, 1);
  const dnmf::MatrixRef<T> host{a.view()};
  const index_t ranks[] = {16, 64};
  double cublas_s[std::size(ranks)] = {};
  {
    dnmf::backend::CudaKernels<T> gpu;  // holds the copy cuBLAS runs on alone; freed before factorize runs
    const auto resident = std::get<dnmf::DenseView<const T>>(gpu.make_resident(host));
    for (std::size_t r = 0; r < std::size(ranks); ++r)
      cublas_s[r] = dnmf::bench::cublas_mu_products_seconds<T>(resident.data, m, n, ranks[r], c.reps);
  }
  for (std::size_t r = 0; r < std::size(ranks); ++r) {
    const index_t k = ranks[r];
    const IterTimes t = time_mu(host, dnmf::BackendKind::cuda, k, c.iters);
    const double flops = 4.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    rows.push_back({"dense MU", shape(m, n), precision_name<T>(), k, t.best, flops / t.best / 1e9,
                    flops / cublas_s[r] / 1e9, "GFLOP/s"});
    out["dense_mu"].push_back({{"precision", precision_name<T>()},
                               {"m", m},
                               {"n", n},
                               {"k", k},
                               {"seconds_per_iteration", t.best},
                               {"median_seconds_per_iteration", t.median},
                               {"gflops", flops / t.best / 1e9},
                               {"cublas_products_seconds", cublas_s[r]},
                               {"cublas_gflops", flops / cublas_s[r] / 1e9},
                               {"ratio_to_cublas", cublas_s[r] / t.best}});
    std::fprintf(stderr, "dense MU %s %s k=%lld: %.3g s/iter, cuBLAS products %.3g s\n", precision_name<T>(),
                 shape(m, n).c_str(), static_cast<long long>(k), t.best, cublas_s[r]);
  }
}

template <class T>
void sparse_mu(const Config& c, index_t m, index_t n, double density, double copy_bw, std::vector<Row>& rows,
               Json& out) {
  const index_t k = 16;
  const auto a = dnmf::bench::random_csr<T>(m, n, density, 2);
  const IterTimes t = time_mu(dnmf::MatrixRef<T>{a.view()}, dnmf::BackendKind::cuda, k, c.iters);
  // Each of the two SpMMs of an iteration reads A once: values, 32-bit column indices, 32-bit row offsets.
  const double nnz = static_cast<double>(a.nnz());
  const double a_bytes = nnz * (sizeof(T) + sizeof(std::int32_t)) + static_cast<double>(m + 1) * sizeof(std::int32_t);
  const double bytes_per_s = 2.0 * a_bytes / t.best;
  rows.push_back({"sparse MU", shape(m, n) + " nnz " + std::to_string(a.nnz()), precision_name<T>(), k, t.best,
                  bytes_per_s / 1e9, copy_bw / 1e9, "GB/s"});
  out["sparse_mu"].push_back({{"precision", precision_name<T>()},
                              {"m", m},
                              {"n", n},
                              {"nnz", a.nnz()},
                              {"k", k},
                              {"seconds_per_iteration", t.best},
                              {"median_seconds_per_iteration", t.median},
                              {"csr_bytes_per_iteration", 2.0 * a_bytes},
                              {"csr_bytes_per_s", bytes_per_s},
                              {"gflops", 4.0 * nnz * k / t.best / 1e9},
                              {"ratio_to_device_copy_bandwidth", bytes_per_s / copy_bw}});
  std::fprintf(stderr, "sparse MU %s %s: %.3g s/iter\n", precision_name<T>(), shape(m, n).c_str(), t.best);
}

template <class T>
void cpu_vs_gpu(const Config& c, index_t m, index_t n, std::vector<Row>& rows, Json& out) {
  const index_t k = 16;
  const auto a = dnmf::bench::random_dense<T>(m, n, 3);
  const dnmf::MatrixRef<T> host{a.view()};
  const IterTimes cpu = time_mu(host, dnmf::BackendKind::cpu, k, c.iters);
  const IterTimes gpu = time_mu(host, dnmf::BackendKind::cuda, k, c.iters);
  rows.push_back({"cpu / cuda MU", shape(m, n), precision_name<T>(), k, gpu.best, cpu.best, gpu.best, "s/iter"});
  out["cpu_vs_gpu"].push_back({{"precision", precision_name<T>()},
                               {"m", m},
                               {"n", n},
                               {"k", k},
                               {"cpu_threads", omp_get_max_threads()},
                               {"cpu_seconds_per_iteration", cpu.best},
                               {"gpu_seconds_per_iteration", gpu.best},
                               {"speedup", cpu.best / gpu.best}});
  std::fprintf(stderr, "cpu vs cuda %s %s: %.3g vs %.3g s/iter\n", precision_name<T>(), shape(m, n).c_str(), cpu.best,
               gpu.best);
}

void print_table(const std::string& device, double copy_bw, double h2d, const std::vector<Row>& rows) {
  std::printf("\n%s\n", device.c_str());
  std::printf("device copy bandwidth (read+write) %.1f GB/s, pinned host-to-device %.1f GB/s\n", copy_bw / 1e9,
              h2d / 1e9);
  std::printf("%-14s %-30s %-5s %4s %12s %14s %14s %8s\n", "what", "workload", "prec", "k", "s/iter", "achieved",
              "ceiling", "ratio");
  for (const Row& r : rows) {
    // cpu / cuda rows: achieved = cpu s/iter, ceiling = cuda s/iter, ratio = speed-up of cuda.
    std::printf("%-14s %-30s %-5s %4lld %12.3e %14.4g %14.4g %8.3f  %s\n", r.what.c_str(), r.workload.c_str(),
                r.precision.c_str(), static_cast<long long>(r.k), r.seconds_per_iter, r.achieved, r.ceiling,
                r.achieved / r.ceiling, r.unit.c_str());
  }
}

bool parse(int argc, char** argv, Config& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      c.quick = true;
    } else if (arg == "--reps" && i + 1 < argc) {
      c.reps = std::atoi(argv[++i]);
    } else if (arg == "--iters" && i + 1 < argc) {
      c.iters = std::atoi(argv[++i]);
    } else if (arg == "--json" && i + 1 < argc) {
      c.json_path = argv[++i];
    } else {
      return false;
    }
  }
  return c.reps >= 1 && c.iters >= 3;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  if (!parse(argc, argv, c)) {
    std::fprintf(stderr, "usage: bench_gpu [--quick] [--reps R >= 1] [--iters N >= 3] [--json FILE]\n");
    return 2;
  }
  std::string why;
  if (!dnmf::backend::backend_available(dnmf::BackendKind::cuda, &why)) {
    std::fprintf(stderr, "bench_gpu: the cuda backend cannot run here: %s\n", why.c_str());
    return 2;
  }
  try {
    const std::string device = dnmf::bench::device_description();
    const std::size_t gib = std::size_t{1} << 30;
    const double copy_bw = dnmf::bench::device_copy_bandwidth(gib, c.reps);
    const double h2d = dnmf::bench::pinned_h2d_bandwidth(gib, c.reps);
    Json out = {{"device", device},
                {"quick", c.quick},
                {"device_copy_bytes_per_s", copy_bw},
                {"pinned_h2d_bytes_per_s", h2d},
                {"dense_mu", Json::array()},
                {"sparse_mu", Json::array()},
                {"cpu_vs_gpu", Json::array()}};
    std::vector<Row> rows;
    const index_t scale = c.quick ? 5 : 1;
    dense_mu<float>(c, 20000 / scale, 15000 / scale, rows, out);
    dense_mu<double>(c, 20000 / scale, 15000 / scale, rows, out);
    sparse_mu<float>(c, 200000 / scale, 100000 / scale, 1e-3, copy_bw, rows, out);
    sparse_mu<double>(c, 200000 / scale, 100000 / scale, 1e-3, copy_bw, rows, out);
    cpu_vs_gpu<float>(c, 4000, 3000, rows, out);
    cpu_vs_gpu<double>(c, 4000, 3000, rows, out);
    if (!c.json_path.empty()) std::ofstream(c.json_path) << out.dump(2) << "\n";
    print_table(device, copy_bw, h2d, rows);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
