// HALS: exact coordinate descent on 0.5 ||A - W H||² + l1 Σx + 0.5 l2 ||x||², one column x of H (or of Wᵀ) at
// a time, with numerator b = Wᵀa and Gram matrix G = WᵀW:
//
//   x_l <- max(0, x_l + (b_l - l1 - l2 x_l - (G x)_l) / (G_ll + l2))      for l = 0, 1, ..., k-1 in turn
//
// Each coordinate uses the ones already updated in this column (Gauss-Seidel). A coordinate whose
// G_ll + l2 is not above eps is a dead component and is left alone.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

namespace detail {

/// The group's four columns of row l of x (or of numer) in lanes, zeros past the group's `nc` columns.
template <class T>
[[gnu::always_inline]] inline Lanes row_lanes(const T* row, index_t ld, index_t nc) {
  if (nc == 4) {
    return Lanes{static_cast<double>(row[0]), static_cast<double>(row[ld]), static_cast<double>(row[2 * ld]),
                 static_cast<double>(row[3 * ld])};
  }
  Lanes v = {0, 0, 0, 0};
  for (index_t c = 0; c < nc; ++c) v[c] = static_cast<double>(row[c * ld]);
  return v;
}

/// max(0, v) in each lane as std::max(0.0, v) gives it (a NaN gives 0), rounded to T and back.
template <class T>
[[gnu::always_inline]] inline Lanes clamp_rounded(Lanes v) {
  const Lanes zero = {0, 0, 0, 0};
  const Lanes clamped = zero < v ? v : zero;
  if constexpr (std::is_same_v<T, double>) {
    return clamped;
  } else {
    using Narrow = float __attribute__((vector_size(16)));  // T is float here
    return __builtin_convertvector(__builtin_convertvector(clamped, Narrow), Lanes);
  }
}

}  // namespace detail

/// Updates columns [first, last) of x in place.
template <class T>
void hals_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                 index_t first, index_t last) {
  const index_t k = x.rows;
  // Four columns are swept side by side, one per lane: a column's coordinates form one dependent chain (u_l,
  // divide, clamp, update of u), and the lanes take four such chains per instruction; two groups are
  // interleaved to overlap their chains. u_c = G x_c is kept up to date (a change δ of x_l adds δ G[:, l])
  // instead of a fresh k-term dot per coordinate. Per column, every operation is the scalar rule's: the lanes
  // sum G x_c over the components in order as gram_times does, and an unchanged coordinate (δ = 0) adds zero.
  constexpr index_t kGroups = 2;
  constexpr index_t kWidth = 4 * kGroups;
  std::vector<Lanes> u(to_size(kGroups * k));
  for (index_t c0 = first; c0 < last; c0 += kWidth) {
    index_t nc[kGroups];
    for (index_t q = 0; q < kGroups; ++q) nc[q] = std::clamp<index_t>(last - c0 - 4 * q, 0, 4);
    Lanes* const uq[kGroups] = {u.data(), u.data() + k};
    for (index_t q = 0; q < kGroups; ++q) std::fill(uq[q], uq[q] + k, Lanes{0, 0, 0, 0});
    for (index_t p = 0; p < k; ++p) {
      for (index_t q = 0; q < kGroups; ++q) {
        const Lanes xp = detail::row_lanes(x.data + (c0 + 4 * q) * x.ld + p, x.ld, nc[q]);
        for (index_t l = 0; l < k; ++l) uq[q][l] += static_cast<double>(g(l, p)) * xp;
      }
    }
    for (index_t l = 0; l < k; ++l) {
      const double diag = static_cast<double>(g(l, l)) + rule.l2;
      if (!(diag > rule.eps)) continue;  // a dead component: its numerator is zero as well
      const T* gl = g.data + l * g.ld;   // G is symmetric: row l is column l, which is contiguous
      for (index_t q = 0; q < kGroups; ++q) {
        if (nc[q] == 0) continue;
        T* xl = x.data + (c0 + 4 * q) * x.ld + l;
        const Lanes old = detail::row_lanes(xl, x.ld, nc[q]);
        const Lanes b = detail::row_lanes(numer.data + (c0 + 4 * q) * numer.ld + l, numer.ld, nc[q]);
        const Lanes grad = b - rule.l1 - rule.l2 * old - uq[q][l];
        const Lanes rounded = detail::clamp_rounded<T>(old + grad / diag);
        for (index_t c = 0; c < nc[q]; ++c) xl[c * x.ld] = static_cast<T>(rounded[c]);
        const Lanes delta = rounded - old;
        for (index_t p = 0; p < k; ++p) uq[q][p] += delta * static_cast<double>(gl[p]);
      }
    }
  }
}

}  // namespace dnmf::solvers
