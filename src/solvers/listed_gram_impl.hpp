// listed_gram's register blocks, written once for any lane width: listed_gram.cpp instantiates them with 4-wide
// lanes (the library's AVX2 baseline) and listed_gram_avx512.cpp with 8-wide ones (built with -mavx512f). Each
// entry of G is (c_q z_qa) · z_qb added in q order by either width, so both give the same bits.
#pragma once

#include <algorithm>
#include <cstring>

#include "dnmf/index.hpp"

namespace dnmf::solvers::gram_impl {

/// to[0..W) += acc: a register block's sums added to G (unaligned).
template <class V>
[[gnu::always_inline]] inline void add_into(double* to, const V& acc) {
  V v;
  std::memcpy(&v, to, sizeof v);
  v += acc;
  std::memcpy(to, &v, sizeof v);
}

/// Rows [W·r0, W·(r0 + RV)) x columns [W·cb, W·cb + W) of G, summed over the list in RV·W registers of W doubles
/// (V), then added to G.
template <class V, int W, int RV>
void block(const double* const* rows, const double* coef, index_t count, index_t k, index_t r0, index_t cb, double* g) {
  V acc[RV][W] = {};
  const index_t c0 = W * cb;
  for (index_t q = 0; q < count; ++q) {
    const double* z = rows[q];
    const double c = coef[q];
    V zr[RV];
    for (int r = 0; r < RV; ++r) {
      V v;
      std::memcpy(&v, z + W * (r0 + r), sizeof v);
      zr[r] = c * v;
    }
    for (int t = 0; t < W; ++t) {
      const double zt = z[c0 + t];
      for (int r = 0; r < RV; ++r) acc[r][t] += zr[r] * zt;
    }
  }
  for (int t = 0; t < W; ++t)
    for (int r = 0; r < RV; ++r) add_into(g + (c0 + t) * k + W * (r0 + r), acc[r][t]);
}

/// All three blocks on and above the diagonal of a k = 2W Gram matrix in one pass over the list (3W registers):
/// each listed row is gathered once instead of once per block column (k = 16 in 8-wide lanes). Every entry gets
/// block()'s products in block()'s order, so the same bits.
template <class V, int W>
void upper_two(const double* const* rows, const double* coef, index_t count, double* g) {
  V a00[W] = {}, a01[W] = {}, a11[W] = {};
  for (index_t q = 0; q < count; ++q) {
    const double* z = rows[q];
    const double c = coef[q];
    V v0, v1;
    std::memcpy(&v0, z, sizeof v0);
    std::memcpy(&v1, z + W, sizeof v1);
    const V z0 = c * v0, z1 = c * v1;
    for (int t = 0; t < W; ++t) a00[t] += z0 * z[t];
    for (int t = 0; t < W; ++t) {
      const double zt = z[W + t];
      a01[t] += z0 * zt;
      a11[t] += z1 * zt;
    }
  }
  constexpr index_t k = 2 * W;
  for (int t = 0; t < W; ++t) {
    add_into(g + t * k, a00[t]);
    add_into(g + (W + t) * k, a01[t]);
    add_into(g + (W + t) * k + W, a11[t]);
  }
}

/// The blocks on and above the diagonal (k a multiple of W), up to three register rows of blocks at a time.
template <class V, int W>
void upper(const double* const* rows, const double* coef, index_t count, index_t k, double* g) {
  const index_t blocks = k / W;
  if (blocks == 2) {
    upper_two<V, W>(rows, coef, count, g);
    return;
  }
  for (index_t cb = 0; cb < blocks; ++cb)
    for (index_t r0 = 0; r0 <= cb; r0 += 3) {
      switch (std::min<index_t>(3, cb + 1 - r0)) {
        case 1:
          block<V, W, 1>(rows, coef, count, k, r0, cb, g);
          break;
        case 2:
          block<V, W, 2>(rows, coef, count, k, r0, cb, g);
          break;
        default:
          block<V, W, 3>(rows, coef, count, k, r0, cb, g);
          break;
      }
    }
}

}  // namespace dnmf::solvers::gram_impl
