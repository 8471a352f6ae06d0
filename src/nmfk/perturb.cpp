#include "nmfk/perturb.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dnmf/index.hpp"
#include "util/random.hpp"

namespace dnmf::rank_search {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Inversion with one uniform: the smallest x with F(x) ≥ U. Fine for small means (e^{-λ} well above
// underflow, few steps).
double poisson_inversion(double lambda, double u) {
  double probability = std::exp(-lambda);
  double cdf = probability;
  double x = 0;
  while (u > cdf && x < 1000) {
    x += 1;
    probability *= lambda / x;
    cdf += probability;
    if (probability == 0) break;
  }
  return x;
}

// The stream word keeps the perturbation purpose in its low byte (never colliding with the other streams of
// util::Stream) and the perturbation number and draw above it.
std::uint64_t perturbation_stream(int p, std::uint32_t draw) {
  return static_cast<std::uint64_t>(util::Stream::perturbation) |
         (static_cast<std::uint64_t>(static_cast<std::uint32_t>(p)) << 8) | (static_cast<std::uint64_t>(draw) << 40);
}

}  // namespace

double perturbation_uniform(std::uint64_t seed, int p, std::uint64_t index, std::uint32_t draw) {
  // Stream's underlying type is the whole stream word: any perturbation's word is a valid value of it.
  return util::uniform01(seed, static_cast<util::Stream>(perturbation_stream(p, draw)), index);
}

double poisson_draw(double lambda, std::uint64_t seed, int p, std::uint64_t index) {
  if (!(lambda > 0)) return 0;
  if (lambda < 10) return poisson_inversion(lambda, perturbation_uniform(seed, p, index, 0));
  // PTRS (W. Hörmann, "The transformed rejection method for generating Poisson random variables", 1993).
  const double slam = std::sqrt(lambda), loglam = std::log(lambda);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2);
  for (std::uint32_t attempt = 0;; attempt += 2) {
    const double u = perturbation_uniform(seed, p, index, attempt) - 0.5;
    const double v = perturbation_uniform(seed, p, index, attempt + 1);
    const double us = 0.5 - std::abs(u);
    const double x = std::floor((2 * a / us + b) * u + lambda + 0.43);
    if (us >= 0.07 && v <= vr) return x;
    if (x < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -lambda + x * loglam - std::lgamma(x + 1))
      return x;
  }
}

template <class T>
MatrixBlock<T> perturb_block(const MatrixBlock<T>& block, index_t row0, index_t col0, index_t m, Perturbation kind,
                             double epsilon, std::uint64_t seed, int p) {
  const auto counter = [&](index_t i, index_t j) {
    return static_cast<std::uint64_t>(row0 + i) + static_cast<std::uint64_t>(col0 + j) * static_cast<std::uint64_t>(m);
  };
  // Uniform noise takes its draws in runs of the vectorised generator (util::uniform01_run / _at: the same
  // numbers as perturbation_uniform); Poisson draws take one or several each, one entry at a time.
  const auto scaled = [&](double a, double u) -> T {
    if (a == 0) return T(0);
    return static_cast<T>(a * (1 + epsilon * (2 * u - 1)));
  };
  const std::uint64_t stream = perturbation_stream(p, 0);
  constexpr index_t kRun = 1024;
  MatrixBlock<T> out;
  out.sparse = block.sparse;
  if (!block.sparse) {
    const DenseMatrix<T>& a = block.dense;
    out.dense = DenseMatrix<T>(a.rows(), a.cols());
#pragma omp parallel for schedule(static)
    for (index_t j = 0; j < a.cols(); ++j) {
      if (kind == Perturbation::poisson) {
        for (index_t i = 0; i < a.rows(); ++i)
          out.dense(i, j) = static_cast<T>(poisson_draw(static_cast<double>(a(i, j)), seed, p, counter(i, j)));
        continue;
      }
      double u[kRun];
      for (index_t i0 = 0; i0 < a.rows(); i0 += kRun) {  // a column's counters are consecutive
        const index_t len = std::min(kRun, a.rows() - i0);
        util::uniform01_run(seed, stream, counter(i0, j), to_size(len), u);
        for (index_t i = i0; i < i0 + len; ++i) out.dense(i, j) = scaled(static_cast<double>(a(i, j)), u[i - i0]);
      }
    }
    return out;
  }
  const CsrMatrix<T>& a = block.csr;
  std::vector<T> values(a.values().size());
  const auto& indptr = a.indptr();
  const auto& indices = a.indices();
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < a.rows(); ++i) {
    const index_t begin = indptr[to_size(i)], end = indptr[to_size(i + 1)];
    if (kind == Perturbation::poisson) {
      for (index_t q = begin; q < end; ++q)
        values[to_size(q)] = static_cast<T>(
            poisson_draw(static_cast<double>(a.values()[to_size(q)]), seed, p, counter(i, indices[to_size(q)])));
      continue;
    }
    std::uint64_t at[kRun];
    double u[kRun];
    for (index_t q0 = begin; q0 < end; q0 += kRun) {  // a row's counters are a column stride apart
      const index_t len = std::min(kRun, end - q0);
      for (index_t q = 0; q < len; ++q) at[q] = counter(i, indices[to_size(q0 + q)]);
      util::uniform01_at(seed, stream, at, to_size(len), u);
      for (index_t q = 0; q < len; ++q)
        values[to_size(q0 + q)] = scaled(static_cast<double>(a.values()[to_size(q0 + q)]), u[q]);
    }
  }
  out.csr = CsrMatrix<T>(a.rows(), a.cols(), indptr, indices, std::move(values));
  return out;
}

std::uint64_t job_seed(std::uint64_t seed, index_t k, int p) {
  return splitmix64(splitmix64(seed ^ 0x6E6D666B00000000ull) ^ (static_cast<std::uint64_t>(k) << 20) ^
                    static_cast<std::uint64_t>(p));
}

template MatrixBlock<float> perturb_block<float>(const MatrixBlock<float>&, index_t, index_t, index_t, Perturbation,
                                                 double, std::uint64_t, int);
template MatrixBlock<double> perturb_block<double>(const MatrixBlock<double>&, index_t, index_t, index_t, Perturbation,
                                                   double, std::uint64_t, int);

}  // namespace dnmf::rank_search
