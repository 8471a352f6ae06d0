// The Cholesky factorisation of nnls_bpp's passive-set systems (nnls_bpp.cpp), kept apart so that its two forms
// can be tested against each other to the bit: cholesky_columns, the left-looking loop for any size, and
// cholesky_small, the same operations for m <= 16 with a column held in registers. Every update is one fused
// multiply-add, written out, so the rounding does not depend on how a compiler vectorises or contracts a loop.
#pragma once

#include <algorithm>
#include <cmath>

#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers::cholesky_detail {

/// -c·x + y in each of four lanes, rounded once (a fused multiply-add per lane, as the scalar loops round).
[[gnu::always_inline]] inline Lanes fnma(double c, Lanes x, Lanes y) {
  Lanes out;
  for (int u = 0; u < 4; ++u) out[u] = std::fma(-c, x[u], y[u]);
  return out;
}

/// Column j of cholesky_small's work matrix w (leading dimension ld): its N lane groups from row 4·(j / 4) on,
/// held in registers over all of the column's updates (N a constant, so the compiler keeps them there). False,
/// with the column updated but not scaled, when the pivot falls to min_pivot[j] or below (or is not finite).
template <int N>
bool small_column(double* w, index_t ld, index_t j, const double* min_pivot) {
  const index_t row0 = j / 4 * 4;
  double* wj = w + j * ld + row0;
  Lanes c[N];
  for (int r = 0; r < N; ++r) c[r] = load_lanes(wj + 4 * r);
  for (index_t p = 0; p < j; ++p) {
    const double ljp = w[j + p * ld];
    if (ljp == 0) continue;
    const double* wp = w + p * ld + row0;
    for (int r = 0; r < N; ++r) c[r] = fnma(ljp, load_lanes(wp + 4 * r), c[r]);
  }
  const double d = c[0][j % 4];
  if (!(d > min_pivot[j]) || !std::isfinite(d)) {
    for (int r = 0; r < N; ++r) store_lanes(wj + 4 * r, c[r]);
    return false;
  }
  const double ljj = std::sqrt(d);
  const Lanes inv = splat(1.0 / ljj);
  for (int r = 0; r < N; ++r) store_lanes(wj + 4 * r, c[r] * inv);
  w[j + j * ld] = ljj;
  return true;
}

}  // namespace dnmf::solvers::cholesky_detail

namespace dnmf::solvers {

/// Largest order cholesky_small takes.
constexpr index_t kSmallCholesky = 16;

/// In-place Cholesky A = L Lᵀ of the m x m column-major matrix a (lower triangle used and overwritten).
/// Left-looking by columns so that the inner loops run down contiguous columns. Returns false when pivot j falls
/// to min_pivot[j] or below (or is not finite), leaving columns [0, j) factored and column j updated.
inline bool cholesky_columns(double* a, index_t m, const double* min_pivot) {
  for (index_t j = 0; j < m; ++j) {
    double* cj = a + j * m;
    for (index_t p = 0; p < j; ++p) {
      const double* cp = a + p * m;
      const double ljp = cp[j];
      if (ljp == 0) continue;  // x - c·0 could turn a -0 into +0
      for (index_t i = j; i < m; ++i) cj[i] = std::fma(-cp[i], ljp, cj[i]);
    }
    const double d = cj[j];
    if (!(d > min_pivot[j]) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    cj[j] = ljj;
    const double inv = 1.0 / ljj;
    for (index_t i = j + 1; i < m; ++i) cj[i] *= inv;
  }
  return true;
}

/// cholesky_columns for m <= kSmallCholesky with the same operations in the same order, so the same bits and the
/// same state after a failed pivot, but column j held in up to four lane registers over all its updates instead
/// of being loaded and stored once per p: those stores and reloads made a chain of dependent memory round trips,
/// the largest part of a one-column solve at k = 16 (the masked BPP solves one column per call). The work is done
/// in a 16 x 16 copy whose lanes above the diagonal and past row m start at zero: they carry values that are
/// never stored back.
inline bool cholesky_small(double* a, index_t m, const double* min_pivot) {
  constexpr index_t ld = kSmallCholesky;
  alignas(32) double w[ld * ld];  // NOLINT(cppcoreguidelines-pro-type-member-init): every entry read is set below
  const index_t groups = (m + 3) / 4;
  for (index_t j = 0; j < m; ++j) {
    double* wj = w + j * ld;
    std::fill(wj + j / 4 * 4, wj + j, 0.0);
    std::copy(a + j + j * m, a + (j + 1) * m, wj + j);
    std::fill(wj + m, wj + 4 * groups, 0.0);
  }
  bool ok = true;
  index_t j = 0;
  for (; j < m && ok; ++j) {
    switch (groups - j / 4) {
      case 4:
        ok = cholesky_detail::small_column<4>(w, ld, j, min_pivot);
        break;
      case 3:
        ok = cholesky_detail::small_column<3>(w, ld, j, min_pivot);
        break;
      case 2:
        ok = cholesky_detail::small_column<2>(w, ld, j, min_pivot);
        break;
      default:
        ok = cholesky_detail::small_column<1>(w, ld, j, min_pivot);
        break;
    }
  }
  for (index_t q = 0; q < j; ++q)  // the columns worked on; the rest are as given
    for (index_t i = q; i < m; ++i) a[i + q * m] = w[i + q * ld];
  return ok;
}

/// In-place Cholesky A = L Lᵀ (lower triangle of the m x m column-major a): cholesky_small where it applies.
inline bool cholesky(double* a, index_t m, const double* min_pivot) {
  return m <= kSmallCholesky ? cholesky_small(a, m, min_pivot) : cholesky_columns(a, m, min_pivot);
}

}  // namespace dnmf::solvers
