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
  std::vector<double> denom(to_size(k));
  for (index_t c = first; c < last; ++c) {
    // Denominators from the old column first: MU is a simultaneous (Jacobi) update.
    const T* xc = x.data + c * x.ld;
    for (index_t l = 0; l < k; ++l) denom[to_size(l)] = rule.l1 + rule.l2 * static_cast<double>(xc[l]) + rule.eps;
    gram_times(g.data, g.ld, xc, k, denom.data());
    for (index_t l = 0; l < k; ++l)
      x(l, c) = static_cast<T>(static_cast<double>(x(l, c)) * static_cast<double>(numer(l, c)) / denom[to_size(l)]);
  }
}

}  // namespace dnmf::solvers
