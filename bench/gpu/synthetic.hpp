// Benchmark inputs made fast on all cores: values from a counter-based hash, so a matrix depends only on its
// seed and shape. CSR rows take one column from each of nnz_per_row equal strata: sorted, distinct and
// spread over the whole width, which is all a bandwidth measurement needs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::bench {

/// Uniform in [0, 1) from (seed, counter): splitmix64's finaliser.
inline double uniform(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

/// m x n dense, entries uniform in [0.05, 1.05).
template <class T>
DenseMatrix<T> random_dense(index_t m, index_t n, std::uint64_t seed) {
  DenseMatrix<T> a(m, n);
  T* data = a.data();
#pragma omp parallel for schedule(static)
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      const auto at = static_cast<std::uint64_t>(i + j * m);
      data[at] = static_cast<T>(0.05 + uniform(seed, at));
    }
  return a;
}

/// m x n CSR with round(density·n) entries in every row, values uniform in [0.05, 1.05).
template <class T>
CsrMatrix<T> random_csr(index_t m, index_t n, double density, std::uint64_t seed) {
  const index_t per_row = std::clamp<index_t>(std::llround(density * static_cast<double>(n)), 1, n);
  std::vector<index_t> indptr(dnmf::to_size(m + 1));
  for (index_t i = 0; i <= m; ++i) indptr[dnmf::to_size(i)] = i * per_row;
  std::vector<col_index_t> indices(dnmf::to_size(m * per_row));
  std::vector<T> values(indices.size());
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < m; ++i)
    for (index_t s = 0; s < per_row; ++s) {
      const index_t lo = s * n / per_row;
      const index_t hi = (s + 1) * n / per_row;
      const auto at = static_cast<std::uint64_t>(i * per_row + s);
      const auto offset = static_cast<index_t>(uniform(seed, 2 * at) * static_cast<double>(hi - lo));
      indices[at] = static_cast<col_index_t>(lo + offset);
      values[at] = static_cast<T>(0.05 + uniform(seed, 2 * at + 1));
    }
  return {m, n, std::move(indptr), std::move(indices), std::move(values)};
}

}  // namespace dnmf::bench
