// Masked HALS's column sweep without forming the column's Gram matrix (docs/masked.md, "Cost"). With
// G = F + Σ_q c_q y_q y_qᵀ over a column's listed rows, the sweep needs (G x)_l at each component l. It keeps
// r_q = y_qᵀx for every listed row: (G x)_l = (F x)_l + Σ_q c_q y_ql r_q, and a change δ of x_l adds δ y_ql to
// each r_q. That is 3 multiply-adds per listed row and component (the r update, the product, the diagonal; a
// fourth multiply when the coefficients differ) against the ≈1.25·s·k² of forming G, and with the rows stored
// transposed (component l's values of all listed rows contiguous) both loops run in 4-wide lanes. When every
// coefficient is one value (a 0/1 mask, unit weights) no coefficient array is read. Every sum is formed in an
// order fixed by k and the list, never by the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "dnmf/index.hpp"
#include "solvers/listed_products.hpp"

namespace dnmf::solvers {

/// One thread's buffers for listed_hals_sweep, reused between columns.
struct ListedColumns {
  std::vector<double> z;     ///< k x sp: z[l·sp + q] = y_ql (sp = the list length rounded up to 4, zero padded)
  std::vector<double> c;     ///< the coefficients, zero padded (lists whose coefficients differ)
  std::vector<double> r;     ///< y_qᵀx at the current x
  std::vector<double> xd;    ///< x in double
  std::vector<double> tail;  ///< the last group's rows as doubles, zero padded to four rows (4 x k)
};

/// The fixed-penalty part of HALS's column rule (hals.hpp): x_l ← max(0, x_l + (b_l − l1 − l2 x_l − (Gx)_l) /
/// (G_ll + l2)), components whose G_ll + l2 ≤ eps held as they are.
struct SweepRule {
  double l1 = 0, l2 = 0, eps = 0;
  /// The rounding a corrected curvature F_ll − Σ y_ql² can carry, as a fraction of F_ll + Σ y_ql²
  /// (cancelled_fraction(rows)); below it the curvature is taken as zero.
  double cancelled = 0;
};

/// SweepRule::cancelled for an F summed over `rows` rows in double: sums of that many terms round by about
/// √rows·ε each, and 8 of those separate the residue of an exact zero (2e-16 to 3e-16 of F_ll measured on 30
/// rows) from real curvatures, down to those of weights of 1e-11 or of rows with y_l at 1e-5 of the others'.
inline double cancelled_fraction(index_t rows) {
  return 8 * std::numeric_limits<double>::epsilon() * std::sqrt(static_cast<double>(std::max<index_t>(rows, 1)));
}

/// A column's list: rows row[0..count) of the other factor with coefficients coef[0..count), or, with coef ==
/// nullptr, every coefficient equal to `common` (a 0/1 mask corrects the full Gram with -1 throughout; stored
/// entries of unit weight sum it with +1): then the sweep reads no coefficient array.
struct ListedRows {
  const index_t* row = nullptr;
  const double* coef = nullptr;
  double common = 0;
  index_t count = 0;
};

namespace detail {

/// One pass over component l's listed values z (sp of them, a multiple of 4): with kUpdate, first r += d · z_prev
/// (the previous component's change); then returns Σ c_q z_q r_q and, in diag, Σ c_q z_q² (c = 1 with
/// kCommon: the caller scales). Sixteen entries per step in four sets of lanes (q mod 16; a short tail's groups
/// of four go to the sets in order), so every sum's order is fixed by sp, and four chains hide the FMA latency.
template <bool kCommon, bool kUpdate>
inline double column_pass(double* __restrict r, double d, const double* __restrict z_prev, const double* __restrict c,
                          const double* __restrict z, index_t sp, double& diag) {
  const Lanes dv = splat(d);
  Lanes s[4] = {splat(0), splat(0), splat(0), splat(0)};
  Lanes g[4] = {splat(0), splat(0), splat(0), splat(0)};
  const auto step = [&](index_t q, int t) {
    Lanes rv = load_lanes(r + q);
    if constexpr (kUpdate) {
      rv += dv * load_lanes(z_prev + q);
      store_lanes(r + q, rv);
    }
    const Lanes zv = load_lanes(z + q);
    if constexpr (kCommon) {
      s[t] += zv * rv;
      g[t] += zv * zv;
    } else {
      const Lanes cz = load_lanes(c + q) * zv;
      s[t] += cz * rv;
      g[t] += cz * zv;
    }
  };
  index_t q = 0;
  for (; q + 16 <= sp; q += 16) {
    step(q, 0);
    step(q + 4, 1);
    step(q + 8, 2);
    step(q + 12, 3);
  }
  for (int t = 0; q < sp; q += 4, ++t) step(q, t);
  diag = lane_sum((g[0] + g[1]) + (g[2] + g[3]));
  return lane_sum((s[0] + s[1]) + (s[2] + s[3]));
}

/// Stores four listed rows y0..y3 (k values each) transposed into z (the list position's column of the k x sp
/// array), in 4 x 4 blocks turned in registers. Returns their products y_rᵀx as lanes (each summed by l mod 4,
/// then the tail); with wa (the rows' w·a) also adds Σ_r wa_r y_r to b. The row pointers are separate restrict
/// arguments so that the stores into z do not make the compiler reload them.
template <class T>
[[gnu::always_inline]] inline Lanes store_transposed(const T* __restrict y0, const T* __restrict y1,
                                                     const T* __restrict y2, const T* __restrict y3,
                                                     const double* __restrict x, index_t k, index_t sp,
                                                     double* __restrict z, const double* wa, double* __restrict b) {
  const index_t body = k / 4 * 4;
  Lanes d0 = splat(0), d1 = d0, d2 = d0, d3 = d0;  // by l mod 4: four short chains instead of one long one
  for (index_t l = 0; l < body; l += 4) {
    const Lanes v0 = load_lanes(y0 + l), v1 = load_lanes(y1 + l);
    const Lanes v2 = load_lanes(y2 + l), v3 = load_lanes(y3 + l);
    if (wa != nullptr) {
      const Lanes sum = (wa[0] * v0 + wa[1] * v1) + (wa[2] * v2 + wa[3] * v3);
      store_lanes(b + l, load_lanes(b + l) + sum);
    }
    const Lanes lo01 = __builtin_shufflevector(v0, v1, 0, 4, 2, 6), hi01 = __builtin_shufflevector(v0, v1, 1, 5, 3, 7);
    const Lanes lo23 = __builtin_shufflevector(v2, v3, 0, 4, 2, 6), hi23 = __builtin_shufflevector(v2, v3, 1, 5, 3, 7);
    const Lanes w0 = __builtin_shufflevector(lo01, lo23, 0, 1, 4, 5),
                w1 = __builtin_shufflevector(hi01, hi23, 0, 1, 4, 5);
    const Lanes w2 = __builtin_shufflevector(lo01, lo23, 2, 3, 6, 7),
                w3 = __builtin_shufflevector(hi01, hi23, 2, 3, 6, 7);
    store_lanes(z + l * sp, w0);
    store_lanes(z + (l + 1) * sp, w1);
    store_lanes(z + (l + 2) * sp, w2);
    store_lanes(z + (l + 3) * sp, w3);
    d0 += w0 * splat(x[l]);
    d1 += w1 * splat(x[l + 1]);
    d2 += w2 * splat(x[l + 2]);
    d3 += w3 * splat(x[l + 3]);
  }
  Lanes dots = (d0 + d1) + (d2 + d3);
  const T* const y[4] = {y0, y1, y2, y3};
  for (index_t l = body; l < k; ++l)
    for (index_t u = 0; u < 4; ++u) {
      const auto v = static_cast<double>(y[u][l]);
      z[l * sp + u] = v;
      dots[u] += v * x[l];
      if (wa != nullptr) b[l] += wa[u] * v;
    }
  return dots;
}

/// The component loop of listed_hals_sweep once z, r, fx and b are in place; returns Σ c_q (y_qᵀx)² at the new x
/// when want_quad, else 0.
template <bool kCommon, class T>
double sweep_components(index_t k, index_t sp, const double* c, double common, const double* full,
                        const SweepRule& rule, const double* b, double* fx, T* x, double* z, double* r,
                        bool want_quad) {
  const double scale = kCommon ? common : 1.0;
  double pending = 0;  // the last change of x, not yet added to r
  index_t pending_l = 0;
  for (index_t l = 0; l < k; ++l) {
    double listed_diag = 0;
    const double* zl = z + l * sp;
    const double* zp = z + pending_l * sp;
    const double listed = scale * (pending != 0 ? column_pass<kCommon, true>(r, pending, zp, c, zl, sp, listed_diag)
                                                : column_pass<kCommon, false>(r, 0, zp, c, zl, sp, listed_diag));
    listed_diag *= scale;
    pending = 0;
    const double full_ll = full != nullptr ? full[l * k + l] : 0.0;
    double curvature = full_ll + listed_diag;
    // A 0/1 mask's list subtracts its rows' share from F's: where no observed row has y_l non-zero the two equal
    // sums, formed in different orders, left a residue of a few ε·F_ll instead of zero, and the step divided one
    // residue by another (x_l went from 0.3 to 2.3, moving the model at the missing entries). A curvature within
    // the sums' rounding is taken as the zero it is, so that the component is left alone, as hals.hpp leaves a
    // dead one.
    if (listed_diag < 0 && curvature <= rule.cancelled * (full_ll - listed_diag)) curvature = 0;
    const double diag = curvature + rule.l2;
    const bool dead = !(diag > rule.eps);
    if (dead && !(rule.l1 > 0)) continue;  // a dead component, as in hals.hpp
    const auto old = static_cast<double>(x[l]);
    const double grad = b[l] - rule.l1 - rule.l2 * old - (fx[l] + listed);
    x[l] = static_cast<T>(dead ? 0.0 : std::max(0.0, old + grad / diag));
    const double delta = static_cast<double>(x[l]) - old;
    if (delta == 0) continue;
    pending = delta;
    pending_l = l;
    if (full != nullptr)
      for (index_t a = 0; a < k; ++a) fx[a] += delta * full[l * k + a];
  }
  if (!want_quad) return 0;
  const Lanes dv = splat(pending);
  Lanes quad = splat(0);
  for (index_t q = 0; q < sp; q += 4) {
    const Lanes rv = load_lanes(r + q) + dv * load_lanes(z + pending_l * sp + q);
    const Lanes cv = kCommon ? splat(common) : load_lanes(c + q);
    quad += cv * rv * rv;
  }
  return lane_sum(quad);
}

}  // namespace detail

/// HALS's sweep over the components of one column x (k values) for G = F + Σ_q c_q y_q y_qᵀ, the list's rows
/// taken from yt (k x rows, y_i = yt + i·k); `full` is F (k x k) or nullptr for F = 0. b (k) is the column's
/// numerator; with `weighted` (w·a per listed entry, a sparse column whose list is its entries) Σ_q w_q a_q y_q is
/// added to b first. Components are taken in order 0..k-1, each seeing the ones before it updated. On return fx
/// holds F x at the new x (zeros without F); with want_quad the return value is Σ_q c_q (y_qᵀx)² at the new x
/// (xᵀGx = xᵀfx + that), else 0.
template <class T>
double listed_hals_sweep(const T* yt, index_t k, const ListedRows& list, const double* full, const T* weighted,
                         const SweepRule& rule, double* b, double* fx, T* x, ListedColumns& buf, bool want_quad) {
  const index_t count = list.count, sp = (count + 3) / 4 * 4, body = count / 4 * 4;
  const auto ssp = static_cast<std::size_t>(sp), sk = static_cast<std::size_t>(k);
  buf.z.resize(sk * ssp);
  buf.r.resize(ssp);
  buf.xd.resize(sk);
  if (list.coef != nullptr) {
    buf.c.assign(ssp, 0.0);
    std::copy(list.coef, list.coef + count, buf.c.begin());
  }
  double* z = buf.z.data();
  double* r = buf.r.data();
  double* xd = buf.xd.data();
  for (index_t l = 0; l < k; ++l) xd[l] = static_cast<double>(x[l]);
  for (index_t q = 0; q < body; q += 4) {
    const index_t* i = list.row + q;
    double wa[4] = {0, 0, 0, 0};
    if (weighted != nullptr)
      for (index_t u = 0; u < 4; ++u) wa[u] = static_cast<double>(weighted[q + u]);
    store_lanes(r + q, detail::store_transposed(yt + i[0] * k, yt + i[1] * k, yt + i[2] * k, yt + i[3] * k, xd, k, sp,
                                                z + q, weighted != nullptr ? wa : nullptr, b));
  }
  if (body < count) {  // the last group's missing rows are zeros (with w·a 0): they add nothing anywhere
    buf.tail.assign(4 * sk, 0.0);
    double wa[4] = {0, 0, 0, 0};
    for (index_t u = 0; body + u < count; ++u) {
      const T* y = yt + list.row[body + u] * k;
      for (index_t l = 0; l < k; ++l) buf.tail[to_size(u * k + l)] = static_cast<double>(y[l]);
      if (weighted != nullptr) wa[u] = static_cast<double>(weighted[body + u]);
    }
    const double* t = buf.tail.data();
    store_lanes(r + body, detail::store_transposed(t, t + k, t + 2 * k, t + 3 * k, xd, k, sp, z + body,
                                                   weighted != nullptr ? wa : nullptr, b));
  }
  std::fill(fx, fx + k, 0.0);
  if (full != nullptr) gram_times(full, k, x, k, fx);
  if (list.coef == nullptr)
    return detail::sweep_components<true>(k, sp, nullptr, list.common, full, rule, b, fx, x, z, r, want_quad);
  return detail::sweep_components<false>(k, sp, buf.c.data(), 0.0, full, rule, b, fx, x, z, r, want_quad);
}

}  // namespace dnmf::solvers
