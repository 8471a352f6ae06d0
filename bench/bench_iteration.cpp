// One run, one table: seconds per iteration of every solver next to the two plain products WᵀA and AHᵀ
// on the same matrix, and next to the floor 4mnk / (this machine's square-GEMM rate, measured here), so every
// ratio printed is measured on the same machine in the same run. Dense rows come three ways: the skinny
// kernels (default), the same iteration with every product sent to BLAS, and the matrix in C order (row-major,
// numpy's default) through the public API. Sparse rows come two ways: the default (A's transpose kept beside
// it, both products gathers: backend/gathering_operand.hpp) and the fused pass over A alone (a gather and a
// scatter), with the products of each.
//   bench_iteration [--quick] [--threads N] [--reps R] [--iters N] [--only dense64|dense32|sparse] [--json out.json]
// Each solver's seconds per iteration is the best of R fits of --iters iterations (20; 5 with --quick) from the
// same random start.
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

#include "backend/cpu/blas.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/skinny_products.hpp"
#include "backend/gathering_operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/blas.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/index.hpp"
#include "dnmf/planted.hpp"
#include "io/csr_build.hpp"
#include "solvers/solve.hpp"

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

// GFLOP/s of one square GEMM of order 2000 on all threads: the rate the floor is measured against.
template <class T>
double square_gemm_rate(int reps) {
  const int order = 2000;
  std::vector<T> a(static_cast<std::size_t>(order) * order, T(0.5)), c(a.size());
  const double s = best_of(reps, [&] {
    dnmf::backend::blas::gemm(false, false, order, order, order, T(1), a.data(), order, a.data(), order, T(0), c.data(),
                              order);
  });
  return 2.0 * order * order * order / s / 1e9;
}

struct Row {
  std::string workload, what;
  double seconds_per_iter = 0, gflops = 0, ratio = 0, bytes_per_s = 0, floor_ratio = 0;
};

template <class T>
std::vector<Row> run_workload(const std::string& name, const dnmf::PlantedOptions& po, index_t k, int iters, int reps,
                              double copy_bw, double gemm_rate) {
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
  rows.push_back({name, planted.sparse ? "WtA + AHt (scatter)" : "WtA + AHt", products, flops / products / 1e9, 1.0,
                  2 * a_bytes / products, products / (flops / (gemm_rate * 1e9))});
  // Sparse: the same products over A's transpose and A, both gathers (the default operand's).
  dnmf::CsrMatrix<T> transpose;
  if (planted.sparse) {
    transpose = dnmf::io::detail::transpose(planted.csr.view());
    const dnmf::MatrixRef<T> at{transpose.view()};
    const double gathers = best_of(reps * 3, [&] {
      cpu.multiply(at, dnmf::backend::Side::W, wt.view(), p.view(), T(0));
      cpu.multiply(a, dnmf::backend::Side::W, h.view(), qt.view(), T(0));
    });
    rows.push_back({name, "WtA + AHt (gathers)", gathers, flops / gathers / 1e9, gathers / products,
                    2 * a_bytes / gathers, gathers / (flops / (gemm_rate * 1e9))});
  }

  // The sparse fused pass over A alone (a ResidentOperand), which factorize() no longer takes on the cpu.
  const auto scattering = [&](const dnmf::FactorOptions& o) {
    dnmf::dist::SingleCommunicator self;
    const dnmf::dist::Grid grid(self, {1, 1});
    const dnmf::dist::Layout layout = dnmf::dist::make_layout(grid, m, n);
    dnmf::backend::CpuKernels<T> kernels, host;
    dnmf::backend::ResidentOperand<T> operand(kernels, a);
    const auto solution = dnmf::solvers::solve(kernels, host, operand, &a, grid, layout, o);
    return solution.result.seconds / solution.result.iterations;
  };
  const auto per_iteration = [&](const dnmf::FactorOptions& o, bool c_order, bool scatter) {
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      if (scatter) {
        best = std::min(best, scattering(o));
      } else if (c_order) {
        // The same matrix stored row-major, as numpy hands it over: the library iterates on Aᵀ.
        const auto& d = std::get<dnmf::DenseView<const T>>(a);
        static std::vector<T> row_major;
        if (r == 0) {
          row_major.assign(dnmf::to_size(m * n), T(0));
          for (index_t j = 0; j < n; ++j)
            for (index_t i = 0; i < m; ++i) row_major[dnmf::to_size(i * n + j)] = d(i, j);
        }
        const auto run = dnmf::factor<T>(dnmf::Source::dense_row_major<T>(row_major.data(), m, n, n), o);
        best = std::min(best, run.result.seconds / run.result.iterations);
      } else {
        const auto res = dnmf::factorize<T>(a, o);
        best = std::min(best, res.seconds / res.iterations);
      }
    }
    return best;
  };
  const double floor = flops / (gemm_rate * 1e9);
  for (auto algo : {dnmf::Algorithm::mu, dnmf::Algorithm::kl, dnmf::Algorithm::hals, dnmf::Algorithm::bpp})
    for (int variant = 0; variant < 5; ++variant) {
      // Dense: 0 fused; 1 two-pass (mu only); 2 fused with BLAS products; 3 fused, C order (mu and hals); 4 fused
      // without requesting A's columns ahead in WᵀA (mu and hals, where the default requests them).
      // Sparse: 0 the default (gathers over A and its transpose); 1 the fused pass over A alone (scatter).
      const bool fused = planted.sparse || variant != 1;
      if (variant == 1 && algo != dnmf::Algorithm::mu && !planted.sparse) continue;
      if (variant >= 2 && (planted.sparse || (algo != dnmf::Algorithm::mu && algo != dnmf::Algorithm::hals))) continue;
      if (variant == 4 && dnmf::backend::cpu::column_ahead_bytes<T>() == 0) continue;
      dnmf::FactorOptions o;
      o.rank = k;
      o.algorithm = algo;
      o.max_iterations = iters;
      o.tol = 0;
      o.fused = fused;
      dnmf::backend::cpu::skinny_use_blas(variant == 2);
      if (variant == 4) dnmf::backend::cpu::skinny_set_column_ahead(0);
      const bool scatter = planted.sparse && variant == 1;
      const double best = per_iteration(o, variant == 3, scatter);
      dnmf::backend::cpu::skinny_use_blas(false);
      dnmf::backend::cpu::skinny_set_column_ahead(-1);
      static const char* const suffix[] = {" (fused)", " (two-pass)", " (BLAS prod.)", " (C order)", " (no ahead)"};
      static const char* const sparse_suffix[] = {" (gathers)", " (scatter)"};
      const bool one_pass = planted.sparse ? scatter : fused;  // sparse: the gathers read A and its transpose
      const double passes = one_pass ? 1.0 : 2.0;
      rows.push_back({name, dnmf::to_string(algo) + (planted.sparse ? sparse_suffix[variant] : suffix[variant]), best,
                      flops / best / 1e9, best / products, passes * a_bytes / best, best / floor});
    }
  std::printf("  %s done: copy bandwidth %.1f GB/s\n", name.c_str(), copy_bw / 1e9);
  return rows;
}

int run(int argc, char** argv) {
  bool quick = false;
  int threads = 2, reps = 5, iters_given = 0;
  std::string json_path, only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick")
      quick = true;
    else if (arg == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (arg == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (arg == "--iters" && i + 1 < argc && std::atoi(argv[i + 1]) > 0)
      iters_given = std::atoi(argv[++i]);
    else if (arg == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else if (arg == "--only" && i + 1 < argc &&
             (std::strcmp(argv[i + 1], "dense64") == 0 || std::strcmp(argv[i + 1], "dense32") == 0 ||
              std::strcmp(argv[i + 1], "sparse") == 0))
      only = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: bench_iteration [--quick] [--threads N] [--reps R] [--iters N] [--only "
                   "dense64|dense32|sparse] [--json FILE]\n");
      return 2;
    }
  }
  omp_set_num_threads(threads);
  const int iters = iters_given > 0 ? iters_given : quick ? 5 : 20;
  const double copy_bw = copy_bandwidth(reps);
  const double rate64 = square_gemm_rate<double>(reps), rate32 = square_gemm_rate<float>(reps);
  const index_t scale = quick ? 4 : 1;
  std::vector<Row> rows;
  const dnmf::PlantedOptions dense{
      .rows = 4000 / scale, .cols = 3000 / scale, .rank = 10, .density = 1.0, .noise = 0.01, .seed = 1};
  const dnmf::PlantedOptions sparse{
      .rows = 20000 / scale, .cols = 10000 / scale, .rank = 10, .density = 0.005, .noise = 0.01, .seed = 1};
  const auto wanted = [&](const char* name) { return only.empty() || only == name; };
  if (wanted("dense64"))
    for (auto& r : run_workload<double>("dense f64 " + std::to_string(dense.rows) + "x" + std::to_string(dense.cols),
                                        dense, 16, iters, reps, copy_bw, rate64))
      rows.push_back(r);
  if (wanted("dense32"))
    for (auto& r : run_workload<float>("dense f32 " + std::to_string(dense.rows) + "x" + std::to_string(dense.cols),
                                       dense, 16, iters, reps, copy_bw, rate32))
      rows.push_back(r);
  if (wanted("sparse"))
    for (auto& r : run_workload<double>("sparse f64 " + std::to_string(sparse.rows) + "x" + std::to_string(sparse.cols),
                                        sparse, 16, iters, reps, copy_bw, rate64))
      rows.push_back(r);

  std::printf("\nthreads=%d  k=16  copy bandwidth (read+write) %.2f GB/s  square GEMM %.1f (f64) %.1f (f32) GFLOP/s\n",
              threads, copy_bw / 1e9, rate64, rate32);
  std::printf(
      "BLAS: %s; skinny kernels: %s; next tile requested ahead: %s; WtA requests A's columns %ld (f64) / %ld "
      "(f32) bytes ahead\n",
      dnmf::blas_summary().c_str(), dnmf::backend::cpu::skinny_isa(),
      dnmf::backend::cpu::fetch_ahead_pays() ? "yes" : "no",
      static_cast<long>(dnmf::backend::cpu::column_ahead_bytes<double>()),
      static_cast<long>(dnmf::backend::cpu::column_ahead_bytes<float>()));
  std::printf("%-24s %-18s %12s %10s %16s %14s %12s %10s\n", "workload", "what", "s/iter", "GFLOP/s", "iter/(2 prod)",
              "A bytes/s", "of copy bw", "x floor");
  nlohmann::json out = {{"threads", threads},
                        {"k", 16},
                        {"copy_bandwidth_bytes_per_s", copy_bw},
                        {"square_gemm_gflops_f64", rate64},
                        {"square_gemm_gflops_f32", rate32},
                        {"blas", dnmf::blas_summary()},
                        {"skinny_kernels", dnmf::backend::cpu::skinny_isa()},
                        {"fetch_ahead", dnmf::backend::cpu::fetch_ahead_pays()},
                        {"column_ahead_bytes_f64", dnmf::backend::cpu::column_ahead_bytes<double>()},
                        {"column_ahead_bytes_f32", dnmf::backend::cpu::column_ahead_bytes<float>()},
                        {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    std::printf("%-24s %-18s %12.5f %10.2f %16.3f %12.2e %11.1f%% %10.2f\n", r.workload.c_str(), r.what.c_str(),
                r.seconds_per_iter, r.gflops, r.ratio, r.bytes_per_s, 100.0 * r.bytes_per_s / copy_bw, r.floor_ratio);
    out["rows"].push_back({{"workload", r.workload},
                           {"what", r.what},
                           {"seconds_per_iteration", r.seconds_per_iter},
                           {"gflops", r.gflops},
                           {"ratio_to_two_products", r.ratio},
                           {"a_bytes_per_s", r.bytes_per_s},
                           {"fraction_of_copy_bandwidth", r.bytes_per_s / copy_bw},
                           {"ratio_to_floor", r.floor_ratio}});
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
