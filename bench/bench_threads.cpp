// 1 thread against N threads, size by size: ms per iteration of each solver on dense planted matrices from
// 20x20 up to the benchmark size, and the N-thread/1-thread ratio measured in the same run (issue 14, item 3:
// no solver may be slower with more threads). Each timing alternates 1 and N threads, best of --reps.
//   bench_threads [--threads N] [--reps R] [--max-rows M] [--k K]
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/factorize.hpp"
#include "dnmf/index.hpp"
#include "dnmf/planted.hpp"

namespace {

using dnmf::index_t;

// Enough iterations that one timing lasts about 0.2 s at one thread, and at least 100 (a solver's run is
// hundreds of iterations; the thread-count trials of the first ones are part of its cost).
int iterations_for(index_t m, index_t n, index_t k) {
  const double per_iter = 8.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) + 2e4;
  return static_cast<int>(std::clamp(2e9 / per_iter, 100.0, 2000.0));
}

struct Timing {
  double wall_ms = 1e300;  // per iteration, the iteration loop alone
  double cpu_ms = 1e300;   // per iteration, process CPU time of the whole call (spinning threads show here)
};

Timing time_run(const dnmf::MatrixRef<double>& a, dnmf::Algorithm algo, index_t k, int iters, int threads) {
  dnmf::FactorOptions o;
  o.rank = k;
  o.algorithm = algo;
  o.max_iterations = iters;
  o.tol = 0;
  o.threads = threads;
  const std::clock_t cpu0 = std::clock();
  const auto res = dnmf::factorize<double>(a, o);
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  return {1e3 * res.seconds / res.iterations, 1e3 * cpu / res.iterations};
}

int run(int argc, char** argv) {
  int threads = 2, reps = 3;
  index_t max_rows = 4000, k_max = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (arg == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (arg == "--max-rows")
      max_rows = std::atol(argv[i + 1]);
    else if (arg == "--k")
      k_max = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: bench_threads [--threads N] [--reps R] [--max-rows M] [--k K]\n");
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fprintf(stderr, "usage: bench_threads [--threads N] [--reps R] [--max-rows M] [--k K]\n");
    return 2;
  }
  const std::vector<std::pair<index_t, index_t>> sizes = {
      {20, 20}, {96, 21}, {50, 50}, {100, 100}, {200, 150}, {500, 400}, {1000, 800}, {2000, 1500}, {4000, 3000}};
  std::printf(
      "dense f64, ms/iteration (wall, iteration loop; cpu: process CPU time of the call), best of %d; ratio = %d "
      "threads / 1 thread (> 1: threads cost time)\n",
      reps, threads);
  std::printf("%-11s %3s %-5s %6s %12s %12s %8s %10s %10s %8s\n", "size", "k", "algo", "iters", "1 thread", "N threads",
              "ratio", "cpu 1", "cpu N", "cpu ratio");
  double worst = 0;
  for (const auto& [m, n] : sizes) {
    if (m > max_rows) continue;
    const index_t k = std::min<index_t>({k_max, m, n, m < 100 ? 8 : k_max});
    const auto planted = dnmf::make_planted<double>(
        {.rows = m, .cols = n, .rank = std::min<index_t>(k, 10), .density = 1.0, .noise = 0.01, .seed = 1});
    const auto a = planted.matrix();
    const int iters = iterations_for(m, n, k);
    for (auto algo : {dnmf::Algorithm::mu, dnmf::Algorithm::hals, dnmf::Algorithm::bpp, dnmf::Algorithm::kl}) {
      Timing one, many;
      for (int r = 0; r < reps; ++r) {
        const Timing t1 = time_run(a, algo, k, iters, 1);
        const Timing tn = time_run(a, algo, k, iters, threads);
        one = {std::min(one.wall_ms, t1.wall_ms), std::min(one.cpu_ms, t1.cpu_ms)};
        many = {std::min(many.wall_ms, tn.wall_ms), std::min(many.cpu_ms, tn.cpu_ms)};
      }
      worst = std::max(worst, many.wall_ms / one.wall_ms);
      std::printf("%5ldx%-5ld %3ld %-5s %6d %12.4f %12.4f %8.3f %10.4f %10.4f %8.3f\n", static_cast<long>(m),
                  static_cast<long>(n), static_cast<long>(k), dnmf::to_string(algo).c_str(), iters, one.wall_ms,
                  many.wall_ms, many.wall_ms / one.wall_ms, one.cpu_ms, many.cpu_ms, many.cpu_ms / one.cpu_ms);
      std::fflush(stdout);
    }
  }
  std::printf("worst ratio %.3f\n", worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_threads: error: %s\n", e.what());
    return 1;
  }
}
