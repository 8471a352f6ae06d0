// Test helpers that look at a matrix another way: a block of it, its values in row-major order (C-order
// files, HDF5 datasets), a CSR matrix as dense (checking its rows are canonical on the way), and a planted
// matrix that NMF fits well but not exactly (so iterates keep moving).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "dist/grid.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"
#include "support/random_matrices.hpp"

namespace dnmf::test {

/// Rows `rows` x columns `cols` of `whole`, as a new matrix.
template <class T>
DenseMatrix<T> slice(const DenseMatrix<T>& whole, dist::Range rows, dist::Range cols) {
  DenseMatrix<T> out(rows.size(), cols.size());
  for (index_t j = 0; j < cols.size(); ++j)
    for (index_t i = 0; i < rows.size(); ++i) out(i, j) = whole(rows.first + i, cols.first + j);
  return out;
}

/// The values of `a` row by row, converted to S.
template <class S, class T>
std::vector<S> row_major_as(const DenseMatrix<T>& a) {
  std::vector<S> out;
  out.reserve(to_size(a.rows() * a.cols()));
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t j = 0; j < a.cols(); ++j) out.push_back(static_cast<S>(a(i, j)));
  return out;
}

/// The values of `a` row by row.
template <class T>
std::vector<T> row_major(const DenseMatrix<T>& a) {
  return row_major_as<T>(a);
}

/// A CSR matrix as dense; every row's columns must be strictly increasing (a failed expectation otherwise).
template <class T>
DenseMatrix<T> dense_of(const CsrMatrix<T>& csr) {
  DenseMatrix<T> out(csr.rows(), csr.cols());
  for (index_t i = 0; i < csr.rows(); ++i) {
    for (index_t k = csr.indptr()[i]; k < csr.indptr()[i + 1]; ++k) {
      if (k > csr.indptr()[i]) {
        EXPECT_LT(csr.indices()[k - 1], csr.indices()[k]) << "row " << i;
      }
      out(i, csr.indices()[k]) = csr.values()[k];
    }
  }
  return out;
}

/// A rank-4 product plus 5% noise, with a `zero_fraction` of its entries set to zero (KL's a == 0 branch).
inline DenseMatrix<double> noisy_rank4(index_t m, index_t n, std::uint64_t seed, double zero_fraction = 0) {
  const auto w = random_dense<double>(m, 4, seed);
  const auto h = random_dense<double>(4, n, seed + 1);
  const auto noise = random_dense<double>(m, n, seed + 2);
  DenseMatrix<double> a(m, n);
  std::mt19937_64 rng(seed + 3);
  std::uniform_real_distribution<double> u(0, 1);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      double v = 0.05 * noise(i, j);
      for (index_t l = 0; l < 4; ++l) v += w(i, l) * h(l, j);
      a(i, j) = u(rng) < zero_fraction ? 0.0 : v;
    }
  return a;
}

}  // namespace dnmf::test
