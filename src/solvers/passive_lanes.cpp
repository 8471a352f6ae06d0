// See passive_lanes.hpp.

#include "solvers/passive_lanes.hpp"

#include <cmath>

namespace dnmf::solvers {
namespace {

[[gnu::always_inline]] inline ColumnLanes splat(double v) { return ColumnLanes{} + v; }

/// -a·b + c in each lane, rounded once.
[[gnu::always_inline]] inline ColumnLanes lane_fnma(ColumnLanes a, ColumnLanes b, ColumnLanes c) {
  ColumnLanes out;
  for (int u = 0; u < kColumnLanes; ++u) out[u] = std::fma(-a[u], b[u], c[u]);
  return out;
}

/// a·b + c in each lane, rounded once.
[[gnu::always_inline]] inline ColumnLanes lane_fma(ColumnLanes a, ColumnLanes b, ColumnLanes c) {
  ColumnLanes out;
  for (int u = 0; u < kColumnLanes; ++u) out[u] = std::fma(a[u], b[u], c[u]);
  return out;
}

}  // namespace

unsigned solve_passive_lanes(const PassiveLanesSystem& sys) {
  const index_t m = sys.m;
  const index_t mp = passive_lanes_ld(m);
  ColumnLanes* a = sys.a;
  ColumnLanes* lt = sys.lt;
  ColumnLanes* x = sys.x;
  const ColumnLanes zero = splat(0), one = splat(1);
  ColumnMask failed = zero != zero;
  // Left-looking by columns, the column's unscaled values (D_j times L's column) in a, in blocks of four rows
  // held in registers. A block starts at the multiple of four at or above the diagonal: the rows above it are
  // worked on too (from the upper triangle's leftovers) and never read.
  for (index_t j = 0; j < m; ++j) {
    const ColumnLanes* ltj = lt + j * mp;
    for (index_t i0 = j / 4 * 4; i0 < mp; i0 += 4) {
      ColumnLanes acc[4];
      for (int r = 0; r < 4; ++r) acc[r] = a[i0 + r + j * mp];
      for (index_t q = 0; q < j; ++q) {
        const ColumnLanes ljq = ltj[q];
        const ColumnLanes* aq = a + q * mp + i0;
        for (int r = 0; r < 4; ++r) acc[r] = lane_fnma(aq[r], ljq, acc[r]);
      }
      for (int r = 0; r < 4; ++r) a[i0 + r + j * mp] = acc[r];
    }
    const ColumnLanes d = a[j + j * mp];
    const ColumnMask good = (d > sys.min_pivot[j]) & (d - d == zero);  // d - d: NaN unless d is finite
    failed |= ~good;
    const ColumnLanes inv = one / (good ? d : one);
    sys.dinv[j] = inv;
    for (index_t i = j + 1; i < m; ++i) lt[j + i * mp] = a[i + j * mp] * inv;
  }
  // L y = b by rows (each row's sum can start before the row above is done), y / D, then Lᵀ x = y by columns.
  for (index_t i = 1; i < m; ++i) {
    const ColumnLanes* lti = lt + i * mp;
    ColumnLanes s = x[i];
    for (index_t q = 0; q < i; ++q) s = lane_fnma(lti[q], x[q], s);
    x[i] = s;
  }
  for (index_t i = 0; i < m; ++i) x[i] *= sys.dinv[i];
  for (index_t j = m - 1; j > 0; --j) {
    const ColumnLanes* ltj = lt + j * mp;
    const ColumnLanes xj = x[j];
    for (index_t i = 0; i < j; ++i) x[i] = lane_fnma(ltj[i], xj, x[i]);
  }
  unsigned bits = 0;
  for (int u = 0; u < kColumnLanes; ++u) bits |= failed[u] != 0 ? 1U << u : 0U;
  return bits;
}

void gram_times_lanes(const double* g, index_t k, const ColumnLanes* z, ColumnLanes* out) {
  const index_t kp = passive_lanes_ld(k);
  for (index_t i0 = 0; i0 < kp; i0 += 4) {
    ColumnLanes acc[4] = {splat(0), splat(0), splat(0), splat(0)};
    for (index_t q = 0; q < k; ++q) {
      const double* gq = g + q * kp + i0;
      for (int r = 0; r < 4; ++r) acc[r] = lane_fma(splat(gq[r]), z[q], acc[r]);
    }
    for (int r = 0; r < 4; ++r) out[i0 + r] = acc[r];
  }
}

}  // namespace dnmf::solvers
