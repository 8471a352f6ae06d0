// The equilibrated NNLS problem that block principal pivoting (nnls_bpp.cpp) and its Lawson-Hanson fallback
// (nnls_lawson_hanson.cpp) share: the tolerances, the per-thread workspace, and the shifted factorisation and
// solve of a passive set. Private to those two files.
#pragma once

#include <vector>

#include "dnmf/index.hpp"
#include "solvers/cholesky.hpp"
#include "solvers/passive_lanes.hpp"

namespace dnmf::nnls_detail {

// Shift added to the unit diagonal of Gs. Pivots of Gs + a I are >= a in exact arithmetic (Schur complements
// of a PSD matrix are PSD), and the rounding error of a pivot is about k * 1e-16, so 1e-12 keeps the
// factorisation reliable for k up to a few hundred while biasing x by only ~1e-12 * cond(Gs).
inline constexpr double kAutoShift = 1e-12;
// A pivot below this fraction of its shift cannot come from a PSD matrix, so the shift is raised.
inline constexpr double kPivotFraction = 0.25;
inline constexpr double kShiftGrowth = 100;
// Growth up to 1e12 takes the automatic shift to 1, i.e. doubling the diagonal; a G that still fails is not
// PSD in any useful sense, and the columns involved get zero.
inline constexpr double kMaxGrowth = 1e12;
// Infeasibilities smaller than this (relative to the column's scale) are rounding noise. Treating them as
// real makes degenerate indices (x_i = 0 and y_i = 0 at the optimum) flip back and forth between rounds.
inline constexpr double kFeasTol = 1e-12;

/// The equilibrated problem shared read-only by all threads.
struct Scaled {
  index_t k = 0;
  std::vector<double> gs;         // k x k, unit diagonal on live variables, zero rows/cols on dead ones
  std::vector<double> inv_d;      // x_i = inv_d[i] * z_i
  std::vector<double> shift;      // per-variable addition to Gs's diagonal before retries
  std::vector<double> abs_shift;  // the same addition in G's units, for NnlsStats::shift
  std::vector<char> live;
};

/// Per-thread buffers, sized once before the parallel region so that nothing inside it allocates (an
/// exception escaping an OpenMP region terminates the program).
struct Workspace {
  std::vector<double> chol, min_pivot, rhs, gz, t;
  std::vector<double> rhs4;     // four right-hand sides interleaved (cholesky_solve4)
  std::vector<double> schur;    // the inverse's complement block and its factor (solve_group_by_inverse)
  std::vector<double> lambda;   // the multipliers of the complement's zero constraints
  std::vector<double> u, coef;  // solve_group_by_inverse's column (padded to whole lanes) and its weights
  std::vector<index_t> idx;
  std::vector<index_t> cidx;  // the live variables outside the passive set
  std::vector<char> in_p, blocked;
  // solve_lane_batch's arrays, sized by Pivoting when it solves in lanes: b, z and gz (kp each) and the systems
  // (passive_lanes_work(k)); each lane's passive indices
  std::vector<solvers::ColumnLanes> lanes;
  std::vector<solvers::ColumnMask> lane_idx;
  index_t chol_ld = 0;  // leading dimension of the factor in chol
  explicit Workspace(index_t k)
      : chol(to_size(std::max<index_t>(k * k, 1))),
        min_pivot(to_size(std::max<index_t>(k, 1))),
        rhs(to_size(std::max<index_t>(k, 1))),
        gz(to_size(std::max<index_t>(k, 1))),
        t(to_size(std::max<index_t>(k, 1))),
        rhs4(to_size(4 * std::max<index_t>(k, 1))),
        schur(to_size(std::max<index_t>(k * k, 1))),
        lambda(to_size(std::max<index_t>(k, 1))),
        u(to_size(std::max<index_t>((k + 3) / 4 * 4, 4))),
        coef(to_size(std::max<index_t>(k, 1))),
        idx(to_size(std::max<index_t>(k, 1))),
        cidx(to_size(std::max<index_t>(k, 1))),
        in_p(to_size(std::max<index_t>(k, 1))),
        blocked(to_size(std::max<index_t>(k, 1))),
        k_(k) {}
  index_t size() const { return k_; }

 private:
  index_t k_;
};

/// Solves L L' x = r in place for the m x m factor left by cholesky(), stored with leading dimension ld (the
/// leading block of a larger factor is the factor of the leading submatrix). Every update is one fused
/// multiply-add, written out: left to the compiler, which ones fuse depended on how it vectorised each loop, and
/// cholesky_solve4 must round as this does.
inline void cholesky_solve(const double* l, index_t m, index_t ld, double* x) {
  for (index_t j = 0; j < m; ++j) {
    const double* cj = l + j * ld;
    const double xj = x[j] / cj[j];
    x[j] = xj;
    if (xj == 0) continue;
    for (index_t i = j + 1; i < m; ++i) x[i] = std::fma(-cj[i], xj, x[i]);
  }
  for (index_t j = m - 1; j >= 0; --j) {
    const double* cj = l + j * ld;
    double s = x[j];
    for (index_t i = j + 1; i < m; ++i) s = std::fma(-cj[i], x[i], s);
    x[j] = s / cj[j];
  }
}

/// Factorises Gs restricted to idx[0..m) plus its shift times growth, raising growth on breakdown. Returns the
/// growth used, or 0 when every retry failed.
inline double factorise(const Scaled& s, index_t m, double growth, Workspace& ws, index_t& retries) {
  const index_t k = s.k;
  for (bool first = true; growth <= kMaxGrowth; growth *= kShiftGrowth, first = false) {
    if (!first) ++retries;
    for (index_t c = 0; c < m; ++c) {
      const index_t jc = ws.idx[c];
      const double* gcol = s.gs.data() + jc * k;
      double* acol = ws.chol.data() + c * m;
      for (index_t r = c; r < m; ++r) acol[r] = gcol[ws.idx[r]];
      const double add = s.shift[jc] * growth;
      acol[c] += add;
      ws.min_pivot[c] = kPivotFraction * add;
    }
    ws.chol_ld = m;
    if (solvers::cholesky(ws.chol.data(), m, ws.min_pivot.data())) return growth;
  }
  return 0;
}

}  // namespace dnmf::nnls_detail
