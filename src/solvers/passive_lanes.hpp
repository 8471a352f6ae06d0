// Four NNLS passive-set systems at once, one per lane (nnls_bpp.cpp's solve for columns whose passive set fewer
// than four columns share). Once ANLS settles almost every column has a set of its own, and one column's
// factorisation and solves are chains of dependent operations, each waiting on a division or the previous
// update; four columns side by side run four independent chains in each instruction instead.
//
// Each lane holds its column's passive block, padded to the batch's largest order with the identity, so that all
// lanes run the same operations; the caller orders the columns by passive-set size, so that the padding is
// small.
#pragma once

#include "dnmf/index.hpp"

namespace dnmf::solvers {

/// Columns solved together by solve_passive_lanes. (Eight, as GCC vectors of 64 bytes on the AVX2 baseline, ran
/// 4x slower: the per-lane std::fma loops were not turned into vector instructions.)
constexpr int kColumnLanes = 4;
/// One double per column of a batch: one AVX2 register on the library's x86-64-v3 baseline.
using ColumnLanes = double __attribute__((vector_size(8 * kColumnLanes)));
/// A lane mask as comparisons of ColumnLanes give it: all bits set where true.
using ColumnMask = long long __attribute__((vector_size(8 * kColumnLanes)));  // NOLINT(google-runtime-int)

/// The larger of acc and |v| in each lane.
[[gnu::always_inline]] inline ColumnLanes max_abs(ColumnLanes acc, ColumnLanes v) {
  const ColumnLanes a = v < 0 ? -v : v;
  return a > acc ? a : acc;
}

/// Rows per column of the lane arrays: an order rounded up to a multiple of 4.
inline index_t passive_lanes_ld(index_t m) { return (m + 3) / 4 * 4; }

/// ColumnLanes solve_passive_lanes needs for systems of order up to m: the matrix, L's rows, D⁻¹, the minimum
/// pivots and the right-hand side, (2·m + 3)·mp (mp = passive_lanes_ld(m)).
inline index_t passive_lanes_work(index_t m) { return (2 * m + 3) * passive_lanes_ld(m); }

/// Where solve_passive_lanes's systems of order m live, in a work array of passive_lanes_work(m) lanes; mp =
/// passive_lanes_ld(m). The caller fills a (the lower triangle of the column-major mp x m matrix, in each lane its
/// column's passive block with the diagonal addition, the identity beyond the block's own order, zero rows below
/// m), min_pivot (per row and lane; zero beyond a lane's order) and x (the right-hand sides, zero beyond a
/// lane's order); the solve leaves the solutions in x.
struct PassiveLanesSystem {
  index_t m = 0;
  ColumnLanes* a = nullptr;
  ColumnLanes* lt = nullptr;    // row i of L, contiguous: lt[q + i·mp] = L[i][q]
  ColumnLanes* dinv = nullptr;  // 1 / D
  ColumnLanes* min_pivot = nullptr;
  ColumnLanes* x = nullptr;
  PassiveLanesSystem(index_t order, ColumnLanes* work) : m(order) {
    const index_t mp = passive_lanes_ld(order);
    a = work;
    lt = a + mp * order;
    dinv = lt + mp * order;
    min_pivot = dinv + mp;
    x = min_pivot + mp;
  }
};

/// Solves the system of every lane by an LDLᵀ factorisation (no square roots: only the pivots' reciprocals
/// wait on a division) and two unit triangular solves; a is overwritten. Returns the lanes whose factorisation
/// met a pivot at or below their min_pivot (or not finite), bit u for lane u: their x means nothing. The
/// operations on each lane are the same whatever the other lanes hold (identity rows add exact zeros), so a
/// column's answer does not depend on the columns it is solved with. (Compiled in the library only, with its
/// vector instructions: the interface passes no vector by value, whose calling convention depends on them.)
unsigned solve_passive_lanes(const PassiveLanesSystem& sys);

/// out = g·z in every lane, for the symmetric k x k matrix g (column-major, leading dimension kp =
/// passive_lanes_ld(k), rows k..kp zero) and z of kp rows; out has kp rows.
void gram_times_lanes(const double* g, index_t k, const ColumnLanes* z, ColumnLanes* out);

}  // namespace dnmf::solvers
