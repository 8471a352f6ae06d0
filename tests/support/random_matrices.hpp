// Test inputs: random dense and CSR matrices and factors from a plain seeded engine (independent of
// the library's own generator, so a bug there cannot hide a bug here).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "dnmf/matrix.hpp"

namespace dnmf::test {

template <class T>
DenseMatrix<T> random_dense(index_t rows, index_t cols, std::uint64_t seed, double zero_fraction = 0.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  DenseMatrix<T> a(rows, cols);
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) a(i, j) = u(rng) < zero_fraction ? T(0) : static_cast<T>(0.05 + u(rng));
  return a;
}

template <class T>
CsrMatrix<T> to_csr(const DenseMatrix<T>& d) {
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<T> values;
  for (index_t i = 0; i < d.rows(); ++i) {
    for (index_t j = 0; j < d.cols(); ++j)
      if (d(i, j) != T(0)) {
        indices.push_back(static_cast<col_index_t>(j));
        values.push_back(d(i, j));
      }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  return {d.rows(), d.cols(), std::move(indptr), std::move(indices), std::move(values)};
}

/// The relative bound a kernel is held to against the reference backend: f64 1e-12, f32 2e-5.
template <class T>
double reference_tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

/// max |x - y| / max |y| (plain max |x - y| where y is all zero): every test's "equal within a tolerance".
template <class T>
double max_relative_difference(const DenseMatrix<T>& x, const DenseMatrix<T>& y) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.storage().size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(x.storage()[i]) - static_cast<double>(y.storage()[i])));
    scale = std::max(scale, std::abs(static_cast<double>(y.storage()[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace dnmf::test
