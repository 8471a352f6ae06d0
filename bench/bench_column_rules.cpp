// The column rules' update kernels alone (docs/algorithms.md, "Update rules"): the library's 4-wide HALS and
// MU-Frobenius kernels against the 8-wide AVX-512 ones on the same columns, one thread, best of --reps, with a
// check that both give the same bits. Prints one line per rule and k.
//
//   build/release/bin/bench_column_rules [--cols 10000] [--reps 30]
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "solvers/hals.hpp"
#include "solvers/listed_products.hpp"
#include "solvers/mu_frobenius.hpp"

namespace {

using dnmf::Algorithm;
using dnmf::index_t;

struct Columns {
  index_t k, n;
  std::vector<double> g, x0, numer;
};

Columns make_columns(index_t k, index_t n) {
  Columns c{k, n, {}, {}, {}};
  std::mt19937_64 engine(static_cast<unsigned>(k));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const index_t rows = 4 * k;
  std::vector<double> y(static_cast<std::size_t>(rows * k));
  for (double& v : y) v = u(engine);
  c.g.assign(static_cast<std::size_t>(k * k), 0.0);  // G = YᵀY: symmetric positive definite, as the rules see it
  for (index_t r = 0; r < rows; ++r)
    for (index_t q = 0; q < k; ++q)
      for (index_t p = 0; p < k; ++p) c.g[static_cast<std::size_t>(p + q * k)] += y[r * k + p] * y[r * k + q];
  c.x0.resize(static_cast<std::size_t>(k * n));
  c.numer.resize(c.x0.size());
  for (double& v : c.x0) v = u(engine);
  for (double& v : c.numer) v = 10.0 * u(engine);
  return c;
}

template <class F>
double best_seconds(const Columns& c, int reps, std::vector<double>& x, F&& kernel) {
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    x = c.x0;
    const auto start = std::chrono::steady_clock::now();
    kernel(dnmf::backend::View<double>{x.data(), c.k, c.n, c.k});
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  index_t cols = 10000;
  int reps = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--cols") {
      cols = std::atol(argv[i + 1]);
    } else if (flag == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: bench_column_rules [--cols N] [--reps R]\n");
      return 2;
    }
  }
  if (!dnmf::solvers::listed_gram_wide()) {
    std::printf("this CPU has no AVX-512F (or DNMF_SKINNY keeps AVX2): only the 4-wide kernels run\n");
    return 0;
  }
  std::printf("column rules, %ld columns, one thread, best of %d (ms)\n", static_cast<long>(cols), reps);
  std::printf("%-5s %4s %10s %10s %7s %10s\n", "rule", "k", "4-wide", "8-wide", "ratio", "same bits");
  for (Algorithm algo : {Algorithm::hals, Algorithm::mu}) {
    for (index_t k : {7, 8, 16, 24, 32}) {
      if (algo == Algorithm::mu && !dnmf::solvers::mu_frobenius_wide_for(k)) continue;
      const Columns c = make_columns(k, cols);
      const dnmf::backend::UpdateRule rule{algo, 1e-16, 0.0, 0.0};
      const dnmf::backend::CView<double> numer{c.numer.data(), k, cols, k}, g{c.g.data(), k, k, k};
      std::vector<double> four, wide;
      const double t4 = best_seconds(c, reps, four, [&](dnmf::backend::View<double> x) {
        if (algo == Algorithm::hals) {
          dnmf::solvers::hals_update_four_wide(rule, x, numer, g, 0, cols);
        } else {
          dnmf::solvers::mu_frobenius_update_four_wide(rule, x, numer, g, 0, cols);
        }
      });
      const double t8 = best_seconds(c, reps, wide, [&](dnmf::backend::View<double> x) {
        if (algo == Algorithm::hals) {
          dnmf::solvers::avx512::hals_update_wide(rule, x, numer, g, 0, cols);
        } else {
          dnmf::solvers::avx512::mu_frobenius_update_wide(rule, x, numer, g, 0, cols);
        }
      });
      bool same = four.size() == wide.size();
      for (std::size_t i = 0; same && i < four.size(); ++i)
        same = std::bit_cast<std::uint64_t>(four[i]) == std::bit_cast<std::uint64_t>(wide[i]);
      std::printf("%-5s %4ld %10.3f %10.3f %7.2f %10s\n", algo == Algorithm::hals ? "hals" : "mu", static_cast<long>(k),
                  1e3 * t4, 1e3 * t8, t4 / t8, same ? "yes" : "NO");
    }
  }
  return 0;
}
