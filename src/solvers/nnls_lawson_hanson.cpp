// See nnls_lawson_hanson.hpp.

#include "solvers/nnls_lawson_hanson.hpp"

#include <algorithm>
#include <cmath>

namespace dnmf::nnls_detail {
namespace {

// Lawson-Hanson active set on 0.5 z'Mz - bs'z, M = Gs + growth * diag(shift): the fallback for columns that reach
// the round cap. On degenerate problems (rank-deficient G, ties) full exchanges stop shrinking the infeasible set
// and Murty's rule, though finite, can need thousands of single-index rounds. Lawson-Hanson never increases the
// objective, so it cannot wander, and it adds one index per outer step. It starts from z = 0: starting from the
// last pivoting iterate saved nothing measurable, and that iterate can be far off on exactly these problems.
class LawsonHanson {
 public:
  LawsonHanson(const Scaled& s, double growth, const double* bs, double* z, Workspace& ws, index_t& retries)
      : s_(s),
        k_(s.k),
        growth_(growth),
        bs_(bs),
        z_(z),
        ws_(ws),
        retries_(retries),
        in_p_(ws.in_p.data()),
        blocked_(ws.blocked.data()),
        w_(ws.gz.data()),
        t_(ws.t.data()) {}

  void solve() {
    double bscale = 0;
    for (index_t i = 0; i < k_; ++i) bscale = std::max(bscale, std::abs(bs_[i]));
    std::fill(z_, z_ + k_, 0.0);
    std::fill(in_p_, in_p_ + k_, 0);
    std::fill(blocked_, blocked_ + k_, 0);
    bool ok = true;
    for (index_t outer = 0; ok && outer < 3 * k_ + 10; ++outer) {
      update_gradient();
      const index_t enter = entering_index(bscale);
      if (enter < 0) break;
      in_p_[enter] = 1;
      bool entered = true;
      ok = settle(enter, entered);
      if (entered) std::fill(blocked_, blocked_ + k_, 0);
    }
    reject_if_objective_rose();
  }

 private:
  double z_scale() const {
    double zscale = 0;
    for (index_t i = 0; i < k_; ++i) zscale = std::max(zscale, z_[i]);
    return zscale;
  }

  // w = bs - M z, the negative gradient.
  void update_gradient() {
    for (index_t i = 0; i < k_; ++i) w_[i] = bs_[i] - s_.shift[i] * growth_ * z_[i];
    for (index_t j = 0; j < k_; ++j) {
      if (z_[j] == 0) continue;
      const double* gj = s_.gs.data() + j * k_;
      for (index_t i = 0; i < k_; ++i) w_[i] -= gj[i] * z_[j];
    }
  }

  // The live, inactive, unblocked index of steepest descent, or -1 when none beats rounding noise.
  index_t entering_index(double bscale) const {
    index_t enter = -1;
    double best = kFeasTol * (bscale + z_scale());
    for (index_t i = 0; i < k_; ++i) {
      if (s_.live[i] && !in_p_[i] && !blocked_[i] && w_[i] > best) {
        best = w_[i];
        enter = i;
      }
    }
    return enter;
  }

  // Moves z to the minimiser over the passive set, or as far towards it as z >= 0 allows, dropping the indices
  // that block, until the passive-set minimiser is positive. Each step lowers the objective (the segment from z
  // to the minimiser is descent). Returns false when the factorisation or the solve broke down. Enter is the
  // index just added, which must come out positive (else it is blocked and entered is false).
  bool settle(index_t enter, bool& entered) {
    entered = true;
    const double zscale = z_scale();
    for (index_t inner = 0; inner <= k_; ++inner) {
      const index_t m = passive_indices();
      bool all_positive = true;
      if (!solve_passive(m, all_positive)) return false;
      if (inner == 0 && !(t_[enter] > 0)) {
        // Rounding made the entering direction useless (a column dependent on the passive ones).
        in_p_[enter] = 0;
        blocked_[enter] = 1;
        entered = false;
        return true;
      }
      if (all_positive) {
        for (index_t r = 0; r < m; ++r) z_[ws_.idx[r]] = t_[ws_.idx[r]];
        return true;
      }
      step_towards_t(m, zscale);
    }
    return true;
  }

  index_t passive_indices() {
    index_t m = 0;
    for (index_t i = 0; i < k_; ++i) {
      if (in_p_[i]) ws_.idx[m++] = i;
    }
    return m;
  }

  // t = the minimiser over the passive set; false on breakdown.
  bool solve_passive(index_t m, bool& all_positive) {
    if (factorise(s_, m, growth_, ws_, retries_) == 0) return false;
    for (index_t r = 0; r < m; ++r) ws_.rhs[r] = bs_[ws_.idx[r]];
    cholesky_solve(ws_.chol.data(), m, ws_.chol_ld, ws_.rhs.data());
    for (index_t r = 0; r < m; ++r) {
      t_[ws_.idx[r]] = ws_.rhs[r];
      if (!std::isfinite(ws_.rhs[r])) return false;
      if (!(ws_.rhs[r] > 0)) all_positive = false;
    }
    return true;
  }

  // The longest step from z towards t that keeps z >= 0; the indices it stops at leave the passive set.
  void step_towards_t(index_t m, double zscale) {
    double alpha = 1;
    for (index_t r = 0; r < m; ++r) {
      const index_t i = ws_.idx[r];
      if (t_[i] <= 0) alpha = std::min(alpha, z_[i] - t_[i] > 0 ? z_[i] / (z_[i] - t_[i]) : 0.0);
    }
    for (index_t r = 0; r < m; ++r) {
      const index_t i = ws_.idx[r];
      z_[i] += alpha * (t_[i] - z_[i]);
      if (z_[i] <= 0 || (t_[i] <= 0 && z_[i] <= kFeasTol * zscale)) {
        z_[i] = 0;
        in_p_[i] = 0;
      }
    }
  }

  // The objective 0.5 z'Mz - bs'z = -0.5 z'(bs + w) started at 0 and only fell; rounding aside, this holds.
  void reject_if_objective_rose() {
    update_gradient();
    double f = 0;
    for (index_t i = 0; i < k_; ++i) f -= 0.5 * z_[i] * (bs_[i] + w_[i]);
    if (!(f <= 0)) std::fill(z_, z_ + k_, 0.0);
  }

  const Scaled& s_;
  const index_t k_;
  const double growth_;
  const double* bs_;
  double* z_;
  Workspace& ws_;
  index_t& retries_;
  char* in_p_;
  char* blocked_;
  double* w_;
  double* t_;
};

}  // namespace

void lawson_hanson(const Scaled& s, double growth, const double* bs, double* z, Workspace& ws, index_t& retries) {
  LawsonHanson(s, growth, bs, z, ws, retries).solve();
}

}  // namespace dnmf::nnls_detail
