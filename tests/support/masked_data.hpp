// Test data for the masked device tests (tests/unit/test_masked_device*.cpp): a random positive matrix with a
// mask of mostly-unit weights, its masked problem and plain options.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>

#include "dnmf/factorize.hpp"
#include "solvers/masked_problem.hpp"
#include "support/random_matrices.hpp"  // max_relative_difference

namespace dnmf::test {

/// A, its weights and a start (Wᵀ, H).
template <class T>
struct MaskedData {
  DenseMatrix<T> a, weight, wt0, h0;
};

/// A random positive m x n with weights: `missing` of them 0, some 0.5 and 3, the rest 1; starts in (0.1, 1.1).
template <class T>
MaskedData<T> make_masked_data(index_t m, index_t n, index_t k, double missing, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  MaskedData<T> d{DenseMatrix<T>(m, n), DenseMatrix<T>(m, n), DenseMatrix<T>(k, m), DenseMatrix<T>(k, n)};
  for (auto& v : d.a.storage()) v = static_cast<T>(0.1 + u(engine));
  for (auto& v : d.weight.storage()) {
    const double x = u(engine);
    v = static_cast<T>(x < missing ? 0.0 : (x < missing + 0.05 ? 0.5 : (x < missing + 0.1 ? 3.0 : 1.0)));
  }
  for (auto& v : d.wt0.storage()) v = static_cast<T>(0.1 + u(engine));
  for (auto& v : d.h0.storage()) v = static_cast<T>(0.1 + u(engine));
  return d;
}

/// m x n data whose row `row` and column `col` have no observed entry (their factors must stay zero).
template <class T>
MaskedData<T> make_with_unobserved(index_t m, index_t n, index_t k, index_t row, index_t col, unsigned seed) {
  MaskedData<T> d = make_masked_data<T>(m, n, k, 0.1, seed);
  for (index_t j = 0; j < n; ++j) d.weight(row, j) = 0;
  for (index_t i = 0; i < m; ++i) d.weight(i, col) = 0;
  return d;
}

/// The masked problem of a dense A and its weights.
template <class T>
solvers::MaskedProblem<T> dense_masked_problem(const MaskedData<T>& d) {
  const MatrixRef<T> a = DenseView<const T>(d.a.view());
  const MatrixRef<T> w = DenseView<const T>(d.weight.view());
  return solvers::build_masked_problem<T>({&a, false, "A"}, {&w, false, "M"}, MissingValues{});
}

/// A fixed number of iterations from a given start, no normalisation.
inline FactorOptions fixed_iterations(Algorithm algo, index_t k, int iters) {
  FactorOptions o;
  o.rank = k;
  o.algorithm = algo;
  o.max_iterations = iters;
  o.tol = 0;
  o.normalize = false;
  return o;
}

}  // namespace dnmf::test
