// MU-KL: Lee and Seung's multiplicative update for the generalised Kullback-Leibler divergence
// D(A || W H) + l1 Σx + 0.5 l2 ||x||², one column x of H (or of Wᵀ) at a time. The numerator is
// b = Wᵀ (a ⊘ W x) (the ratio product the operand forms) and s = Wᵀ1 are W's column sums:
//
//   x_l <- x_l · b_l / (s_l + l1 + l2 x_l + eps)
//
// Each entry depends only on its own old value, so the order of the updates does not matter.
#pragma once

#include "backend/kernels.hpp"

namespace dnmf::solvers {

/// Updates columns [first, last) of x in place; y_row_sums is s (k values).
template <class T>
void mu_kl_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, const T* y_row_sums,
                  index_t first, index_t last) {
  const index_t k = x.rows;
  for (index_t c = first; c < last; ++c)
    for (index_t l = 0; l < k; ++l) {
      const double denom =
          static_cast<double>(y_row_sums[l]) + rule.l1 + rule.l2 * static_cast<double>(x(l, c)) + rule.eps;
      x(l, c) = static_cast<T>(static_cast<double>(x(l, c)) * static_cast<double>(numer(l, c)) / denom);
    }
}

}  // namespace dnmf::solvers
