// HALS: exact coordinate descent on 0.5 ||A - W H||² + l1 Σx + 0.5 l2 ||x||², one column x of H (or of Wᵀ) at
// a time, with numerator b = Wᵀa and Gram matrix G = WᵀW:
//
//   x_l <- max(0, x_l + (b_l - l1 - l2 x_l - (G x)_l) / (G_ll + l2))      for l = 0, 1, ..., k-1 in turn
//
// Each coordinate uses the ones already updated in this column (Gauss-Seidel). A coordinate whose
// G_ll + l2 is not above eps is a dead component and is left alone.
#pragma once

#include <algorithm>

#include "backend/kernels.hpp"

namespace dnmf::solvers {

/// Updates columns [first, last) of x in place.
template <class T>
void hals_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                 index_t first, index_t last) {
  const index_t k = x.rows;
  for (index_t c = first; c < last; ++c)
    for (index_t l = 0; l < k; ++l) {
      const double diag = static_cast<double>(g(l, l)) + rule.l2;
      if (!(diag > rule.eps)) continue;  // a dead component: its numerator is zero as well
      double grad = static_cast<double>(numer(l, c)) - rule.l1 - rule.l2 * static_cast<double>(x(l, c));
      // G is symmetric: row l is column l, which is contiguous.
      const T* gl = g.data + l * g.ld;
      const T* xc = x.data + c * x.ld;
      for (index_t p = 0; p < k; ++p) grad -= static_cast<double>(gl[p]) * static_cast<double>(xc[p]);
      x(l, c) = static_cast<T>(std::max(0.0, static_cast<double>(x(l, c)) + grad / diag));
    }
}

}  // namespace dnmf::solvers
