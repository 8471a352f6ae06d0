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

namespace detail {

/// out (k values) += (s0 y0 + s1 y1) + (s2 y2 + s3 y3), in 4-wide lanes with the tail in the same order.
template <class T>
[[gnu::always_inline]] inline void add_four_rows(double* out, const double (&s)[4], const T* y0, const T* y1,
                                                 const T* y2, const T* y3, index_t k) {
  const index_t body = k / 4 * 4;
  const Lanes v0 = splat(s[0]), v1 = splat(s[1]), v2 = splat(s[2]), v3 = splat(s[3]);
  for (index_t l = 0; l < body; l += 4)
    store_lanes(out + l, load_lanes(out + l) + ((v0 * load_lanes(y0 + l) + v1 * load_lanes(y1 + l)) +
                                                (v2 * load_lanes(y2 + l) + v3 * load_lanes(y3 + l))));
  for (index_t l = body; l < k; ++l)
    out[l] += (s[0] * static_cast<double>(y0[l]) + s[1] * static_cast<double>(y1[l])) +
              (s[2] * static_cast<double>(y2[l]) + s[3] * static_cast<double>(y3[l]));
}

}  // namespace detail

/// True when the listed kernels run their AVX-512 forms: the CPU has AVX-512F and DNMF_SKINNY does not keep AVX2.
bool listed_gram_wide();

namespace avx512 {
/// listed_products for k = 8, 16, 24 or 32 in 8-wide lanes (listed_products_avx512.cpp, built with -mavx512f: call
/// only where listed_gram_wide() says so). Its sums are formed in another order than the 4-wide kernel's.
double listed_products_wide(const double* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                            const double* x, double* gx, const double* weighted, double* b);
double listed_products_wide(const float* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                            const float* x, double* gx, const float* weighted, double* b);
}  // namespace avx512

/// True when listed_products runs the 8-wide kernel for this k.
inline bool listed_products_wide_for(index_t k) { return k % 8 == 0 && k > 0 && k <= 32 && listed_gram_wide(); }

/// Over a column's listed entries [p0, p1) (rows `row` of yt, k x rows, with coefficients `coef`):
/// gx += Σ c (y_iᵀx) y_i when gx is given (MU's G_j x without forming G_j), and returns Σ c (y_iᵀx)² (the quadratic
/// term of the column's error). With `weighted` (w·a per entry, a sparse column's entries) also b += Σ w a y_i, in
/// the same pass over the rows. Four entries at a time, each dot lane_dot's sum; eight at a time with AVX-512
/// where listed_products_wide_for(k).
template <class T>
double listed_products(const T* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                       const T* x, double* gx, const T* weighted = nullptr, double* b = nullptr) {
  if (listed_products_wide_for(k)) return avx512::listed_products_wide(yt, k, row, coef, p0, p1, x, gx, weighted, b);
  double quad = 0;
  index_t p = p0;
  const index_t body = k / 4 * 4;
  for (; p + 4 <= p1; p += 4) {
    const T* y0 = yt + row[p] * k;
    const T* y1 = yt + row[p + 1] * k;
    const T* y2 = yt + row[p + 2] * k;
    const T* y3 = yt + row[p + 3] * k;
    Lanes a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    // b's sum needs no dot: it is added while the rows are loaded for theirs (one load of each row for both).
    double w[4] = {0, 0, 0, 0};
    if (weighted != nullptr)
      for (int e = 0; e < 4; ++e) w[e] = static_cast<double>(weighted[p + e]);
    const Lanes w0 = splat(w[0]), w1 = splat(w[1]), w2 = splat(w[2]), w3 = splat(w[3]);
    for (index_t l = 0; l < body; l += 4) {
      const Lanes xv = load_lanes(x + l);
      const Lanes v0 = load_lanes(y0 + l), v1 = load_lanes(y1 + l), v2 = load_lanes(y2 + l), v3 = load_lanes(y3 + l);
      a0 += v0 * xv;
      a1 += v1 * xv;
      a2 += v2 * xv;
      a3 += v3 * xv;
      if (weighted != nullptr) store_lanes(b + l, load_lanes(b + l) + ((w0 * v0 + w1 * v1) + (w2 * v2 + w3 * v3)));
    }
    for (index_t l = body; l < k; ++l) {
      const double xl = static_cast<double>(x[l]);
      const double v0 = static_cast<double>(y0[l]), v1 = static_cast<double>(y1[l]);
      const double v2 = static_cast<double>(y2[l]), v3 = static_cast<double>(y3[l]);
      a0[0] += v0 * xl;
      a1[0] += v1 * xl;
      a2[0] += v2 * xl;
      a3[0] += v3 * xl;
      if (weighted != nullptr) b[l] += (w[0] * v0 + w[1] * v1) + (w[2] * v2 + w[3] * v3);
    }
    const Lanes d = lane_sums(a0, a1, a2, a3), cd = load_lanes(coef + p) * d;
    const double c0 = cd[0], c1 = cd[1], c2 = cd[2], c3 = cd[3];
    const Lanes q = cd * d;
    quad += (q[0] + q[1]) + (q[2] + q[3]);
    if (gx == nullptr) continue;
    const double c[4] = {c0, c1, c2, c3};
    detail::add_four_rows(gx, c, y0, y1, y2, y3, k);
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

namespace detail {

/// listed_sum's lane groups [g0, g0 + NG) of b (4 values each) in one pass over the list: each row's groups are
/// loaded together (one gather of the row instead of one per group), and every group keeps its own four
/// accumulators by e mod 4, so each value of b is summed in the order a pass per group would sum it.
template <int NG, class T>
[[gnu::always_inline]] inline void listed_sum_groups(const T* yt, index_t k, const index_t* row, const T* w, index_t p0,
                                                     index_t p1, index_t g0, double* b) {
  Lanes acc[NG][4];
  for (int g = 0; g < NG; ++g)
    for (int a = 0; a < 4; ++a) acc[g][a] = splat(0);
  const auto add = [&](index_t e, int a) {
    const Lanes we = splat(static_cast<double>(w[e]));
    const T* y = yt + row[e] * k + 4 * g0;
    for (int g = 0; g < NG; ++g) acc[g][a] += we * load_lanes(y + 4 * g);
  };
  index_t p = p0;
  for (; p + 4 <= p1; p += 4) {
    add(p, 0);
    add(p + 1, 1);
    add(p + 2, 2);
    add(p + 3, 3);
  }
  for (; p < p1; ++p) add(p, 0);
  for (int g = 0; g < NG; ++g) {
    const Lanes sum = (acc[g][0] + acc[g][1]) + (acc[g][2] + acc[g][3]);
    for (index_t u = 0; u < 4; ++u) b[4 * (g0 + g) + u] += sum[u];
  }
}

}  // namespace detail

/// b (k values) += Σ_{p in [p0, p1)} w[p] y_{row[p]}: a sparse column's b_j = Σ w_ij a_ij y_i, with w the
/// column's numerator. Three groups of four values of b at a time, held in registers over the whole list (four
/// accumulators each by p mod 4, then lane_sum's order) instead of b being loaded and stored once per entry.
template <class T>
void listed_sum(const T* yt, index_t k, const index_t* row, const T* w, index_t p0, index_t p1, double* b) {
  const index_t groups = k / 4, body = groups * 4;
  index_t g0 = 0;
  for (; g0 + 3 <= groups; g0 += 3) detail::listed_sum_groups<3>(yt, k, row, w, p0, p1, g0, b);
  if (groups - g0 == 2) detail::listed_sum_groups<2>(yt, k, row, w, p0, p1, g0, b);
  if (groups - g0 == 1) detail::listed_sum_groups<1>(yt, k, row, w, p0, p1, g0, b);
  for (index_t l = body; l < k; ++l) {
    double sum = 0;
    for (index_t p = p0; p < p1; ++p) sum += static_cast<double>(w[p]) * static_cast<double>(yt[row[p] * k + l]);
    b[l] += sum;
  }
}

namespace avx512 {
/// listed_gram's blocks on and above the diagonal in 8-wide lanes, for k a multiple of 8 (listed_gram_avx512.cpp,
/// built with -mavx512f: call only where listed_gram_wide() says so).
void listed_gram_upper(const double* const* rows, const double* coef, index_t count, index_t k, double* g);
}  // namespace avx512

/// G (k x k, column-major) += Σ_q coef_q z_q z_qᵀ over `count` rows z_q of k doubles, for k a multiple of 4 (the
/// per-column weighted Gram matrix of masked BPP). Only the blocks on and above the diagonal are summed (about
/// half the flops of a general product), in register blocks of up to 12 x 4 (24 x 8 with AVX-512 and k a
/// multiple of 8), then mirrored below; each entry is summed over q in list order, the same bits either way
/// (listed_gram.cpp).
void listed_gram(const double* const* rows, const double* coef, index_t count, index_t k, double* g);

/// listed_gram with the 4-wide blocks whatever the CPU (for tests comparing the two kernels).
void listed_gram_four_wide(const double* const* rows, const double* coef, index_t count, index_t k, double* g);

}  // namespace dnmf::solvers
