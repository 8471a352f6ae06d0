#include "dnmf/planted.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "util/memory.hpp"
#include "util/random.hpp"

namespace dnmf {
namespace {

constexpr std::uint64_t kFactorW = 11, kFactorH = 12, kNoise = 13, kSupport = 14;

double draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return util::uniform01(seed, static_cast<util::Stream>(stream), index);
}

// A factor entry: zero with probability 1 - keep, else uniform in (0.1, 1].
double factor_entry(std::uint64_t seed, std::uint64_t stream, std::uint64_t index, double keep) {
  if (draw(seed, kSupport * 100 + stream, index) > keep) return 0.0;
  return 0.1 + 0.9 * draw(seed, stream, index);
}

double noisy(double value, double noise, std::uint64_t seed, std::uint64_t index) {
  if (noise == 0 || value == 0) return value;
  const double xi = std::sqrt(3.0) * (2.0 * draw(seed, kNoise, index) - 1.0);
  return std::max(0.0, value * (1.0 + noise * xi));
}

/// An entry in T; noise large enough to overflow T (1e308 in double, 1e39 in float) is a usage error, not a
/// file of infinities that factor then refuses.
template <class T>
T checked(double value, double noise) {
  const auto out = static_cast<T>(value);
  if (!std::isfinite(out)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", noise);
    throw UsageError(std::string("noise ") + text + " makes entries overflow " +
                     (sizeof(T) == 4 ? "float32" : "float64") + "; use a relative noise of order 1 or less");
  }
  return out;
}

}  // namespace

template <class T>
Planted<T> make_planted(const PlantedOptions& o) {
  if (o.rows < 1 || o.cols < 1) throw UsageError("planted matrix needs rows >= 1 and cols >= 1");
  if (o.rank < 1 || o.rank > std::min(o.rows, o.cols))
    throw UsageError("planted rank " + std::to_string(o.rank) +
                     " must be between 1 and min(rows, cols) = " + std::to_string(std::min(o.rows, o.cols)));
  if (!(o.density > 0) || o.density > 1)
    throw UsageError("density must be in (0, 1], got " + std::to_string(o.density));
  if (!(o.noise >= 0) || !std::isfinite(o.noise))  // inf is >= 0: "must be >= 0" did not say what was wrong
    throw UsageError("noise must be a finite number >= 0, got " + std::to_string(o.noise));
  const index_t m = o.rows, n = o.cols, r = o.rank;
  // What the problem holds (A dense, or about density·m·n entries and m + 1 row pointers; W and H), refused as a
  // failed allocation before any is made: an over-committed request is answered by the kernel's OOM killer, not by
  // bad_alloc (a 3e9 x 3e9 sparse gen was killed at 24 GB).
  const auto dm = static_cast<double>(m), dn = static_cast<double>(n), dr = static_cast<double>(r);
  const double entry = o.density < 1 ? sizeof(T) + sizeof(col_index_t) : sizeof(T);
  const double bytes = (dm + dn) * dr * sizeof(T) + dm * dn * std::min(o.density * 1.1, 1.0) * entry +
                       (o.density < 1 ? (dm + 1) * sizeof(index_t) : 0.0);
  const double memory = util::physical_memory_bytes();
  if (memory > 0 && bytes > memory) throw std::bad_alloc();
  Planted<T> p;
  p.sparse = o.density < 1;
  // Dense: half the factor entries are zero. Sparse: an entry of A is zero when each of its r products
  // W_il H_lj is, so with each factor entry kept with probability p it is non-zero with probability
  // 1 - (1 - p²)^r; p = sqrt(1 - (1 - density)^(1/r)) makes that `density` (sqrt(density / r) did only for small
  // densities: 0.9 gave 70% at rank 2, 0.999 gave 75%).
  const double keep = p.sparse ? std::sqrt(-std::expm1(std::log1p(-o.density) / static_cast<double>(r))) : 0.5;
  p.W = DenseMatrix<T>(m, r);
  p.H = DenseMatrix<T>(r, n);
  for (index_t l = 0; l < r; ++l) {
    for (index_t i = 0; i < m; ++i)
      p.W(i, l) = static_cast<T>(factor_entry(o.seed, kFactorW, static_cast<std::uint64_t>(i * r + l), keep));
    for (index_t j = 0; j < n; ++j)
      p.H(l, j) = static_cast<T>(factor_entry(o.seed, kFactorH, static_cast<std::uint64_t>(j * r + l), keep));
    // Every component appears at least once, or the planted rank would be a lie.
    p.W(l % m, l) = T(1);
    p.H(l, l % n) = T(1);
  }
  if (!p.sparse) {
    p.dense = DenseMatrix<T>(m, n);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) {
        double s = 0;
        for (index_t l = 0; l < r; ++l) s += static_cast<double>(p.W(i, l)) * static_cast<double>(p.H(l, j));
        p.dense(i, j) = checked<T>(noisy(s, o.noise, o.seed, static_cast<std::uint64_t>(i + j * m)), o.noise);
      }
    return p;
  }
  // Sparse product row by row: only the non-zeros of W's row and H's rows are visited.
  std::vector<std::vector<std::pair<col_index_t, double>>> h_rows(to_size(r));
  for (index_t l = 0; l < r; ++l)
    for (index_t j = 0; j < n; ++j)
      if (p.H(l, j) != T(0)) h_rows[to_size(l)].emplace_back(static_cast<col_index_t>(j), p.H(l, j));
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  std::vector<double> acc(to_size(n), 0.0);
  std::vector<col_index_t> touched;
  for (index_t i = 0; i < m; ++i) {
    touched.clear();
    for (index_t l = 0; l < r; ++l) {
      const double w = static_cast<double>(p.W(i, l));
      if (w == 0) continue;
      for (const auto& [j, h] : h_rows[to_size(l)]) {
        if (acc[to_size(j)] == 0) touched.push_back(j);
        acc[to_size(j)] += w * h;
      }
    }
    std::sort(touched.begin(), touched.end());
    for (col_index_t j : touched) {
      const double v = noisy(acc[to_size(j)], o.noise, o.seed, static_cast<std::uint64_t>(i + j * m));
      acc[to_size(j)] = 0;
      if (v == 0) continue;
      indices.push_back(j);
      values.push_back(checked<T>(v, o.noise));
    }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  p.csr = CsrMatrix<T>(m, n, std::move(indptr), std::move(indices), std::move(values));
  return p;
}

template Planted<float> make_planted<float>(const PlantedOptions&);
template Planted<double> make_planted<double>(const PlantedOptions&);

}  // namespace dnmf
