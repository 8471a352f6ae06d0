// Masked HALS's column sweep without forming the column's Gram matrix (docs/masked.md, "Cost"). With
// G = F + Σ_q c_q y_q y_qᵀ over a column's listed rows, the sweep needs (G x)_l at each component l. It keeps
// r_q = y_qᵀx for every listed row: (G x)_l = (F x)_l + Σ_q c_q y_ql r_q, and a change δ of x_l adds δ y_ql to
// each r_q. That is 4 flops per listed row and component (4·s·k) against the ≈1.25·s·k² of forming G, and with the
// rows stored transposed (component l's values of all listed rows contiguous) both loops run in 4-wide lanes.
// Every sum is formed in an order fixed by k and the list, never by the thread count.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "dnmf/index.hpp"
#include "solvers/listed_products.hpp"

namespace dnmf::solvers {

/// One thread's buffers for listed_hals_sweep, reused between columns.
struct ListedColumns {
  std::vector<double> z;  ///< k x sp: z[l·sp + q] = y_ql (sp = the list length rounded up to 4, zero padded)
  std::vector<double> c;  ///< the coefficients, zero padded
  std::vector<double> r;  ///< y_qᵀx at the current x
};

/// The fixed-penalty part of HALS's column rule (hals.hpp): x_l ← max(0, x_l + (b_l − l1 − l2 x_l − (Gx)_l) /
/// (G_ll + l2)), components whose G_ll + l2 ≤ eps held as they are.
struct SweepRule {
  double l1 = 0, l2 = 0, eps = 0;
};

namespace detail {

[[gnu::always_inline]] inline void store_lanes(double* to, Lanes v) { std::memcpy(to, &v, sizeof v); }

/// One pass over component l's listed values z (sp of them, a multiple of 4): with d ≠ 0, first r += d · z_prev
/// (the previous component's change); then returns Σ c_q z_q r_q and, in diag, Σ c_q z_q². Eight entries per step
/// in two sets of lanes (q mod 8), so every sum's order is fixed by sp.
inline double column_pass(double* r, double d, const double* z_prev, const double* c, const double* z, index_t sp,
                          double& diag) {
  const Lanes dv = {d, d, d, d};
  Lanes s0 = {0, 0, 0, 0}, s1 = s0, g0 = s0, g1 = s0;
  const auto step = [&](index_t q, Lanes& s, Lanes& g) {
    Lanes rv = load_lanes(r + q);
    if (d != 0) {
      rv += dv * load_lanes(z_prev + q);
      store_lanes(r + q, rv);
    }
    const Lanes zv = load_lanes(z + q), cz = load_lanes(c + q) * zv;
    s += cz * rv;
    g += cz * zv;
  };
  index_t q = 0;
  for (; q + 8 <= sp; q += 8) {
    step(q, s0, g0);
    step(q + 4, s1, g1);
  }
  if (q < sp) step(q, s0, g0);
  diag = lane_sum(g0 + g1);
  return lane_sum(s0 + s1);
}

/// Stores four listed rows y[0..3] (k values each) transposed into z at list position q (a multiple of 4), in
/// 4 x 4 blocks turned in registers. Returns their products y_rᵀx as lanes (each summed by l mod 4, then the
/// tail); with wa (the rows' w·a) also adds Σ_r wa_r y_r to b.
template <class T>
Lanes store_transposed(const T* const* y, const T* x, index_t k, index_t sp, index_t q, double* z, const double* wa,
                       double* b) {
  const index_t body = k / 4 * 4;
  Lanes d0 = {0, 0, 0, 0}, d1 = d0, d2 = d0, d3 = d0;  // by l mod 4: four short chains instead of one long one
  for (index_t l = 0; l < body; l += 4) {
    const Lanes v0 = load_lanes(y[0] + l), v1 = load_lanes(y[1] + l);
    const Lanes v2 = load_lanes(y[2] + l), v3 = load_lanes(y[3] + l);
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
    store_lanes(z + l * sp + q, w0);
    store_lanes(z + (l + 1) * sp + q, w1);
    store_lanes(z + (l + 2) * sp + q, w2);
    store_lanes(z + (l + 3) * sp + q, w3);
    const auto xb = [&](index_t u) {
      const auto v = static_cast<double>(x[l + u]);
      return Lanes{v, v, v, v};
    };
    d0 += w0 * xb(0);
    d1 += w1 * xb(1);
    d2 += w2 * xb(2);
    d3 += w3 * xb(3);
  }
  Lanes dots = (d0 + d1) + (d2 + d3);
  for (index_t l = body; l < k; ++l) {
    const auto xl = static_cast<double>(x[l]);
    for (index_t u = 0; u < 4; ++u) {
      const auto v = static_cast<double>(y[u][l]);
      z[l * sp + q + u] = v;
      dots[u] += v * xl;
      if (wa != nullptr) b[l] += wa[u] * v;
    }
  }
  return dots;
}

}  // namespace detail

/// HALS's sweep over the components of one column x (k values) for G = F + Σ_q c_q y_q y_qᵀ, the list being the
/// rows row[0..count) of yt (k x rows, y_i = yt + i·k) with coefficients coef[0..count); `full` is F (k x k) or
/// nullptr for F = 0. b (k) is the column's numerator; with `weighted` (w·a per listed entry, a sparse column whose
/// list is its entries) Σ_q w_q a_q y_q is added to b first. Components are taken in order 0..k-1, each seeing the
/// ones before it updated. On return fx holds F x at the new x (zeros without F); with want_quad the return value
/// is Σ_q c_q (y_qᵀx)² at the new x (xᵀGx = xᵀfx + that), else 0.
template <class T>
double listed_hals_sweep(const T* yt, index_t k, const index_t* row, const double* coef, index_t count,
                         const double* full, const T* weighted, const SweepRule& rule, double* b, double* fx, T* x,
                         ListedColumns& buf, bool want_quad) {
  const index_t sp = (count + 3) / 4 * 4;
  const auto ssp = static_cast<std::size_t>(sp);
  buf.z.resize(static_cast<std::size_t>(k) * ssp);
  buf.c.assign(ssp, 0.0);
  buf.r.assign(ssp, 0.0);
  double* z = buf.z.data();
  double* r = buf.r.data();
  std::copy(coef, coef + count, buf.c.begin());
  for (index_t q = 0; q < sp; q += 4) {
    const T* y[4];
    double wa[4] = {0, 0, 0, 0};
    for (index_t u = 0; u < 4; ++u) {
      // The last group's missing rows repeat the first listed row with coefficient 0 (and w·a 0).
      const index_t p = q + u < count ? q + u : 0;
      y[u] = yt + row[p] * k;
      if (weighted != nullptr && q + u < count) wa[u] = static_cast<double>(weighted[p]);
    }
    const Lanes dots = detail::store_transposed(y, x, k, sp, q, z, weighted != nullptr ? wa : nullptr, b);
    detail::store_lanes(r + q, dots);
  }
  std::fill(fx, fx + k, 0.0);
  if (full != nullptr) gram_times(full, k, x, k, fx);
  double pending = 0;  // the last change of x, not yet added to r
  index_t pending_l = 0;
  for (index_t l = 0; l < k; ++l) {
    double listed_diag = 0;
    const double listed =
        detail::column_pass(r, pending, z + pending_l * sp, buf.c.data(), z + l * sp, sp, listed_diag);
    pending = 0;
    const double diag = (full != nullptr ? full[l * k + l] : 0.0) + listed_diag + rule.l2;
    if (!(diag > rule.eps)) continue;  // a dead component, as in hals.hpp
    const auto old = static_cast<double>(x[l]);
    const double grad = b[l] - rule.l1 - rule.l2 * old - (fx[l] + listed);
    x[l] = static_cast<T>(std::max(0.0, old + grad / diag));
    const double delta = static_cast<double>(x[l]) - old;
    if (delta == 0) continue;
    pending = delta;
    pending_l = l;
    if (full != nullptr)
      for (index_t a = 0; a < k; ++a) fx[a] += delta * full[l * k + a];
  }
  if (!want_quad) return 0;
  const Lanes dv = {pending, pending, pending, pending};
  Lanes quad = {0, 0, 0, 0};
  for (index_t q = 0; q < sp; q += 4) {
    const Lanes rv = load_lanes(r + q) + dv * load_lanes(z + pending_l * sp + q);
    quad += load_lanes(buf.c.data() + q) * rv * rv;
  }
  return lane_sum(quad);
}

}  // namespace dnmf::solvers
