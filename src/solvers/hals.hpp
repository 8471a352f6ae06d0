// HALS: exact coordinate descent on 0.5 ||A - W H||² + l1 Σx + 0.5 l2 ||x||², one column x of H (or of Wᵀ) at
// a time, with numerator b = Wᵀa and Gram matrix G = WᵀW:
//
//   x_l <- max(0, x_l + (b_l - l1 - l2 x_l - (G x)_l) / (G_ll + l2))      for l = 0, 1, ..., k-1 in turn
//
// Each coordinate uses the ones already updated in this column (Gauss-Seidel). A coordinate whose
// G_ll + l2 is not above eps is a dead component (the other factor's row l is zero, so b_l and G's row l are too):
// without an L1 penalty its objective is flat and it is left alone; with one, l1 x_l alone is minimised, at 0 (left
// alone, a converged penalised fit's W kept stale columns that its transform(X) sets to 0).
#pragma once

#include <cstddef>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "solvers/lane_rows.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

namespace hals_detail {

// Templates of the lane vector V only (lane_rows.hpp says why).
using lane_rows::clamp_rounded;
using lane_rows::kWidth;
using lane_rows::load_rows;
using lane_rows::row_lanes;
using lane_rows::store_rows;

/// hals_update with the columns in the lanes of V (hals_update: 4-wide; column_rules_avx512.cpp: 8-wide). Per
/// column, every operation is the same whatever V's width, so both give the same bits.
template <class T, class V>
void update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
            index_t first, index_t last) {
  constexpr index_t kLanes = kWidth<V>;
  const index_t k = x.rows;
  // kLanes columns are swept side by side, one per lane: a column's coordinates form one dependent chain (u_l,
  // divide, clamp, update of u), and the lanes take kLanes such chains per instruction; two groups are
  // interleaved to overlap their chains. u_c = G x_c is kept up to date (a change δ of x_l adds δ G[:, l]; only
  // the entries past l are read again) instead of a fresh k-term dot per coordinate. Per column, every operation
  // is the scalar rule's: the lanes sum G x_c over the components in order as gram_times does, and an unchanged
  // coordinate (δ = 0) adds zero.
  constexpr index_t kGroups = 2;
  constexpr index_t kBlock = kLanes * kGroups;
  std::vector<V> u(static_cast<std::size_t>(kGroups * k));
  const T* const gd = g.data;
  for (index_t c0 = first; c0 < last; c0 += kBlock) {
    index_t nc[kGroups];
    for (index_t q = 0; q < kGroups; ++q) {
      const index_t left = last - c0 - kLanes * q;
      nc[q] = left < 0 ? 0 : (left > kLanes ? kLanes : left);
    }
    V* const uq[kGroups] = {u.data(), u.data() + k};
    for (index_t q = 0; q < kGroups; ++q)
      for (index_t l = 0; l < k; ++l) uq[q][l] = V{};
    for (index_t p = 0; p < k; ++p) {
      for (index_t q = 0; q < kGroups; ++q) {
        const V xp = row_lanes<V>(x.data + (c0 + kLanes * q) * x.ld + p, x.ld, nc[q]);
        for (index_t l = 0; l < k; ++l) uq[q][l] += static_cast<double>(gd[l + p * g.ld]) * xp;
      }
    }
    for (index_t l = 0; l < k; ++l) {
      const double diag = static_cast<double>(gd[l + l * g.ld]) + rule.l2;
      const bool dead = !(diag > rule.eps);
      if (dead && !(rule.l1 > 0)) continue;  // a dead component without an L1 penalty: left alone
      const T* gl = gd + l * g.ld;           // G is symmetric: row l is column l, which is contiguous
      for (index_t q = 0; q < kGroups; ++q) {
        if (nc[q] == 0) continue;
        T* xl = x.data + (c0 + kLanes * q) * x.ld + l;
        const V old = row_lanes<V>(xl, x.ld, nc[q]);
        const V b = row_lanes<V>(numer.data + (c0 + kLanes * q) * numer.ld + l, numer.ld, nc[q]);
        const V grad = b - rule.l1 - rule.l2 * old - uq[q][l];
        const V rounded = dead ? V{} : clamp_rounded<T>(old + grad / diag);
        for (index_t c = 0; c < nc[q]; ++c) xl[c * x.ld] = static_cast<T>(rounded[c]);
        const V delta = rounded - old;
        for (index_t p = l + 1; p < k; ++p) uq[q][p] += delta * static_cast<double>(gl[p]);
      }
    }
  }
}

/// update for k = K known at compile time (a multiple of 8, V 8-wide), one group of columns at a time: u_c = G x_c
/// stays in K registers (32 vector registers hold it where 16 do not, so only the AVX-512 file instantiates it)
/// and the group's x and b are transposed once into lane rows. Each column's operations, and their order, are
/// update's.
template <class T, class V, index_t K>
void update_fixed(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                  index_t first, index_t last) {
  constexpr index_t kLanes = kWidth<V>;
  static_assert(kLanes == 8 && K % 8 == 0);
  const T* const gd = g.data;
  for (index_t c0 = first; c0 < last; c0 += kLanes) {
    const index_t nc = last - c0 > kLanes ? kLanes : last - c0;
    V xs[K], bs[K], u[K];
    load_rows<V, K>(x.data + c0 * x.ld, x.ld, nc, xs);
    load_rows<V, K>(numer.data + c0 * numer.ld, numer.ld, nc, bs);
#pragma GCC unroll 32
    for (index_t l = 0; l < K; ++l) u[l] = V{};
#pragma GCC unroll 32
    for (index_t p = 0; p < K; ++p)
#pragma GCC unroll 32
      for (index_t l = 0; l < K; ++l) u[l] += static_cast<double>(gd[l + p * g.ld]) * xs[p];
#pragma GCC unroll 32
    for (index_t l = 0; l < K; ++l) {
      const double diag = static_cast<double>(gd[l + l * g.ld]) + rule.l2;
      const bool dead = !(diag > rule.eps);
      if (dead && !(rule.l1 > 0)) continue;  // a dead component without an L1 penalty: left alone
      const T* gl = gd + l * g.ld;
      const V old = xs[l];
      const V grad = bs[l] - rule.l1 - rule.l2 * old - u[l];
      const V rounded = dead ? V{} : clamp_rounded<T>(old + grad / diag);
      xs[l] = rounded;
      const V delta = rounded - old;
#pragma GCC unroll 32
      for (index_t p = l + 1; p < K; ++p) u[p] += delta * static_cast<double>(gl[p]);
    }
    store_rows<V, K>(xs, x.data + c0 * x.ld, x.ld, nc);
  }
}

}  // namespace hals_detail

namespace avx512 {
/// hals_update with eight columns per AVX-512 register (column_rules_avx512.cpp, built with -mavx512f, for T =
/// float and double: call only where listed_gram_wide() says the CPU has AVX-512F). Same bits as the 4-wide kernel.
template <class T>
void hals_update_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                      index_t first, index_t last);
}  // namespace avx512

/// hals_update with the library's own 4-wide kernel whatever the CPU, for T = float and double (for tests comparing
/// the two kernels: a test file's instantiation of hals_update is built for another instruction set and may round
/// differently).
template <class T>
void hals_update_four_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                           backend::CView<T> g, index_t first, index_t last);

/// Updates columns [first, last) of x in place, four columns per AVX2 register.
template <class T>
[[gnu::visibility("hidden")]] void hals_update(const backend::UpdateRule& rule, backend::View<T> x,
                                               backend::CView<T> numer, backend::CView<T> g, index_t first,
                                               index_t last) {
  hals_detail::update<T, Lanes>(rule, x, numer, g, first, last);
}

}  // namespace dnmf::solvers
