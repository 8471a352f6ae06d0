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
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nnls.hpp"
#include "solvers/cholesky.hpp"
#include "solvers/lanes.hpp"
#include "solvers/nnls_buffers.hpp"
#include "solvers/nnls_lawson_hanson.hpp"
#include "solvers/nnls_shifted.hpp"
#include "solvers/passive_lanes.hpp"
#include "util/parallel_loops.hpp"
#include "util/radix_sort.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dnmf {
namespace {

using nnls_detail::cholesky_solve;
using nnls_detail::factorise;
using nnls_detail::kAutoShift;
using nnls_detail::kFeasTol;
using nnls_detail::kPivotFraction;
using nnls_detail::Scaled;
using nnls_detail::Workspace;

// Largest k whose columns are solved in lanes (passive_lanes.hpp): a passive set is then one word, and a batch's
// arrays (about 2·k² lanes) stay in the first-level caches.
constexpr index_t kLaneMaxK = 32;
// Groups of fewer columns than this are solved in lanes; larger ones share their factor's solves (four columns
// per pass of cholesky_solve4).
constexpr index_t kLaneGroupLimit = 4;
// Block pivoting parameters of Kim & Park: full exchanges allowed without progress before the backup rule.
constexpr int kAlpha = 3;
// Largest 1-norm condition number of the shifted Gs for which passive-set systems are solved through its inverse
// (Pivoting::build_inverse): the inverse's rounding error in z is about cond · eps · |z| (eps of double, the
// arithmetic) against cond(Gs_PP) · eps for a factorisation of the passive block. For a double answer the bound
// keeps it below about 1e-11 · |z|. A float answer is rounded to 6e-8 of itself on the way out, and its G and B
// came rounded to float, which moves the exact answer by about cond(Gs_PP) · 6e-8 already: 1e7 keeps the inverse's
// error near 1e-9 · |z|, a fiftieth of float's rounding unit. (ANLS with k above the data's rank gives Grams with
// condition numbers of 1e5 to 1e6.) The inverse serves calls that do not solve in lanes (k > kLaneMaxK).
template <class T>
constexpr double kInverseCond = std::is_same_v<T, float> ? 1e7 : 1e5;

using solvers::cholesky_detail::fnma;
using Word = std::uint64_t;
constexpr index_t kWordBits = 64;

bool bit(const Word* w, index_t i) { return ((w[i / kWordBits] >> (i % kWordBits)) & 1U) != 0; }
void flip(Word* w, index_t i) { w[i / kWordBits] ^= Word{1} << (i % kWordBits); }

// cholesky_solve for four right-hand sides at once (x4[4·r + u]: entry r of side u; sides u >= used are padding
// whose results are not read): on each used side the operations of cholesky_solve in the same order, so the same
// bits, with the four sides' chains side by side instead of one waiting on each of its own additions. A used
// side whose x_j is zero skips the updates cholesky_solve skips (x - c·0 could turn a -0 into +0).
void cholesky_solve4(const double* l, index_t m, index_t ld, double* x4, int used) {
  using solvers::Lanes, solvers::load_lanes, solvers::splat, solvers::store_lanes;
  for (index_t j = 0; j < m; ++j) {
    const double* cj = l + j * ld;
    const Lanes xj = load_lanes(x4 + 4 * j) / splat(cj[j]);
    store_lanes(x4 + 4 * j, xj);
    bool any_zero = false;
    for (int u = 0; u < used; ++u) any_zero = any_zero || xj[u] == 0;
    if (!any_zero) {
      for (index_t i = j + 1; i < m; ++i) store_lanes(x4 + 4 * i, fnma(cj[i], xj, load_lanes(x4 + 4 * i)));
      continue;
    }
    for (int u = 0; u < used; ++u) {
      if (xj[u] == 0) continue;
      for (index_t i = j + 1; i < m; ++i) x4[4 * i + u] = std::fma(-cj[i], xj[u], x4[4 * i + u]);
    }
  }
  for (index_t j = m - 1; j >= 0; --j) {
    const double* cj = l + j * ld;
    Lanes s = load_lanes(x4 + 4 * j);
    for (index_t i = j + 1; i < m; ++i) s = fnma(cj[i], load_lanes(x4 + 4 * i), s);
    store_lanes(x4 + 4 * j, s / splat(cj[j]));
  }
}

// In place S = L D Lᵀ of the a x a column-major SPD matrix s (lower triangle): the unit L below the diagonal
// and 1/D on it, so that ldl_solve needs no division and no square root, whose latencies dominate systems of a
// few unknowns. False when pivot p falls to min_pivot[p] or below (or is not finite), as cholesky().
bool ldl_reciprocal(double* s, index_t a, const double* min_pivot) {
  for (index_t p = 0; p < a; ++p) {
    double* cp = s + p * a;
    const double d = cp[p];
    if (!(d > min_pivot[p]) || !std::isfinite(d)) return false;
    const double inv = 1.0 / d;
    cp[p] = inv;
    for (index_t i = p + 1; i < a; ++i) cp[i] *= inv;
    for (index_t c = p + 1; c < a; ++c) {
      const double scp = cp[c] * d;  // the entry before scaling
      double* cc = s + c * a;
      for (index_t r = c; r < a; ++r) cc[r] -= cp[r] * scp;
    }
  }
  return true;
}

// Solves L D Lᵀ x = y in place for ldl_reciprocal's factor.
void ldl_solve(const double* s, index_t a, double* y) {
  for (index_t p = 0; p < a; ++p) {
    const double* cp = s + p * a;
    for (index_t i = p + 1; i < a; ++i) y[i] -= cp[i] * y[p];
  }
  for (index_t p = 0; p < a; ++p) y[p] *= s[p + p * a];
  for (index_t i = a - 1; i >= 0; --i) {
    const double* ci = s + i * a;
    double sum = y[i];
    for (index_t r = i + 1; r < a; ++r) sum -= ci[r] * y[r];
    y[i] = sum;
  }
}

constexpr double kParallelFlops = 2 * util::kMinParallelMultiplyAdds;  // two flops per multiply-add

int thread_id() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// Below this many flops a loop runs on one thread: starting a team costs more than the work, and on a loaded
// machine a thread waiting at the join can cost a scheduler time slice (issue 14: a 96x21 BPP iteration
// took 100x longer with 2 threads). The threshold is measured by bench_threads (docs/benchmarks.md).
bool worth_threads(double flops) { return flops >= kParallelFlops; }

// The same rule for the passes that touch each of `entries` matrix entries a few times (load, store and the
// finiteness check of B): about four operations per entry.
bool worth_threads_per_entry(double entries) { return worth_threads(4.0 * entries); }

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
    // Counted in parallel first (B has k x n entries, and a serial scan idled the other threads); only a bad
    // matrix is scanned again, in order, for the first offending entry.
    const bool parallel = worth_threads_per_entry(static_cast<double>(m.rows) * static_cast<double>(m.cols));
    const index_t bad = util::count_over(m.cols, parallel, [&](index_t j) {
      index_t column_bad = 0;
      for (index_t i = 0; i < m.rows; ++i) column_bad += std::isfinite(m(i, j)) ? 0 : 1;
      return column_bad;
    });
    if (bad == 0) return;
    for (index_t j = 0; j < m.cols; ++j) {
      for (index_t i = 0; i < m.rows; ++i) {
        const T v = m(i, j);
        if (!std::isfinite(v)) {
          std::ostringstream s;
          s << "nnls_bpp: " << name << " has " << (std::isnan(v) ? "a NaN" : "an infinite value") << " at (row " << i
            << ", column " << j << ")";
          // Inside a fit that is its products overflowing (float entries above ~1e25 at small sizes): a
          // numerical breakdown, as the other solvers report it, with the remedy.
          s << ": the products overflowed or the data is not finite; rescale the matrix (e.g. divide it by its "
               "largest entry) or compute in float64";
          throw NumericalError(s.str());
        }
      }
    }
  };
  finite("G", g);
  finite("B", b);
}

template <class T>
void equilibrate(DenseView<const T> g, double tikhonov, NnlsStats& stats, Scaled& s) {
  const index_t k = g.rows;
  s.k = k;
  s.gs.assign(to_size(k * k), 0.0);
  s.inv_d.assign(to_size(k), 0.0);
  s.shift.assign(to_size(k), 0.0);
  s.abs_shift.assign(to_size(k), 0.0);
  s.live.assign(to_size(k), 0);
  double max_diag = 0;
  for (index_t i = 0; i < k; ++i) max_diag = std::max(max_diag, static_cast<double>(g(i, i)));
  // A column of C whose norm is below eps(T) times the largest is lost in any product with the others, so its
  // variable is unconstrained noise; the same test catches exact zeros and negative diagonals.
  const double eps = std::numeric_limits<T>::epsilon();
  const double dead_below = eps * eps * max_diag;
  for (index_t i = 0; i < k; ++i) {
    const double gii = g(i, i);
    if (max_diag > 0 && gii > dead_below && gii >= std::numeric_limits<double>::min()) {
      s.live[i] = 1;
      s.inv_d[i] = 1.0 / std::sqrt(gii);
      s.shift[i] = std::max(kAutoShift, tikhonov / gii);
      s.abs_shift[i] = s.shift[i] * gii;
    } else {
      ++stats.dead_variables;
    }
  }
  // Each pair (i, j) once, both entries from one symmetrised value (each rounded as its own entry was before),
  // through plain pointers: with the vectors' members the compiler reloaded every data pointer after each store,
  // and this loop was most of a one-column call's own time (the masked BPP solves one column per call).
  const char* live = s.live.data();
  const double* inv_d = s.inv_d.data();
  double* gs = s.gs.data();
  for (index_t j = 0; j < k; ++j) {
    if (live[j] == 0) continue;
    gs[j + j * k] = 1.0;
    const double d_j = inv_d[j];
    for (index_t i = j + 1; i < k; ++i) {
      if (live[i] == 0) continue;
      const double sym = 0.5 * (static_cast<double>(g(i, j)) + static_cast<double>(g(j, i)));
      gs[i + j * k] = (sym * inv_d[i]) * d_j;
      gs[j + i * k] = (sym * d_j) * inv_d[i];
    }
  }
}

// Per-column pivoting state.
struct ColumnState {
  int ninf = 0;  // smallest infeasible-set size seen so far
  int p = kAlpha;
  bool done = false;
};

// Pivoting's per-call arrays, kept by NnlsBuffers between calls.
struct PivotingStore {
  std::vector<double> bs, z;
  std::vector<double> inverse;  // k x k: the shifted Gs's inverse on the live variables, zero elsewhere
  std::vector<Word> passive;
  std::vector<std::uint64_t> keys;         // passive set and column of each active column in one word (k <= 32)
  std::vector<std::uint64_t> key_scratch;  // the radix sort's second buffer
  std::vector<ColumnState> state;
  std::vector<Workspace> workspaces;
  std::vector<index_t> active, group_start;
  std::vector<index_t> big_groups, lane_columns;  // a round's groups solved one at a time, and columns in lanes
  std::vector<index_t> lane_sorted;               // order_by_passive_count's scratch
};

void check_nnls_options(const NnlsOptions& options) {
  if (options.max_rounds < 0) {
    throw Error("nnls_bpp: max_rounds is " + std::to_string(options.max_rounds) + ", expected >= 0");
  }
  if (!std::isfinite(options.tikhonov) || options.tikhonov < 0) {
    throw Error("nnls_bpp: tikhonov is " + std::to_string(options.tikhonov) + ", expected finite and >= 0");
  }
}

// Block principal pivoting over all columns of the equilibrated problem: rounds of grouped passive-set solves
// and exchanges, then Lawson-Hanson for the columns that reached the cap.
class Pivoting {
 public:
  // max_inverse_cond: the largest condition number of the shifted Gs solved through its inverse (0: never);
  // use_lanes: NnlsOptions::lane_solves.
  Pivoting(const Scaled& s, index_t n, index_t max_rounds, double max_inverse_cond, bool use_lanes, NnlsStats& stats,
           PivotingStore& store)
      : s_(s),
        k_(s.k),
        n_(n),
        words_((s.k + kWordBits - 1) / kWordBits),
        max_rounds_(max_rounds),
        stats_(stats),
        bs_(store.bs),
        z_(store.z),
        inverse_(store.inverse),
        passive_(store.passive),
        state_(store.state),
        workspaces_(store.workspaces),
        active_(store.active),
        group_start_(store.group_start),
        keys_(store.keys),
        key_scratch_(store.key_scratch),
        max_inverse_cond_(max_inverse_cond),
        lanes_(use_lanes && n > 1 && s.k <= kLaneMaxK),
        big_groups_(store.big_groups),
        lane_columns_(store.lane_columns),
        lane_sorted_(store.lane_sorted) {
    // load() writes every entry of bs_ and passive_: only the solutions start from zeros (a variable outside its
    // column's passive set is never written). Filling all three cost 2-3% of a float32 BPP iteration.
    bs_.resize(to_size(k_ * n));
    z_.assign(to_size(k_ * n), 0.0);
    passive_.resize(to_size(words_ * n));
    state_.assign(to_size(n), ColumnState{});
    // One workspace per thread its regions can get: one when called inside an active region that cannot nest
    // (the masked solver's per-column solves), where a team's worth would be allocated per column for nothing.
    int threads = 1;
#ifdef _OPENMP
    if (omp_get_active_level() < omp_get_max_active_levels()) threads = omp_get_max_threads();
#endif
    if (workspaces_.size() != to_size(threads) || workspaces_.front().size() != k_) {
      workspaces_.clear();
      workspaces_.reserve(to_size(threads));
      for (int t = 0; t < threads; ++t) workspaces_.emplace_back(k_);
    }
    if (lanes_) {
      const auto size = to_size(3 * solvers::passive_lanes_ld(k_) + solvers::passive_lanes_work(k_));
      for (Workspace& ws : workspaces_) {
        ws.lanes.resize(size);
        ws.lane_idx.resize(to_size(k_));
      }
    }
  }

  // Scales B's columns and starts each passive set at X's positive live entries.
  template <class T>
  void load(DenseView<const T> B, DenseView<T> X) {
    const bool all_live = std::all_of(s_.live.begin(), s_.live.end(), [](char l) { return l != 0; });
    const double* inv_d = s_.inv_d.data();
    util::for_each_index(n_, worth_threads_per_entry(static_cast<double>(k_) * n_), [&](index_t j) {
      double* bj = bs_.data() + j * k_;
      Word* pj = passive_.data() + j * words_;
      const T* b = &B(0, j);
      if (all_live) {  // the usual case, without a test per entry: the loop then runs in vectors
        for (index_t i = 0; i < k_; ++i) bj[i] = static_cast<double>(b[i]) * inv_d[i];
      } else {
        for (index_t i = 0; i < k_; ++i) bj[i] = s_.live[i] ? static_cast<double>(b[i]) * inv_d[i] : 0.0;
      }
      // Each word built in a register: flipping bits in memory made every bit wait for the one before.
      for (index_t w = 0; w < words_; ++w) {
        Word word = 0;
        for (index_t i = w * kWordBits; i < std::min(k_, (w + 1) * kWordBits); ++i)
          word |= Word{s_.live[i] != 0 && X(i, j) > T(0)} << (i % kWordBits);
        pj[w] = word;
      }
      state_[j].ninf = static_cast<int>(k_) + 1;  // beta = k + 1
    });
  }

  void solve() {
    choose_base_growth();
    active_.resize(to_size(n_));
    for (index_t j = 0; j < n_; ++j) active_[j] = j;
    index_t rounds = 0;
    for (; rounds < max_rounds_ && !active_.empty(); ++rounds) {
      group_by_passive_set();
      solve_round();
      active_.erase(std::remove_if(active_.begin(), active_.end(), [&](index_t j) { return state_[j].done; }),
                    active_.end());
    }
    stats_.rounds = rounds;
    stats_.rounds_cap_hits = static_cast<index_t>(active_.size());
    if (!active_.empty()) finish_capped_columns();
  }

  // Converting a double beyond T's range is undefined behaviour, hence the explicit bound.
  template <class T>
  void store(DenseView<T> X) const {
    const double t_max = static_cast<double>(std::numeric_limits<T>::max());
    const bool all_live = std::all_of(s_.live.begin(), s_.live.end(), [](char l) { return l != 0; });
    const double* inv_d = s_.inv_d.data();
    stats_.nonfinite_zeroed +=
        util::count_over(n_, worth_threads_per_entry(static_cast<double>(k_) * n_), [&](index_t j) {
          const double* zj = z_.data() + j * k_;
          T* xj = &X(0, j);
          int finite = 1;
          // Accepted infeasibilities are below kFeasTol and clamp to zero. v <= t_max is false for NaN too.
          if (all_live) {  // as below without a test per entry, so that the loop runs in vectors
            for (index_t i = 0; i < k_; ++i) {
              const double v = std::max(zj[i], 0.0) * inv_d[i];
              const bool ok = v <= t_max;
              finite &= static_cast<int>(ok);
              xj[i] = ok ? static_cast<T>(v) : T(0);
            }
          } else {
            for (index_t i = 0; i < k_; ++i) {
              const double v = s_.live[i] ? std::max(zj[i], 0.0) * inv_d[i] : 0.0;
              const bool ok = v <= t_max;
              finite &= static_cast<int>(ok);
              xj[i] = ok ? static_cast<T>(v) : T(0);
            }
          }
          if (finite) return index_t{0};
          for (index_t i = 0; i < k_; ++i) X(i, j) = T(0);
          return index_t{1};
        });
  }

 private:
  // One factorisation of the whole live Gs picks the shift level every group starts from. Without it, when
  // rounding leaves G indefinite (float data, k above the rank) each group would settle on its own shift, the
  // problem being solved would change from round to round, and the pivoting could wander until the cap.
  //
  // The factor is kept in thread 0's workspace for the first group that thread solves, whose passive set is
  // often the base's leading set: the leading m x m block of a Cholesky factor is the factor of the leading
  // m x m submatrix, formed by the same operations. A single column (the masked solver's calls) orders its
  // passive variables first, so its first round needs no factorisation of its own; several columns keep
  // increasing order, which leads with the passive set "all live" of warm-started dense problems.
  void choose_base_growth() {
    Workspace& ws = workspaces_.front();
    const Word* first_set = n_ == 1 ? passive_.data() : nullptr;  // the leading variables; all live without it
    const auto leads = [&](index_t i) { return first_set == nullptr || bit(first_set, i); };
    index_t m = 0;
    for (index_t i = 0; i < k_; ++i) {
      if (s_.live[i] && leads(i)) ws.idx[m++] = i;
    }
    const index_t lead = m;
    for (index_t i = 0; i < k_; ++i) {
      if (s_.live[i] && !leads(i)) ws.idx[m++] = i;
    }
    if (m == 0) return;
    const double growth = factorise(s_, m, 1.0, ws, stats_.shift_retries);
    base_growth_ = std::max(1.0, growth);
    base_lead_ = growth > 0 ? lead : -1;
    base_size_ = m;
    live_ = m;
    // With the lane solves, the groups left (four columns or more) share a factorisation, and the inverse
    // would cost more than it saves.
    inverse_ready_ = !lanes_ && max_inverse_cond_ > 0 && n_ > 1 && growth > 0 && build_inverse(ws, m, growth);
  }

  // Several columns whose passive sets leave out a few live variables each (the usual case once ANLS settles,
  // when almost every column has a set of its own) would each pay a factorisation of their passive block,
  // ~m³/6 multiply-adds. With the inverse M of the whole shifted Gs (K), the passive-set solution follows from
  // M alone: for P passive and C the other live variables, K_PP⁻¹ = M_PP − M_PC M_CC⁻¹ M_CP, so z = u − M_{:,C}λ
  // with u = M_{:,P} b_P and M_CC λ = u_C, which is k·m + |C|·k multiply-adds and a |C| x |C| factorisation.
  // M comes from the base factor just made (k³ more, once per call), and is used only while K is well
  // conditioned: its error in z grows with cond(K) where a factorisation's grows with cond(K_PP) ≤ cond(K).
  // A single column (the masked solver's calls) keeps its factorisations: M would cost more than they do.
  // The inverse's leading dimension: whole lanes per column, the padding rows zero.
  index_t inverse_ld() const { return (k_ + 3) / 4 * 4; }

  bool build_inverse(Workspace& ws, index_t m, double growth) {
    const index_t kp = inverse_ld();
    inverse_.assign(to_size(kp * k_), 0.0);
    double k_norm = 0, m_norm = 0;
    double* x4 = ws.rhs4.data();
    for (index_t t0 = 0; t0 < m; t0 += 4) {  // four unit vectors per pass of the factor
      const int used = static_cast<int>(std::min<index_t>(4, m - t0));
      std::fill(x4, x4 + 4 * m, 0.0);
      for (int u = 0; u < used; ++u) x4[4 * (t0 + u) + u] = 1.0;
      cholesky_solve4(ws.chol.data(), m, ws.chol_ld, x4, used);
      for (int u = 0; u < used; ++u) {
        const index_t jt = ws.idx[t0 + u];
        double col_k = s_.shift[jt] * growth, col_m = 0;
        for (index_t r = 0; r < m; ++r) {
          const double v = x4[4 * r + u];
          inverse_[to_size(ws.idx[r] + jt * kp)] = v;
          col_m += std::abs(v);
          col_k += std::abs(s_.gs[to_size(ws.idx[r] + jt * k_)]);
        }
        if (!std::isfinite(col_m)) return false;
        k_norm = std::max(k_norm, col_k);
        m_norm = std::max(m_norm, col_m);
      }
    }
    return k_norm * m_norm <= max_inverse_cond_;
  }

  // Whether thread 0's workspace holds the factor of a group whose passive indices (in ws.idx, increasing) are
  // the base factor's leading ones; if so, the workspace is pointed at that block. Only thread 0 reads or
  // clears the mark, and its first group decides: any group it factorises overwrites the base factor.
  bool take_base_factor(Workspace& ws, index_t m) {
    if (&ws != &workspaces_.front() || base_lead_ < 0) return false;
    const bool same = m == base_lead_;
    base_lead_ = -1;
    if (same) ws.chol_ld = base_size_;
    return same;
  }

  // Sorting by passive set makes columns with equal sets adjacent; the order among equal sets is kept by
  // index so that results do not depend on the sort's tie handling.
  void group_by_passive_set() {
    if (k_ <= 32 && n_ <= (index_t{1} << 32)) {
      group_by_packed_key();
      return;
    }
    std::sort(active_.begin(), active_.end(), [&](index_t a, index_t b) {
      const Word* pa = passive_.data() + a * words_;
      const Word* pb = passive_.data() + b * words_;
      for (index_t w = 0; w < words_; ++w) {
        if (pa[w] != pb[w]) return pa[w] < pb[w];
      }
      return a < b;
    });
    group_start_.clear();
    for (std::size_t c = 0; c < active_.size(); ++c) {
      if (c == 0 || !std::equal(passive_.begin() + active_[c] * words_, passive_.begin() + (active_[c] + 1) * words_,
                                passive_.begin() + active_[c - 1] * words_)) {
        group_start_.push_back(static_cast<index_t>(c));
      }
    }
    group_start_.push_back(static_cast<index_t>(active_.size()));
  }

  // The same order for k <= 32: a passive set then fits the high half of a word and the column the low half, so
  // one sort of contiguous integers replaces an indirect comparison of two passive rows (5% of a sparse BPP
  // iteration before), and it is a radix sort (std::sort's comparisons were then 6% of the iteration).
  void group_by_packed_key() {
    keys_.resize(active_.size());
    for (std::size_t c = 0; c < active_.size(); ++c)
      keys_[c] = (passive_[to_size(active_[c])] << 32) | static_cast<std::uint64_t>(active_[c]);
    util::radix_sort(keys_, key_scratch_);
    group_start_.clear();
    constexpr std::uint64_t kColumnBits = 0xFFFFFFFFu;
    for (std::size_t c = 0; c < keys_.size(); ++c) {
      active_[c] = static_cast<index_t>(keys_[c] & kColumnBits);
      if (c == 0 || (keys_[c] >> 32) != (keys_[c - 1] >> 32)) group_start_.push_back(static_cast<index_t>(c));
    }
    group_start_.push_back(static_cast<index_t>(active_.size()));
  }

  // What a round's groups did, kept per thread and added up after the round (sums and maxima, so the totals do
  // not depend on which thread did what).
  struct Tally {
    index_t factorised = 0, by_inverse = 0, retries = 0, backups = 0, zeroed = 0;
    double shift = 0, growth = 0;
    Word seen = 0;  // the variables passive in a lane solve (their shifts count in `shift`)
  };

  void solve_round() {
    const index_t ngroups = static_cast<index_t>(group_start_.size()) - 1;
    const double flops = static_cast<double>(k_) * k_ * (static_cast<double>(ngroups) * k_ / 3.0 + active_.size());
    // The columns of groups too small to share a factor's solves are solved kColumnLanes at a time in lanes
    // (passive_lanes.hpp); the other groups one at a time.
    big_groups_.clear();
    lane_columns_.clear();
    index_t lane_groups = 0;
    for (index_t gi = 0; gi < ngroups; ++gi) {
      const index_t first = group_start_[gi], last = group_start_[gi + 1];
      if (lanes_ && last - first < kLaneGroupLimit && any_passive(active_[first])) {
        lane_columns_.insert(lane_columns_.end(), active_.begin() + first, active_.begin() + last);
        ++lane_groups;
      } else {
        big_groups_.push_back(gi);
      }
    }
    if (!lane_columns_.empty()) {
      order_by_passive_count();
      prepare_lane_problem();
    }
    const index_t nbig = static_cast<index_t>(big_groups_.size());
    const index_t nbatches =
        (static_cast<index_t>(lane_columns_.size()) + solvers::kColumnLanes - 1) / solvers::kColumnLanes;
    const auto task = [&](index_t t, Workspace& ws, Tally& tally) {
      if (t < nbig) {
        solve_group(big_groups_[to_size(t)], ws, tally);
      } else {
        solve_lane_batch(t - nbig, ws, tally);
      }
    };
    const index_t tasks = nbig + nbatches;
    const int threads = worth_threads(flops) ? static_cast<int>(workspaces_.size()) : 1;
    tallies_.assign(to_size(threads), Tally{0, 0, 0, 0, 0, 0, base_growth_, 0});
    if (threads > 1) {
      util::ParallelFailure failure;  // an exception may not leave the region (parallel_loops.hpp)
#pragma omp parallel for schedule(dynamic)
      for (index_t t = 0; t < tasks; ++t) {
        const int id = thread_id();
        failure.run([&] { task(t, workspaces_[to_size(id)], tallies_[to_size(id)]); });
      }
      failure.rethrow();
    } else {  // no OpenMP construct (util/parallel_loops.hpp says why); a serial call has one workspace for certain
      for (index_t t = 0; t < tasks; ++t) task(t, workspaces_.front(), tallies_.front());
    }
    Tally total{lane_groups, 0, 0, 0, 0, 0, base_growth_, 0};
    for (const Tally& t : tallies_) {
      total.factorised += t.factorised;
      total.by_inverse += t.by_inverse;
      total.retries += t.retries;
      total.backups += t.backups;
      total.zeroed += t.zeroed;
      total.shift = std::max(total.shift, t.shift);
      total.growth = std::max(total.growth, t.growth);
      total.seen |= t.seen;
    }
    for (index_t i = 0; i < k_ && total.seen != 0; ++i) {
      if (((total.seen >> i) & 1U) != 0) total.shift = std::max(total.shift, s_.abs_shift[i] * base_growth_);
    }
    base_lead_ = -1;  // base_growth_ may rise below, and the factor was made at the old level
    if (total.growth > base_growth_) inverse_ready_ = false;  // the inverse is of the old level's matrix
    stats_.groups += total.factorised;
    stats_.inverse_groups += total.by_inverse;
    stats_.lane_columns += static_cast<index_t>(lane_columns_.size());
    stats_.shift_retries += total.retries;
    stats_.backup_rule_uses += total.backups;
    stats_.nonfinite_zeroed += total.zeroed;
    stats_.shift = std::max(stats_.shift, total.shift);
    // Only ever raised, and from a max over groups, so the level (and the answer) is independent of threads.
    base_growth_ = total.growth;
  }

  bool any_passive(index_t column) const {
    const Word* pset = passive_.data() + column * words_;
    Word any = 0;
    for (index_t w = 0; w < words_; ++w) any |= pset[w];
    return any != 0;
  }

  void solve_group(index_t gi, Workspace& ws, Tally& tally) {
    const index_t first = group_start_[gi];
    const index_t last = group_start_[gi + 1];
    if (last < static_cast<index_t>(active_.size())) {
      // The groups visit columns in passive-set order, scattered over bs and z: ask for the next group's first
      // column while this one is solved.
      const index_t next = active_[last];
      __builtin_prefetch(bs_.data() + next * k_);
      __builtin_prefetch(bs_.data() + next * k_ + k_ - 1);
      __builtin_prefetch(z_.data() + next * k_, 1);
      __builtin_prefetch(z_.data() + next * k_ + k_ - 1, 1);
    }
    const index_t m = passive_indices(active_[first], ws);
    // Through the inverse while the complement is at most half the live variables: beyond that the passive
    // block's own factorisation is the cheaper one.
    if (m > 0 && inverse_ready_ && 2 * (live_ - m) <= live_ &&
        solve_group_by_inverse(first, last, m, ws, tally.backups, tally.zeroed)) {
      ++tally.factorised;
      ++tally.by_inverse;
      for (index_t r = 0; r < m; ++r) tally.shift = std::max(tally.shift, s_.abs_shift[ws.idx[r]] * base_growth_);
      return;
    }
    solve_by_factor(active_.data() + first, last - first, m, ws, tally);
  }

  // The count columns cols[0..count), which share a passive set of m variables (in ws.idx), solved through a
  // factorisation of its block and pivoted.
  void solve_by_factor(const index_t* cols, index_t count, index_t m, Workspace& ws, Tally& tally) {
    double growth = base_growth_;
    if (m > 0) {
      ++tally.factorised;
      // The base factor was made at base_growth_ on its last try, so it is what factorise would return here.
      growth = take_base_factor(ws, m) ? base_growth_ : factorise(s_, m, base_growth_, ws, tally.retries);
      tally.growth = std::max(tally.growth, growth);
      for (index_t r = 0; r < m; ++r) tally.shift = std::max(tally.shift, s_.abs_shift[ws.idx[r]] * growth);
    }
    index_t c = 0;
    // Columns in fours (a group of two or three padded) share the factor's triangular solves.
    if (growth != 0 && m > 0 && count >= 2) {
      for (; c < count; c += 4) {
        const int used = static_cast<int>(std::min<index_t>(4, count - c));
        double zscale[4] = {0, 0, 0, 0};
        bool finite[4] = {true, true, true, true};
        solve_passive4(cols + c, used, m, ws, finite, zscale);
        for (int u = 0; u < used; ++u)
          pivot_column(cols[c + u], m, finite[u], zscale[u], ws, tally.backups, tally.zeroed);
      }
    }
    for (; c < count; ++c) {
      double zscale = 0;
      const bool solved = growth != 0 && solve_passive(cols[c], m, ws, zscale);
      pivot_column(cols[c], m, solved, zscale, ws, tally.backups, tally.zeroed);
    }
  }

  // A batch's systems are as large as its largest passive set: lane_columns_ sorted by passive-set size
  // (stable, a counting sort) keeps the padding small.
  void order_by_passive_count() {
    index_t count[kLaneMaxK + 2] = {};
    for (const index_t j : lane_columns_) ++count[__builtin_popcountll(passive_[to_size(j)]) + 1];
    for (index_t c = 1; c <= kLaneMaxK + 1; ++c) count[c] += count[c - 1];
    lane_sorted_.resize(lane_columns_.size());
    for (const index_t j : lane_columns_)
      lane_sorted_[to_size(count[__builtin_popcountll(passive_[to_size(j)])]++)] = j;
    lane_columns_.swap(lane_sorted_);
  }

  // The lane solves' problem: Gs with whole lanes per column, and the diagonal they add and the pivots they
  // accept, factorise's at base_growth_.
  void prepare_lane_problem() {
    const index_t kp = solvers::passive_lanes_ld(k_);
    lane_gs_.assign(to_size(kp * k_), 0.0);
    for (index_t j = 0; j < k_; ++j) std::copy_n(s_.gs.data() + j * k_, k_, lane_gs_.data() + j * kp);
    // Gs padded to 2k x 2k with the identity in its last k rows and columns: a lane's padding positions (indices
    // k..2k) read a unit diagonal, zeros elsewhere, no diagonal addition and no pivot bound (solve_lane_batch).
    const index_t ldp = 2 * k_;
    lane_gp_.assign(to_size(ldp * ldp), 0.0);
    for (index_t j = 0; j < k_; ++j) std::copy_n(s_.gs.data() + j * k_, k_, lane_gp_.data() + j * ldp);
    for (index_t p = k_; p < ldp; ++p) lane_gp_[to_size(p + p * ldp)] = 1.0;
    lane_add_.assign(to_size(ldp), 0.0);
    lane_min_pivot_.assign(to_size(ldp), 0.0);
    for (index_t i = 0; i < k_; ++i) {
      lane_add_[to_size(i)] = s_.shift[i] * base_growth_;
      lane_min_pivot_[to_size(i)] = kPivotFraction * lane_add_[to_size(i)];
    }
  }

  // Batch `batch` of lane_columns_ (kColumnLanes columns, the last batch padded with empty sets) solved in lanes
  // and pivoted. A column whose factorisation failed at base_growth_ is solved again by solve_by_factor, which
  // raises the shift as a group would. Lane solves run for k <= kLaneMaxK only, so a passive set is one word.
  void solve_lane_batch(index_t batch, Workspace& ws, Tally& tally) {
    using solvers::ColumnLanes, solvers::ColumnMask, solvers::kColumnLanes;
    const index_t first = kColumnLanes * batch;
    const int used =
        static_cast<int>(std::min<index_t>(kColumnLanes, static_cast<index_t>(lane_columns_.size()) - first));
    const index_t* cols = lane_columns_.data() + first;
    const index_t kp = solvers::passive_lanes_ld(k_);
    // Each lane's passive variables in increasing order (the r-th of lane u at idx[r][u]), and the largest count:
    // the order of the batch's systems.
    ColumnMask* idx = ws.lane_idx.data();
    ColumnMask order{}, words{};
    index_t m = 0;
    for (int u = 0; u < kColumnLanes; ++u) {
      Word w = u < used ? passive_[to_size(cols[u])] : 0;
      words[u] = static_cast<long long>(w);  // NOLINT(google-runtime-int): the vector's own type
      tally.seen |= w;
      index_t c = 0;
      for (; w != 0; w &= w - 1) idx[c++][u] = __builtin_ctzll(w);
      order[u] = c;
      m = std::max(m, c);
    }
    ColumnLanes* b = ws.lanes.data();
    ColumnLanes* z = b + kp;
    ColumnLanes* gz = z + kp;
    const solvers::PassiveLanesSystem sys(m, gz + kp);
    const index_t mp = solvers::passive_lanes_ld(m);
    // The systems: each lane's passive block of Gs with factorise's diagonal addition (added to Gs's entry), its
    // pivot bounds and its right-hand side, and the identity beyond the block's order. Positions past a lane's
    // order get indices k + r, which lane_gp_ pads with the identity: every entry of the batch is then one read
    // of lane_gp_ per lane at the same (r, c), with no loop whose length varies by lane (per-lane loops of 1-16
    // turns mispredicted their exits: a third of this function's time in float32 BPP).
    for (int u = 0; u < kColumnLanes; ++u)
      for (index_t r = u < used ? order[u] : 0; r < m; ++r) idx[r][u] = k_ + r;
    const index_t ldp = 2 * k_;
    const double* gp = lane_gp_.data();
    const ColumnLanes zero = ColumnLanes{};
    for (index_t c = 0; c < m; ++c) {
      const ColumnMask column = idx[c] * static_cast<long long>(ldp);  // NOLINT(google-runtime-int)
      ColumnLanes* ac = sys.a + c * mp;
      for (index_t r = c; r < m; ++r) {
        const ColumnMask at = column + idx[r];
        ac[r] = ColumnLanes{gp[at[0]], gp[at[1]], gp[at[2]], gp[at[3]]};
      }
      for (index_t r = m; r < mp; ++r) ac[r] = zero;
      ColumnLanes add = zero, min_pivot = zero, x = zero;
      for (int u = 0; u < kColumnLanes; ++u) {
        const index_t i = idx[c][u];
        add[u] = lane_add_[to_size(i)];
        min_pivot[u] = lane_min_pivot_[to_size(i)];
        x[u] = i < k_ ? bs_[to_size(cols[u] * k_ + i)] : 0.0;
      }
      ac[c] += add;
      sys.min_pivot[c] = min_pivot;
      sys.x[c] = x;
    }
    for (index_t r = m; r < mp; ++r) sys.x[r] = zero;
    constexpr index_t W = kColumnLanes;
    auto* bl = reinterpret_cast<double*>(b);
    for (int u = 0; u < used; ++u) {
      const double* bu = bs_.data() + cols[u] * k_;
      for (index_t i = 0; i < k_; ++i) bl[i * W + u] = bu[i];
    }
    for (index_t i = 0; i < kp; ++i) {  // the padding lanes' and rows' b
      for (int u = used; u < kColumnLanes; ++u) b[i][u] = 0;
      if (i >= k_) b[i] = zero;
    }
    const unsigned failed = solvers::solve_passive_lanes(sys);
    for (index_t i = 0; i < kp; ++i) z[i] = zero;
    for (int u = 0; u < used; ++u) {
      for (index_t r = 0; r < order[u]; ++r) z[idx[r][u]][u] = sys.x[r][u];
    }
    solvers::gram_times_lanes(lane_gs_.data(), k_, z, gz);
    // pivot_column's test in lanes: most columns are done after their first solve, and only the others need
    // the exchange, one column at a time.
    ColumnLanes zscale = zero, bscale = zero;
    ColumnMask finite = zero == zero;
    for (index_t i = 0; i < k_; ++i) {
      zscale = solvers::max_abs(zscale, z[i]);
      bscale = solvers::max_abs(bscale, b[i]);
      finite &= z[i] - z[i] == zero;  // NaN for a NaN or infinite value
    }
    const ColumnLanes tol_z = kFeasTol * zscale;
    const ColumnLanes tol_y = kFeasTol * (bscale + zscale);
    ColumnMask any_bad = zero != zero;
    for (index_t i = 0; i < k_; ++i) {
      if (s_.live[i] == 0) continue;
      const ColumnMask passive = ((words >> i) & 1) != 0;
      any_bad |= (passive & (z[i] < -tol_z)) | (~passive & (gz[i] - b[i] < -tol_y));
    }
    for (int u = 0; u < used; ++u) {
      const index_t j = cols[u];
      if (((failed >> u) & 1U) != 0) {
        const index_t mj = passive_indices(j, ws);
        solve_by_factor(&j, 1, mj, ws, tally);
        continue;
      }
      double* zj = z_.data() + j * k_;
      for (index_t i = 0; i < k_; ++i) zj[i] = z[i][u];
      if (finite[u] != 0 && any_bad[u] == 0) {
        state_[j].done = true;
        continue;
      }
      for (index_t i = 0; i < k_; ++i) ws.gz[to_size(i)] = gz[i][u];
      pivot_column(j, 0, finite[u] != 0, zscale[u], ws, tally.backups, tally.zeroed, true);
    }
  }

  // Without branches: whether a variable is passive is a coin toss, and a mispredicted branch per variable cost
  // more than the solve.
  index_t passive_indices(index_t column, Workspace& ws) const {
    const Word* pset = passive_.data() + column * words_;
    index_t m = 0;
    for (index_t i = 0; i < k_; ++i) {
      ws.idx[m] = i;
      m += static_cast<index_t>(bit(pset, i));
    }
    return m;
  }

  // Column j solved on its passive set (`solved`: the factor existed and the solution is finite, its largest
  // magnitude zscale): exchanges the infeasible indices, or marks the column done.
  void pivot_column(index_t j, index_t m, bool solved, double zscale, Workspace& ws, index_t& backups, index_t& zeroed,
                    bool gradient_ready = false) {
    double* zj = z_.data() + j * k_;
    ColumnState& st = state_[j];
    if (!solved) {
      std::fill(zj, zj + k_, 0.0);
      st.done = true;
      ++zeroed;
      return;
    }
    const double* bj = bs_.data() + j * k_;
    double bscale = 0;
    for (index_t i = 0; i < k_; ++i) bscale = std::max(bscale, std::abs(bj[i]));
    if (!gradient_ready) gradient_part(j, m, ws);
    const Infeasible bad{bit_row(j), zj, ws.gz.data(), bj, kFeasTol * zscale, kFeasTol * (bscale + zscale)};
    int ninf = 0;
    index_t last_bad = -1;
    for (index_t i = 0; i < k_; ++i) {  // without branches: which side a variable is on is a coin toss
      const bool b = (s_.live[i] != 0) & bad(i);
      ninf += static_cast<int>(b);
      last_bad = b ? i : last_bad;
    }
    if (ninf == 0) {
      st.done = true;
      return;
    }
    exchange(j, st, ninf, last_bad, bad, backups);
  }

  // The group's columns solved through the inverse (build_inverse says how) and pivoted. False, with nothing
  // changed, when the complement block's factorisation fails; the caller then factorises the passive block.
  bool solve_group_by_inverse(index_t first, index_t last, index_t m, Workspace& ws, index_t& backups,
                              index_t& zeroed) {
    const Word* pset = passive_.data() + active_[first] * words_;
    index_t a = 0;
    for (index_t i = 0; i < k_; ++i) {  // branchless, as passive_indices
      ws.cidx[a] = i;
      a += static_cast<index_t>((s_.live[i] != 0) & !bit(pset, i));
    }
    double* schur = ws.schur.data();
    const double* inv = inverse_.data();
    const index_t kp = inverse_ld();
    for (index_t c = 0; c < a; ++c) {
      for (index_t r = c; r < a; ++r) schur[r + c * a] = inv[ws.cidx[r] + ws.cidx[c] * kp];
      ws.min_pivot[c] = 1e-8 * schur[c + c * a];  // a Schur pivot that cancelled to noise
    }
    if (a > 0 && !ldl_reciprocal(schur, a, ws.min_pivot.data())) return false;
    double* lambda = ws.lambda.data();
    double* u = ws.u.data();
    double* coef = ws.coef.data();
    for (index_t c = first; c < last; ++c) {
      const index_t j = active_[c];
      double* zj = z_.data() + j * k_;
      const double* bj = bs_.data() + j * k_;
      for (index_t r = 0; r < m; ++r) coef[r] = bj[ws.idx[r]];
      inverse_columns(m, ws.idx.data(), coef, nullptr, u);  // u = M_{:,P} b_P
      if (a > 0) {
        for (index_t t = 0; t < a; ++t) lambda[t] = u[ws.cidx[t]];
        ldl_solve(schur, a, lambda);  // M_CC λ = u_C
        for (index_t t = 0; t < a; ++t) coef[t] = -lambda[t];
        inverse_columns(a, ws.cidx.data(), coef, u, u);  // z = u − M_{:,C} λ
      }
      // z_C is zero in exact arithmetic: made exact. K z = b̃ − E_C λ (K M = I, b̃ = b_P and zeros), so the
      // gradient there, (Gs z − bs)_C, is −λ − bs_C with no product: gz_C = −λ.
      for (index_t t = 0; t < a; ++t) {
        u[ws.cidx[t]] = 0;
        ws.gz[to_size(ws.cidx[t])] = -lambda[t];
      }
      // Dead and padding rows of u are zero, so its largest magnitude is the passive part's.
      solvers::Lanes big = solvers::splat(0), nan = big;  // nan: v - v is NaN for a NaN or infinite v, else 0
      for (index_t i = 0; i < kp; i += 4) {
        const solvers::Lanes v = solvers::load_lanes(u + i);
        big = v > big ? v : big;
        big = -v > big ? -v : big;
        nan += v - v;
      }
      const double zscale = std::max(std::max(big[0], big[1]), std::max(big[2], big[3]));
      const bool finite = solvers::lane_sum(nan) == 0;
      std::copy(u, u + k_, zj);
      pivot_column(j, m, finite, zscale, ws, backups, zeroed, true);
    }
    return true;
  }

  // out = base + Σ_t M[:, cols[t]] · coef[t] (base nullptr: zero) over the kp rows of the padded inverse. Sixteen
  // rows at a time in four sets of lanes held in registers over the sum: through memory, each column's update
  // waited on the previous one's store.
  void inverse_columns(index_t count, const index_t* cols, const double* coef, const double* base, double* out) const {
    using solvers::Lanes, solvers::load_lanes, solvers::splat, solvers::store_lanes;
    const index_t kp = inverse_ld();
    const double* inv = inverse_.data();
    index_t i0 = 0;
    for (; i0 + 16 <= kp; i0 += 16) {
      Lanes a0 = base ? load_lanes(base + i0) : splat(0), a1 = base ? load_lanes(base + i0 + 4) : splat(0);
      Lanes a2 = base ? load_lanes(base + i0 + 8) : splat(0), a3 = base ? load_lanes(base + i0 + 12) : splat(0);
      for (index_t t = 0; t < count; ++t) {
        const double* col = inv + cols[t] * kp + i0;
        const Lanes w = splat(coef[t]);
        a0 += load_lanes(col) * w;
        a1 += load_lanes(col + 4) * w;
        a2 += load_lanes(col + 8) * w;
        a3 += load_lanes(col + 12) * w;
      }
      store_lanes(out + i0, a0);
      store_lanes(out + i0 + 4, a1);
      store_lanes(out + i0 + 8, a2);
      store_lanes(out + i0 + 12, a3);
    }
    for (; i0 < kp; i0 += 4) {
      Lanes acc = base ? load_lanes(base + i0) : splat(0);
      for (index_t t = 0; t < count; ++t) acc += load_lanes(inv + cols[t] * kp + i0) * splat(coef[t]);
      store_lanes(out + i0, acc);
    }
  }

  // solve_passive for the `used` (2..4) columns cols[0..used) at once, through cholesky_solve4.
  void solve_passive4(const index_t* cols, int used, index_t m, Workspace& ws, bool* finite, double* zscale) {
    double* x4 = ws.rhs4.data();
    for (index_t r = 0; r < m; ++r)
      for (int u = 0; u < 4; ++u) x4[4 * r + u] = u < used ? bs_[to_size(cols[u] * k_ + ws.idx[r])] : 0.0;
    cholesky_solve4(ws.chol.data(), m, ws.chol_ld, x4, used);
    for (int u = 0; u < used; ++u) finite[u] = place_solution(cols[u], m, ws, x4 + u, 4, zscale[u]);
  }

  // z_j = the passive-set solution (zero elsewhere); false when it is not finite.
  bool solve_passive(index_t j, index_t m, Workspace& ws, double& zscale) {
    const double* bj = bs_.data() + j * k_;
    double* rhs = ws.rhs.data();
    for (index_t r = 0; r < m; ++r) rhs[r] = bj[ws.idx[r]];
    if (m > 0) cholesky_solve(ws.chol.data(), m, ws.chol_ld, rhs);
    return place_solution(j, m, ws, rhs, 1, zscale);
  }

  // z_j = the m passive values at values[0], values[stride], ... in the passive positions, zero elsewhere; raises
  // zscale to their largest magnitude and returns whether they are all finite.
  bool place_solution(index_t j, index_t m, const Workspace& ws, const double* values, index_t stride, double& zscale) {
    double* zj = z_.data() + j * k_;
    std::fill(zj, zj + k_, 0.0);
    bool finite = true;
    for (index_t r = 0; r < m; ++r) {
      const double v = values[r * stride];
      zj[ws.idx[r]] = v;
      finite = finite && std::isfinite(v);
      zscale = std::max(zscale, std::abs(v));
    }
    return finite;
  }

  // ws.gz = Gs z_j on the live variables outside the passive set, the only ones whose gradient is tested (the
  // gradient y = Gs z - bs is formed there). |Gs_ij| <= 1 bounds its rounding error by about k * eps * zscale,
  // hence the tolerances' zscale terms.
  void gradient_part(index_t j, index_t m, Workspace& ws) const {
    const double* zj = z_.data() + j * k_;
    const Word* pset = passive_.data() + j * words_;
    double* gz = ws.gz.data();
    for (index_t i = 0; i < k_; ++i) {
      if (!s_.live[i] || bit(pset, i)) continue;
      double sum = 0;
      for (index_t r = 0; r < m; ++r) sum += s_.gs[to_size(i + ws.idx[r] * k_)] * zj[ws.idx[r]];
      gz[i] = sum;
    }
  }

  // Whether index i of a column is infeasible: a negative passive variable or a negative active gradient,
  // beyond rounding noise.
  struct Infeasible {
    const Word* passive;
    const double* z;
    const double* gz;
    const double* b;
    double tol_z, tol_y;
    // Both sides evaluated, without a branch (gz is read where it is stale, and then not used).
    bool operator()(index_t i) const {
      const bool p = bit(passive, i);
      return (p & (z[i] < -tol_z)) | (!p & (gz[i] - b[i] < -tol_y));
    }
  };

  Word* bit_row(index_t j) { return passive_.data() + j * words_; }

  // Kim & Park's rule: full exchanges while the infeasible set keeps shrinking (or for kAlpha more tries), else
  // Murty's backup rule, which flips only the last infeasible index and cannot cycle.
  void exchange(index_t j, ColumnState& st, int ninf, index_t last_bad, const Infeasible& bad, index_t& backups) {
    Word* pj = bit_row(j);
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
      for (index_t i = 0; i < k_; ++i) {
        if (!s_.live[i]) continue;
        if (bad(i)) flip(pj, i);
      }
    } else {
      flip(pj, last_bad);
      ++backups;
    }
  }

  void finish_capped_columns() {
    const index_t left = static_cast<index_t>(active_.size());
    index_t retries = 0;
    const double flops = static_cast<double>(k_) * k_ * k_ * static_cast<double>(left);
    const auto finish = [&](index_t c, Workspace& ws, index_t& retries) {
      const index_t j = active_[c];
      nnls_detail::lawson_hanson(s_, base_growth_, bs_.data() + j * k_, z_.data() + j * k_, ws, retries);
    };
    if (worth_threads(flops)) {
      util::ParallelFailure failure;
#pragma omp parallel for schedule(dynamic) reduction(+ : retries)
      for (index_t c = 0; c < left; ++c) failure.run([&] { finish(c, workspaces_[to_size(thread_id())], retries); });
      failure.rethrow();
    } else {
      for (index_t c = 0; c < left; ++c) finish(c, workspaces_.front(), retries);
    }
    stats_.shift_retries += retries;
    for (index_t i = 0; i < k_; ++i) stats_.shift = std::max(stats_.shift, s_.abs_shift[i] * base_growth_);
  }

  const Scaled& s_;
  const index_t k_, n_, words_, max_rounds_;
  NnlsStats& stats_;
  std::vector<double>& bs_;
  std::vector<double>& z_;
  std::vector<double>& inverse_;
  std::vector<Word>& passive_;
  std::vector<ColumnState>& state_;
  std::vector<Workspace>& workspaces_;
  std::vector<index_t>& active_;
  std::vector<index_t>& group_start_;
  std::vector<std::uint64_t>& keys_;
  std::vector<std::uint64_t>& key_scratch_;
  double base_growth_ = 1;
  index_t base_lead_ = -1;       // passive count whose factor leads the one choose_base_growth left in thread 0's ws
  index_t base_size_ = 0;        // that factor's order (its leading dimension)
  double max_inverse_cond_ = 0;  // kInverseCond<T>, or 0 without NnlsOptions::use_inverse
  bool inverse_ready_ = false;   // inverse_ holds the shifted Gs's inverse at base_growth_
  index_t live_ = 0;             // live variables
  bool lanes_ = false;           // small groups' columns solved in lanes (NnlsOptions::lane_solves, kLaneMaxK)
  std::vector<index_t>& big_groups_;
  std::vector<index_t>& lane_columns_;
  std::vector<index_t>& lane_sorted_;
  std::vector<double> lane_gs_, lane_gp_, lane_add_, lane_min_pivot_;
  std::vector<Tally> tallies_;
};

}  // namespace

/// What NnlsBuffers keeps: the equilibrated problem and the pivoting arrays.
struct NnlsBuffers::Parts {
  Scaled scaled;
  PivotingStore store;
};

NnlsBuffers::NnlsBuffers() : parts_(std::make_unique<Parts>()) {}
NnlsBuffers::~NnlsBuffers() = default;
NnlsBuffers::NnlsBuffers(NnlsBuffers&&) noexcept = default;
NnlsBuffers& NnlsBuffers::operator=(NnlsBuffers&&) noexcept = default;

template <class T>
NnlsStats nnls_bpp(DenseView<const T> G, DenseView<const T> B, DenseView<T> X, const NnlsOptions& options,
                   NnlsBuffers& buffers) {
  check_shapes_and_values(G, B, X);
  check_nnls_options(options);
  NnlsStats stats;
  const index_t k = G.rows;
  const index_t n = B.cols;
  stats.columns = n;
  if (n == 0 || k == 0) return stats;

  NnlsBuffers::Parts& parts = *buffers.parts_;
  equilibrate(G, options.tikhonov, stats, parts.scaled);
  Pivoting pivoting(parts.scaled, n, options.max_rounds > 0 ? options.max_rounds : k / 2 + 20,
                    options.use_inverse ? kInverseCond<T> : 0.0, options.lane_solves, stats, parts.store);
  pivoting.load(B, X);
  pivoting.solve();
  pivoting.store(X);
  return stats;
}

template <class T>
NnlsStats nnls_bpp(DenseView<const T> G, DenseView<const T> B, DenseView<T> X, const NnlsOptions& options) {
  NnlsBuffers buffers;
  return nnls_bpp(G, B, X, options, buffers);
}

template NnlsStats nnls_bpp<float>(DenseView<const float>, DenseView<const float>, DenseView<float>,
                                   const NnlsOptions&);
template NnlsStats nnls_bpp<double>(DenseView<const double>, DenseView<const double>, DenseView<double>,
                                    const NnlsOptions&);
template NnlsStats nnls_bpp<float>(DenseView<const float>, DenseView<const float>, DenseView<float>, const NnlsOptions&,
                                   NnlsBuffers&);
template NnlsStats nnls_bpp<double>(DenseView<const double>, DenseView<const double>, DenseView<double>,
                                    const NnlsOptions&, NnlsBuffers&);

}  // namespace dnmf
