// dnmf: NNLS by block principal pivoting (Kim & Park 2011) with passive-set grouping.
//
// The solver works on the equilibrated problem z = D x, D = diag(sqrt(G_ii)): Gs = D^-1 G D^-1 has a unit
// diagonal, so one set of tolerances and one relative shift serve every column scaling, and the Cholesky
// pivots are directly comparable with the shift. Columns still infeasible after max_rounds rounds are finished
// by Lawson-Hanson on the same shifted problem.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/nnls.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dnmf {
namespace {

// Shift added to the unit diagonal of Gs. Pivots of Gs + a I are >= a in exact arithmetic (Schur complements
// of a PSD matrix are PSD), and the rounding error of a pivot is about k * 1e-16, so 1e-12 keeps the
// factorisation reliable for k up to a few hundred while biasing x by only ~1e-12 * cond(Gs).
constexpr double kAutoShift = 1e-12;
// A pivot below this fraction of its shift cannot come from a PSD matrix, so the shift is raised.
constexpr double kPivotFraction = 0.25;
constexpr double kShiftGrowth = 100;
// Growth up to 1e12 takes the automatic shift to 1, i.e. doubling the diagonal; a G that still fails is not
// PSD in any useful sense, and the columns involved get zero.
constexpr double kMaxGrowth = 1e12;
// Infeasibilities smaller than this (relative to the column's scale) are rounding noise. Treating them as
// real makes degenerate indices (x_i = 0 and y_i = 0 at the optimum) flip back and forth between rounds.
constexpr double kFeasTol = 1e-12;
// Block pivoting parameters of Kim & Park: full exchanges allowed without progress before the backup rule.
constexpr int kAlpha = 3;

using Word = std::uint64_t;
constexpr index_t kWordBits = 64;

bool bit(const Word* w, index_t i) { return ((w[i / kWordBits] >> (i % kWordBits)) & 1U) != 0; }
void flip(Word* w, index_t i) { w[i / kWordBits] ^= Word{1} << (i % kWordBits); }

// In-place Cholesky A = L L' of the m x m column-major matrix a (lower triangle used and overwritten).
// Left-looking by columns so that the inner loops run down contiguous columns. Returns false when pivot j
// falls to min_pivot[j] or below (or is not finite).
bool cholesky(double* a, index_t m, const double* min_pivot) {
  for (index_t j = 0; j < m; ++j) {
    double* cj = a + j * m;
    for (index_t p = 0; p < j; ++p) {
      const double* cp = a + p * m;
      const double ljp = cp[j];
      if (ljp == 0) continue;
      for (index_t i = j; i < m; ++i) cj[i] -= cp[i] * ljp;
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

// Solves L L' x = r in place for the factor left by cholesky().
void cholesky_solve(const double* l, index_t m, double* x) {
  for (index_t j = 0; j < m; ++j) {
    const double* cj = l + j * m;
    const double xj = x[j] / cj[j];
    x[j] = xj;
    if (xj == 0) continue;
    for (index_t i = j + 1; i < m; ++i) x[i] -= cj[i] * xj;
  }
  for (index_t j = m - 1; j >= 0; --j) {
    const double* cj = l + j * m;
    double s = x[j];
    for (index_t i = j + 1; i < m; ++i) s -= cj[i] * x[i];
    x[j] = s / cj[j];
  }
}

template <class T>
void check_shapes_and_values(DenseView<const T> g, DenseView<const T> b, DenseView<T> x) {
  auto shape = [](const char* name, index_t r, index_t c) {
    std::ostringstream s;
    s << name << " is " << r << " x " << c;
    return s.str();
  };
  if (g.rows != g.cols || g.rows < 0) {
    throw Error("nnls_bpp: " + shape("G", g.rows, g.cols) + ", expected a square k x k matrix");
  }
  const index_t k = g.rows;
  if (b.rows != k || b.cols < 0) {
    throw Error("nnls_bpp: " + shape("B", b.rows, b.cols) + " but " + shape("G", k, k) +
                "; B must have k = " + std::to_string(k) + " rows");
  }
  if (x.rows != k || x.cols != b.cols) {
    throw Error("nnls_bpp: " + shape("X", x.rows, x.cols) + " but " + shape("B", b.rows, b.cols) +
                "; X must have the shape of B");
  }
  auto layout = [](const char* name, const void* data, index_t rows, index_t cols, index_t ld) {
    if (rows > 0 && cols > 0 && (data == nullptr || ld < rows)) {
      std::ostringstream s;
      s << "nnls_bpp: " << name << " (" << rows << " x " << cols << ") has "
        << (data == nullptr ? "no data" : "leading dimension " + std::to_string(ld) + " < rows");
      throw Error(s.str());
    }
  };
  layout("G", g.data, g.rows, g.cols, g.ld);
  layout("B", b.data, b.rows, b.cols, b.ld);
  layout("X", x.data, x.rows, x.cols, x.ld);
  auto finite = [](const char* name, DenseView<const T> m) {
    for (index_t j = 0; j < m.cols; ++j) {
      for (index_t i = 0; i < m.rows; ++i) {
        const T v = m(i, j);
        if (!std::isfinite(v)) {
          std::ostringstream s;
          s << "nnls_bpp: " << name << " has " << (std::isnan(v) ? "a NaN" : "an infinite value") << " at (row " << i
            << ", column " << j << ")";
          throw Error(s.str());
        }
      }
    }
  };
  finite("G", g);
  finite("B", b);
}

// The equilibrated problem shared read-only by all threads.
struct Scaled {
  index_t k = 0;
  std::vector<double> gs;         // k x k, unit diagonal on live variables, zero rows/cols on dead ones
  std::vector<double> inv_d;      // x_i = inv_d[i] * z_i
  std::vector<double> shift;      // per-variable addition to Gs's diagonal before retries
  std::vector<double> abs_shift;  // the same addition in G's units, for NnlsStats::shift
  std::vector<char> live;
};

template <class T>
Scaled equilibrate(DenseView<const T> g, double tikhonov, NnlsStats& stats) {
  Scaled s;
  const index_t k = g.rows;
  s.k = k;
  s.gs.assign(static_cast<std::size_t>(k * k), 0.0);
  s.inv_d.assign(static_cast<std::size_t>(k), 0.0);
  s.shift.assign(static_cast<std::size_t>(k), 0.0);
  s.abs_shift.assign(static_cast<std::size_t>(k), 0.0);
  s.live.assign(static_cast<std::size_t>(k), 0);
  double max_diag = 0;
  for (index_t i = 0; i < k; ++i) max_diag = std::max(max_diag, static_cast<double>(g(i, i)));
  // A column of C whose norm is below eps(T) times the largest is lost in any product with the others, so its
  // variable is unconstrained noise; the same test catches exact zeros and negative diagonals.
  const double eps = std::numeric_limits<T>::epsilon();
  const double dead_below = eps * eps * max_diag;
  std::vector<double> d(static_cast<std::size_t>(k), 0.0);
  for (index_t i = 0; i < k; ++i) {
    const double gii = g(i, i);
    if (max_diag > 0 && gii > dead_below && gii >= std::numeric_limits<double>::min()) {
      s.live[i] = 1;
      d[i] = std::sqrt(gii);
      s.inv_d[i] = 1.0 / d[i];
      s.shift[i] = std::max(kAutoShift, tikhonov / gii);
      s.abs_shift[i] = s.shift[i] * gii;
    } else {
      ++stats.dead_variables;
    }
  }
  for (index_t j = 0; j < k; ++j) {
    if (!s.live[j]) continue;
    for (index_t i = 0; i < k; ++i) {
      if (!s.live[i]) continue;
      const double sym = 0.5 * (static_cast<double>(g(i, j)) + static_cast<double>(g(j, i)));
      s.gs[i + j * k] = (i == j) ? 1.0 : (sym * s.inv_d[i]) * s.inv_d[j];
    }
  }
  return s;
}

// Per-thread buffers, sized once before the parallel region so that nothing inside it allocates (an
// exception escaping an OpenMP region terminates the program).
struct Workspace {
  std::vector<double> chol, min_pivot, rhs, gz, t;
  std::vector<index_t> idx;
  std::vector<char> in_p, blocked;
  explicit Workspace(index_t k)
      : chol(static_cast<std::size_t>(std::max<index_t>(k * k, 1))),
        min_pivot(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        rhs(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        gz(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        t(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        idx(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        in_p(static_cast<std::size_t>(std::max<index_t>(k, 1))),
        blocked(static_cast<std::size_t>(std::max<index_t>(k, 1))) {}
};

// Per-column pivoting state.
struct ColumnState {
  int ninf = 0;  // smallest infeasible-set size seen so far
  int p = kAlpha;
  bool done = false;
};

// Factorises Gs restricted to idx[0..m) plus its shift times growth, raising growth on breakdown. Returns the
// growth used, or 0 when every retry failed.
double factorise(const Scaled& s, index_t m, double growth, Workspace& ws, index_t& retries) {
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
    if (cholesky(ws.chol.data(), m, ws.min_pivot.data())) return growth;
  }
  return 0;
}

// Lawson-Hanson active set on 0.5 z'Mz - bs'z, M = Gs + growth * diag(shift): the fallback for columns that reach
// the round cap. On degenerate problems (rank-deficient G, ties) full exchanges stop shrinking the infeasible set
// and Murty's rule, though finite, can need thousands of single-index rounds. Lawson-Hanson never increases the
// objective, so it cannot wander, and it adds one index per outer step. It starts from z = 0: starting from the
// last pivoting iterate saved nothing measurable, and that iterate can be far off on exactly these problems.
void lawson_hanson(const Scaled& s, double growth, const double* bs, double* z, Workspace& ws, index_t& retries) {
  const index_t k = s.k;
  char* in_p = ws.in_p.data();
  char* blocked = ws.blocked.data();
  double* w = ws.gz.data();  // bs - M z, the negative gradient
  double* t = ws.t.data();
  double bscale = 0;
  for (index_t i = 0; i < k; ++i) bscale = std::max(bscale, std::abs(bs[i]));
  auto update_gradient = [&] {
    for (index_t i = 0; i < k; ++i) w[i] = bs[i] - s.shift[i] * growth * z[i];
    for (index_t j = 0; j < k; ++j) {
      if (z[j] == 0) continue;
      const double* gj = s.gs.data() + j * k;
      for (index_t i = 0; i < k; ++i) w[i] -= gj[i] * z[j];
    }
  };
  std::fill(z, z + k, 0.0);
  std::fill(in_p, in_p + k, 0);
  std::fill(blocked, blocked + k, 0);

  // Moves z to the minimiser over the passive set, or as far towards it as z >= 0 allows, dropping the indices
  // that block, until the passive-set minimiser is positive. Each step lowers the objective (the segment from z
  // to the minimiser is descent). Returns false when the factorisation or the solve broke down. Enter is the
  // index just added, which must come out positive (else it is blocked and entered is false).
  auto settle = [&](index_t enter, bool& entered) {
    entered = true;
    double zscale = 0;
    for (index_t i = 0; i < k; ++i) zscale = std::max(zscale, z[i]);
    for (index_t inner = 0; inner <= k; ++inner) {
      index_t m = 0;
      for (index_t i = 0; i < k; ++i) {
        if (in_p[i]) ws.idx[m++] = i;
      }
      if (factorise(s, m, growth, ws, retries) == 0) return false;
      for (index_t r = 0; r < m; ++r) ws.rhs[r] = bs[ws.idx[r]];
      cholesky_solve(ws.chol.data(), m, ws.rhs.data());
      bool all_positive = true;
      for (index_t r = 0; r < m; ++r) {
        t[ws.idx[r]] = ws.rhs[r];
        if (!std::isfinite(ws.rhs[r])) return false;
        if (!(ws.rhs[r] > 0)) all_positive = false;
      }
      if (inner == 0 && !(t[enter] > 0)) {
        // Rounding made the entering direction useless (a column dependent on the passive ones).
        in_p[enter] = 0;
        blocked[enter] = 1;
        entered = false;
        return true;
      }
      if (all_positive) {
        for (index_t r = 0; r < m; ++r) z[ws.idx[r]] = t[ws.idx[r]];
        return true;
      }
      double alpha = 1;
      for (index_t r = 0; r < m; ++r) {
        const index_t i = ws.idx[r];
        if (t[i] <= 0) alpha = std::min(alpha, z[i] - t[i] > 0 ? z[i] / (z[i] - t[i]) : 0.0);
      }
      for (index_t r = 0; r < m; ++r) {
        const index_t i = ws.idx[r];
        z[i] += alpha * (t[i] - z[i]);
        if (z[i] <= 0 || (t[i] <= 0 && z[i] <= kFeasTol * zscale)) {
          z[i] = 0;
          in_p[i] = 0;
        }
      }
    }
    return true;
  };

  bool ok = true;
  for (index_t outer = 0; ok && outer < 3 * k + 10; ++outer) {
    update_gradient();
    double zscale = 0;
    for (index_t i = 0; i < k; ++i) zscale = std::max(zscale, z[i]);
    index_t enter = -1;
    double best = kFeasTol * (bscale + zscale);
    for (index_t i = 0; i < k; ++i) {
      if (s.live[i] && !in_p[i] && !blocked[i] && w[i] > best) {
        best = w[i];
        enter = i;
      }
    }
    if (enter < 0) break;
    in_p[enter] = 1;
    bool entered = true;
    ok = settle(enter, entered);
    if (entered) std::fill(blocked, blocked + k, 0);
  }
  // The objective 0.5 z'Mz - bs'z = -0.5 z'(bs + w) started at 0 and only fell; rounding aside, this holds.
  update_gradient();
  double f = 0;
  for (index_t i = 0; i < k; ++i) f -= 0.5 * z[i] * (bs[i] + w[i]);
  if (!(f <= 0)) std::fill(z, z + k, 0.0);
}

}  // namespace

template <class T>
NnlsStats nnls_bpp(DenseView<const T> G, DenseView<const T> B, DenseView<T> X, const NnlsOptions& options) {
  check_shapes_and_values(G, B, X);
  if (options.max_rounds < 0) {
    throw Error("nnls_bpp: max_rounds is " + std::to_string(options.max_rounds) + ", expected >= 0");
  }
  if (!std::isfinite(options.tikhonov) || options.tikhonov < 0) {
    throw Error("nnls_bpp: tikhonov is " + std::to_string(options.tikhonov) + ", expected finite and >= 0");
  }

  NnlsStats stats;
  const index_t k = G.rows;
  const index_t n = B.cols;
  stats.columns = n;
  if (n == 0) return stats;
  if (k == 0) return stats;

  const Scaled s = equilibrate(G, options.tikhonov, stats);
  const index_t max_rounds = options.max_rounds > 0 ? options.max_rounds : k / 2 + 20;
  const index_t words = (k + kWordBits - 1) / kWordBits;

  std::vector<double> bs(static_cast<std::size_t>(k * n));
  std::vector<double> z(static_cast<std::size_t>(k * n), 0.0);
  std::vector<Word> passive(static_cast<std::size_t>(words * n), 0);
  std::vector<ColumnState> state(static_cast<std::size_t>(n));
  for (index_t j = 0; j < n; ++j) {
    double* bj = bs.data() + j * k;
    Word* pj = passive.data() + j * words;
    for (index_t i = 0; i < k; ++i) {
      bj[i] = s.live[i] ? static_cast<double>(B(i, j)) * s.inv_d[i] : 0.0;
      if (s.live[i] && X(i, j) > T(0)) flip(pj, i);
    }
    state[j].ninf = static_cast<int>(k) + 1;  // beta = k + 1
  }

  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  std::vector<Workspace> workspaces;
  workspaces.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workspaces.emplace_back(k);

  // One factorisation of the whole live Gs picks the shift level every group starts from. Without it, when
  // rounding leaves G indefinite (float data, k above the rank) each group would settle on its own shift, the
  // problem being solved would change from round to round, and the pivoting could wander until the cap.
  double base_growth = 1;
  {
    Workspace& ws = workspaces.front();
    index_t m = 0;
    for (index_t i = 0; i < k; ++i) {
      if (s.live[i]) ws.idx[m++] = i;
    }
    if (m > 0) base_growth = std::max(1.0, factorise(s, m, 1.0, ws, stats.shift_retries));
  }

  std::vector<index_t> active(static_cast<std::size_t>(n));
  for (index_t j = 0; j < n; ++j) active[j] = j;
  std::vector<index_t> group_start;
  index_t rounds = 0;

  for (; rounds < max_rounds && !active.empty(); ++rounds) {
    // Sorting by passive set makes columns with equal sets adjacent; the order among equal sets is kept by
    // index so that results do not depend on the sort's tie handling.
    std::sort(active.begin(), active.end(), [&](index_t a, index_t b) {
      const Word* pa = passive.data() + a * words;
      const Word* pb = passive.data() + b * words;
      for (index_t w = 0; w < words; ++w) {
        if (pa[w] != pb[w]) return pa[w] < pb[w];
      }
      return a < b;
    });
    group_start.clear();
    for (std::size_t c = 0; c < active.size(); ++c) {
      if (c == 0 || !std::equal(passive.begin() + active[c] * words, passive.begin() + (active[c] + 1) * words,
                                passive.begin() + active[c - 1] * words)) {
        group_start.push_back(static_cast<index_t>(c));
      }
    }
    group_start.push_back(static_cast<index_t>(active.size()));
    const index_t ngroups = static_cast<index_t>(group_start.size()) - 1;

    index_t factorised = 0, retries = 0, backups = 0, zeroed = 0;
    double round_shift = 0, round_growth = base_growth;
#pragma omp parallel for schedule(dynamic) reduction(+ : factorised, retries, backups, zeroed) \
    reduction(max : round_shift, round_growth)
    for (index_t gi = 0; gi < ngroups; ++gi) {
      int tid = 0;
#ifdef _OPENMP
      tid = omp_get_thread_num();
#endif
      Workspace& ws = workspaces[static_cast<std::size_t>(tid)];
      const index_t first = group_start[gi];
      const index_t last = group_start[gi + 1];
      const Word* pset = passive.data() + active[first] * words;
      index_t m = 0;
      for (index_t i = 0; i < k; ++i) {
        if (bit(pset, i)) ws.idx[m++] = i;
      }
      double growth = base_growth;
      if (m > 0) {
        ++factorised;
        growth = factorise(s, m, base_growth, ws, retries);
        round_growth = std::max(round_growth, growth);
        for (index_t r = 0; r < m; ++r) round_shift = std::max(round_shift, s.abs_shift[ws.idx[r]] * growth);
      }

      for (index_t c = first; c < last; ++c) {
        const index_t j = active[c];
        double* zj = z.data() + j * k;
        const double* bj = bs.data() + j * k;
        Word* pj = passive.data() + j * words;
        ColumnState& st = state[j];
        if (growth == 0) {
          std::fill(zj, zj + k, 0.0);
          st.done = true;
          ++zeroed;
          continue;
        }

        std::fill(zj, zj + k, 0.0);
        double* rhs = ws.rhs.data();
        for (index_t r = 0; r < m; ++r) rhs[r] = bj[ws.idx[r]];
        if (m > 0) cholesky_solve(ws.chol.data(), m, rhs);
        double zscale = 0, bscale = 0;
        bool finite = true;
        for (index_t r = 0; r < m; ++r) {
          zj[ws.idx[r]] = rhs[r];
          finite = finite && std::isfinite(rhs[r]);
          zscale = std::max(zscale, std::abs(rhs[r]));
        }
        if (!finite) {
          std::fill(zj, zj + k, 0.0);
          st.done = true;
          ++zeroed;
          continue;
        }
        for (index_t i = 0; i < k; ++i) bscale = std::max(bscale, std::abs(bj[i]));

        // Gradient y = Gs z - bs on the complement of the passive set; |Gs_ij| <= 1 bounds its rounding error
        // by about k * eps * zscale, hence the tolerances' zscale terms.
        double* gz = ws.gz.data();
        std::fill(gz, gz + k, 0.0);
        for (index_t r = 0; r < m; ++r) {
          const double zr = zj[ws.idx[r]];
          if (zr == 0) continue;
          const double* gcol = s.gs.data() + ws.idx[r] * k;
          for (index_t i = 0; i < k; ++i) gz[i] += gcol[i] * zr;
        }
        const double tol_z = kFeasTol * zscale;
        const double tol_y = kFeasTol * (bscale + zscale);
        int ninf = 0;
        index_t last_bad = -1;
        for (index_t i = 0; i < k; ++i) {
          if (!s.live[i]) continue;
          const bool bad = bit(pj, i) ? zj[i] < -tol_z : gz[i] - bj[i] < -tol_y;
          if (bad) {
            ++ninf;
            last_bad = i;
          }
        }
        if (ninf == 0) {
          st.done = true;
          continue;
        }
        bool full_exchange = true;
        if (ninf < st.ninf) {
          st.ninf = ninf;
          st.p = kAlpha;
        } else if (st.p >= 1) {
          --st.p;
        } else {
          full_exchange = false;
        }
        if (full_exchange) {
          for (index_t i = 0; i < k; ++i) {
            if (!s.live[i]) continue;
            if (bit(pj, i) ? zj[i] < -tol_z : gz[i] - bj[i] < -tol_y) flip(pj, i);
          }
        } else {
          flip(pj, last_bad);
          ++backups;
        }
      }
    }
    stats.groups += factorised;
    stats.shift_retries += retries;
    stats.backup_rule_uses += backups;
    stats.nonfinite_zeroed += zeroed;
    stats.shift = std::max(stats.shift, round_shift);
    // Only ever raised, and from a max over groups, so the level (and the answer) is independent of threads.
    base_growth = round_growth;
    active.erase(std::remove_if(active.begin(), active.end(), [&](index_t j) { return state[j].done; }), active.end());
  }
  stats.rounds = rounds;
  stats.rounds_cap_hits = static_cast<index_t>(active.size());

  if (!active.empty()) {
    const index_t left = static_cast<index_t>(active.size());
    index_t retries = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : retries)
    for (index_t c = 0; c < left; ++c) {
      int tid = 0;
#ifdef _OPENMP
      tid = omp_get_thread_num();
#endif
      const index_t j = active[c];
      lawson_hanson(s, base_growth, bs.data() + j * k, z.data() + j * k, workspaces[static_cast<std::size_t>(tid)],
                    retries);
    }
    stats.shift_retries += retries;
    for (index_t i = 0; i < k; ++i) stats.shift = std::max(stats.shift, s.abs_shift[i] * base_growth);
  }

  // Converting a double beyond T's range is undefined behaviour, hence the explicit bound.
  const double t_max = static_cast<double>(std::numeric_limits<T>::max());
  for (index_t j = 0; j < n; ++j) {
    const double* zj = z.data() + j * k;
    bool finite = true;
    for (index_t i = 0; i < k; ++i) {
      // Accepted infeasibilities are below kFeasTol and clamp to zero.
      const double v = s.live[i] ? std::max(zj[i], 0.0) * s.inv_d[i] : 0.0;
      const bool ok = v <= t_max;  // false for NaN too
      finite = finite && ok;
      X(i, j) = ok ? static_cast<T>(v) : T(0);
    }
    if (!finite) {
      for (index_t i = 0; i < k; ++i) X(i, j) = T(0);
      ++stats.nonfinite_zeroed;
    }
  }
  return stats;
}

template NnlsStats nnls_bpp<float>(DenseView<const float>, DenseView<const float>, DenseView<float>,
                                   const NnlsOptions&);
template NnlsStats nnls_bpp<double>(DenseView<const double>, DenseView<const double>, DenseView<double>,
                                    const NnlsOptions&);

}  // namespace dnmf
