// MU-Frobenius: Lee and Seung's multiplicative update for 0.5 ||A - W H||² + l1 Σx + 0.5 l2 ||x||², one
// column x of H (or of Wᵀ) at a time, with numerator b = Wᵀa and Gram matrix G = WᵀW:
//
//   x_l <- x_l · b_l / ((G x)_l + l1 + l2 x_l + eps)      for every l at once (a Jacobi update)
//
// Non-negativity is kept because every factor is non-negative; eps keeps the quotient finite.
#pragma once

#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

/// Updates columns [first, last) of x in place.
template <class T>
void mu_frobenius_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                         backend::CView<T> g, index_t first, index_t last) {
  const index_t k = x.rows;
  std::vector<double> denom(to_size(2 * k));
  double* const d0 = denom.data();
  double* const d1 = d0 + k;
  // Denominators from the old column first: MU is a simultaneous (Jacobi) update. Two columns at a time share
  // the loads of g (the sums are those of one column at a time, to the bit).
  const auto start = [&](index_t c, double* d) {
    for (index_t l = 0; l < k; ++l) d[l] = rule.l1 + rule.l2 * static_cast<double>(x(l, c)) + rule.eps;
  };
  const auto finish = [&](index_t c, const double* d) {
    for (index_t l = 0; l < k; ++l)
      x(l, c) = static_cast<T>(static_cast<double>(x(l, c)) * static_cast<double>(numer(l, c)) / d[l]);
  };
  index_t c = first;
  for (; c + 2 <= last; c += 2) {
    start(c, d0);
    start(c + 1, d1);
    gram_times_pair(g.data, g.ld, x.data + c * x.ld, x.data + (c + 1) * x.ld, k, d0, d1);
    finish(c, d0);
    finish(c + 1, d1);
  }
  if (c < last) {
    start(c, d0);
    gram_times(g.data, g.ld, x.data + c * x.ld, k, d0);
    finish(c, d0);
  }
}

}  // namespace dnmf::solvers
