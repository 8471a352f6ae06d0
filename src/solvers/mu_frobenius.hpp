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
#include "solvers/lane_rows.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

namespace mu_detail {

/// mu_frobenius_update for k = K known at compile time (a multiple of 8) with eight columns in the lanes of V:
/// the denominators stay in K registers and the group's x and b are transposed once into lane rows
/// (lane_rows.hpp). Each column's operations and their order are the 4-wide kernel's (start, gram_times' sum
/// over p in order, finish), so the bits are too. Only column_rules_avx512.cpp instantiates it.
template <class T, class V, index_t K>
void update_fixed(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                  index_t first, index_t last) {
  static_assert(lane_rows::kWidth<V> == 8 && K % 8 == 0);
  const T* const gd = g.data;
  for (index_t c0 = first; c0 < last; c0 += 8) {
    const index_t nc = last - c0 > 8 ? 8 : last - c0;
    V xs[K], d[K];
    lane_rows::load_rows<V, K>(x.data + c0 * x.ld, x.ld, nc, xs);
    // Lane by lane (the same operations): written as whole vectors, these two loops made k = 24 slower than the
    // 4-wide kernel (0.64 against 0.52 ms per 10000 columns, bench_column_rules).
    for (index_t l = 0; l < K; ++l)
      for (index_t c = 0; c < 8; ++c) d[l][c] = rule.l1 + rule.l2 * xs[l][c] + rule.eps;
#pragma GCC unroll 32
    for (index_t p = 0; p < K; ++p)
#pragma GCC unroll 32
      for (index_t l = 0; l < K; ++l) d[l] += static_cast<double>(gd[l + p * g.ld]) * xs[p];
    V bs[K];
    lane_rows::load_rows<V, K>(numer.data + c0 * numer.ld, numer.ld, nc, bs);
    for (index_t l = 0; l < K; ++l)
      for (index_t c = 0; c < 8; ++c) xs[l][c] = xs[l][c] * bs[l][c] / d[l][c];
    lane_rows::store_rows<V, K>(xs, x.data + c0 * x.ld, x.ld, nc);
  }
}

}  // namespace mu_detail

namespace avx512 {
/// mu_frobenius_update with eight columns per AVX-512 register for k = 8, 16 or 24 (column_rules_avx512.cpp,
/// built with -mavx512f, for T = float and double: call only where listed_gram_wide() says the CPU has AVX-512F).
/// Same bits as the 4-wide kernel.
template <class T>
void mu_frobenius_update_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                              backend::CView<T> g, index_t first, index_t last);
}  // namespace avx512

/// True when mu_frobenius_update_wide takes this k (`bench_column_rules`: 1.1-1.3x the 4-wide kernel at k = 8, 16
/// and 24; at k = 32 the denominators no longer fit beside the rest in the registers and it gained 8%).
inline bool mu_frobenius_wide_for(index_t k) { return k % 8 == 0 && k > 0 && k <= 24; }

/// mu_frobenius_update with the library's own 4-wide kernel, for T = float and double (for tests comparing the two
/// kernels).
template <class T>
void mu_frobenius_update_four_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                                   backend::CView<T> g, index_t first, index_t last);

/// Updates columns [first, last) of x in place.
template <class T>
[[gnu::visibility("hidden")]] void mu_frobenius_update(const backend::UpdateRule& rule, backend::View<T> x,
                                                       backend::CView<T> numer, backend::CView<T> g, index_t first,
                                                       index_t last) {
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
