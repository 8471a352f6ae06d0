// HALS: exact coordinate descent on 0.5 ||A - W H||² + l1 Σx + 0.5 l2 ||x||², one column x of H (or of Wᵀ) at
// a time, with numerator b = Wᵀa and Gram matrix G = WᵀW:
//
//   x_l <- max(0, x_l + (b_l - l1 - l2 x_l - (G x)_l) / (G_ll + l2))      for l = 0, 1, ..., k-1 in turn
//
// Each coordinate uses the ones already updated in this column (Gauss-Seidel). A coordinate whose
// G_ll + l2 is not above eps is a dead component and is left alone.
#pragma once

#include <algorithm>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

/// Updates columns [first, last) of x in place.
template <class T>
void hals_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                 index_t first, index_t last) {
  const index_t k = x.rows;
  // u_c = G x_c is kept up to date (a change δ of x_l adds δ G[:, l]) instead of a fresh k-term dot per
  // coordinate, and kGroup columns are swept side by side: a column's coordinates form one dependent chain
  // (dot or u_l, divide, clamp), and independent chains interleaved keep the core busy.
  constexpr index_t kGroup = 4;
  std::vector<double> u(to_size(kGroup * k));
  for (index_t c0 = first; c0 < last; c0 += kGroup) {
    const index_t nc = std::min(kGroup, last - c0);
    std::fill(u.begin(), u.end(), 0.0);
    for (index_t c = 0; c < nc; ++c) gram_times(g.data, g.ld, x.data + (c0 + c) * x.ld, k, u.data() + c * k);
    for (index_t l = 0; l < k; ++l) {
      const double diag = static_cast<double>(g(l, l)) + rule.l2;
      if (!(diag > rule.eps)) continue;  // a dead component: its numerator is zero as well
      const T* gl = g.data + l * g.ld;   // G is symmetric: row l is column l, which is contiguous
      for (index_t c = 0; c < nc; ++c) {
        double* uc = u.data() + c * k;
        T& xl = x(l, c0 + c);
        const auto old = static_cast<double>(xl);
        const double grad = static_cast<double>(numer(l, c0 + c)) - rule.l1 - rule.l2 * old - uc[l];
        xl = static_cast<T>(std::max(0.0, old + grad / diag));
        const double delta = static_cast<double>(xl) - old;
        if (delta != 0)
          for (index_t p = 0; p < k; ++p) uc[p] += delta * static_cast<double>(gl[p]);
      }
    }
  }
}

}  // namespace dnmf::solvers
