// The per-column corrections of the masked iteration (docs/masked.md, "Cost"): sums over a column's listed
// entries, each a row y_i of the other factor (k contiguous values) with a coefficient c. They are most of the work
// a mask adds, and a row's dot waits on its loads, so four rows go side by side in explicit 4-wide double lanes
// (GCC/Clang vector types: AVX2 registers on the library's x86-64-v3 baseline, plain code elsewhere). Every sum is
// formed in double in an order fixed by k and the list, never by the thread count.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers {

/// Over a column's listed entries [p0, p1) (rows `row` of yt, k x rows, with coefficients `coef`):
/// gx += Σ c (y_iᵀx) y_i when gx is given (MU's G_j x without forming G_j), and returns Σ c (y_iᵀx)² (the quadratic
/// term of the column's error). With `weighted` (w·a per entry, a sparse column's entries) also b += Σ w a y_i, in
/// the same pass over the rows. Four entries at a time; each dot is lane_dot's sum.
template <class T>
double listed_products(const T* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                       const T* x, double* gx, const T* weighted = nullptr, double* b = nullptr) {
  double quad = 0;
  index_t p = p0;
  const index_t body = k / 4 * 4;
  for (; p + 4 <= p1; p += 4) {
    const T* y0 = yt + row[p] * k;
    const T* y1 = yt + row[p + 1] * k;
    const T* y2 = yt + row[p + 2] * k;
    const T* y3 = yt + row[p + 3] * k;
    Lanes a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    for (index_t l = 0; l < body; l += 4) {
      const Lanes xv = load_lanes(x + l);
      a0 += load_lanes(y0 + l) * xv;
      a1 += load_lanes(y1 + l) * xv;
      a2 += load_lanes(y2 + l) * xv;
      a3 += load_lanes(y3 + l) * xv;
    }
    for (index_t l = body; l < k; ++l) {
      const double xl = static_cast<double>(x[l]);
      a0[0] += static_cast<double>(y0[l]) * xl;
      a1[0] += static_cast<double>(y1[l]) * xl;
      a2[0] += static_cast<double>(y2[l]) * xl;
      a3[0] += static_cast<double>(y3[l]) * xl;
    }
    const double d0 = lane_sum(a0), d1 = lane_sum(a1), d2 = lane_sum(a2), d3 = lane_sum(a3);
    const double c0 = coef[p] * d0, c1 = coef[p + 1] * d1, c2 = coef[p + 2] * d2, c3 = coef[p + 3] * d3;
    quad += (c0 * d0 + c1 * d1) + (c2 * d2 + c3 * d3);
    if (weighted != nullptr) {
      const double w0 = static_cast<double>(weighted[p]), w1 = static_cast<double>(weighted[p + 1]);
      const double w2 = static_cast<double>(weighted[p + 2]), w3 = static_cast<double>(weighted[p + 3]);
      for (index_t l = 0; l < k; ++l)
        b[l] += (w0 * static_cast<double>(y0[l]) + w1 * static_cast<double>(y1[l])) +
                (w2 * static_cast<double>(y2[l]) + w3 * static_cast<double>(y3[l]));
    }
    if (gx == nullptr) continue;
    const Lanes v0 = {c0, c0, c0, c0}, v1 = {c1, c1, c1, c1}, v2 = {c2, c2, c2, c2}, v3 = {c3, c3, c3, c3};
    for (index_t l = 0; l < body; l += 4) {
      Lanes g;
      std::memcpy(&g, gx + l, sizeof g);
      g += (v0 * load_lanes(y0 + l) + v1 * load_lanes(y1 + l)) + (v2 * load_lanes(y2 + l) + v3 * load_lanes(y3 + l));
      std::memcpy(gx + l, &g, sizeof g);
    }
    for (index_t l = body; l < k; ++l)
      gx[l] += (c0 * static_cast<double>(y0[l]) + c1 * static_cast<double>(y1[l])) +
               (c2 * static_cast<double>(y2[l]) + c3 * static_cast<double>(y3[l]));
  }
  for (; p < p1; ++p) {
    const T* y = yt + row[p] * k;
    const double d = lane_dot(y, x, k), c = coef[p] * d;
    quad += c * d;
    if (weighted != nullptr)
      for (index_t l = 0; l < k; ++l) b[l] += static_cast<double>(weighted[p]) * static_cast<double>(y[l]);
    if (gx != nullptr)
      for (index_t l = 0; l < k; ++l) gx[l] += c * static_cast<double>(y[l]);
  }
  return quad;
}

/// b (k values) += Σ w_p y_p over the listed entries [p0, p1) (rows `row` of yt, k x rows, weights `w`): a sparse
/// column's numerator. Four columns of b at a time, held in registers over the whole list (four accumulators by
/// p mod 4, then lane_sum's order) instead of b being loaded and stored once per entry.
template <class T>
void listed_sum(const T* yt, index_t k, const index_t* row, const T* w, index_t p0, index_t p1, double* b) {
  const index_t body = k / 4 * 4;
  for (index_t l = 0; l < body; l += 4) {
    Lanes a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    index_t p = p0;
    const auto term = [&](index_t e) {
      const auto we = static_cast<double>(w[e]);
      return Lanes{we, we, we, we} * load_lanes(yt + row[e] * k + l);
    };
    for (; p + 4 <= p1; p += 4) {
      a0 += term(p);
      a1 += term(p + 1);
      a2 += term(p + 2);
      a3 += term(p + 3);
    }
    for (; p < p1; ++p) a0 += term(p);
    const Lanes sum = (a0 + a1) + (a2 + a3);
    for (index_t u = 0; u < 4; ++u) b[l + u] += sum[u];
  }
  for (index_t l = body; l < k; ++l) {
    double sum = 0;
    for (index_t p = p0; p < p1; ++p) sum += static_cast<double>(w[p]) * static_cast<double>(yt[row[p] * k + l]);
    b[l] += sum;
  }
}

namespace detail {

/// One block of listed_gram: rows [4·r0, 4·(r0 + RV)) x columns [4·cb, 4·cb + 4) of G, summed over the list in
/// registers (RV·4 accumulators), then added to G.
template <int RV>
void listed_gram_block(const double* const* rows, const double* coef, index_t count, index_t k, index_t r0, index_t cb,
                       double* g) {
  Lanes acc[RV][4] = {};
  const index_t c0 = 4 * cb;
  for (index_t q = 0; q < count; ++q) {
    const double* z = rows[q];
    const double c = coef[q];
    const Lanes cv = {c, c, c, c};
    Lanes zr[RV];
    for (int r = 0; r < RV; ++r) zr[r] = cv * load_lanes(z + 4 * (r0 + r));
    for (int t = 0; t < 4; ++t) {
      const double zt = z[c0 + t];
      const Lanes bt = {zt, zt, zt, zt};
      for (int r = 0; r < RV; ++r) acc[r][t] += zr[r] * bt;
    }
  }
  for (int t = 0; t < 4; ++t)
    for (int r = 0; r < RV; ++r) {
      double* col = g + (c0 + t) * k + 4 * (r0 + r);
      Lanes v;
      std::memcpy(&v, col, sizeof v);
      v += acc[r][t];
      std::memcpy(col, &v, sizeof v);
    }
}

}  // namespace detail

/// G (k x k, column-major) += Σ_q coef_q z_q z_qᵀ over `count` rows z_q of k doubles, for k a multiple of 4 (the
/// per-column weighted Gram matrix of masked HALS and BPP). Only the blocks on and above the diagonal are summed
/// (about half the flops of a general product), in register blocks of up to 12 x 4, then mirrored below; each
/// entry is summed over q in list order.
inline void listed_gram(const double* const* rows, const double* coef, index_t count, index_t k, double* g) {
  const index_t blocks = k / 4;
  for (index_t cb = 0; cb < blocks; ++cb)
    for (index_t r0 = 0; r0 <= cb; r0 += 3) {
      switch (std::min<index_t>(3, cb + 1 - r0)) {
        case 1:
          detail::listed_gram_block<1>(rows, coef, count, k, r0, cb, g);
          break;
        case 2:
          detail::listed_gram_block<2>(rows, coef, count, k, r0, cb, g);
          break;
        default:
          detail::listed_gram_block<3>(rows, coef, count, k, r0, cb, g);
          break;
      }
    }
  for (index_t q = 0; q < k; ++q)
    for (index_t l = q + 1; l < k; ++l) g[l + q * k] = g[q + l * k];
}

}  // namespace dnmf::solvers
