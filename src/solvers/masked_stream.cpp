// See masked_stream.hpp. Vocabulary: the "own" half is the factor whose columns are the tiles' lines (H for
// column stripes, Wᵀ for row stripes); the "other" half is the remaining factor, whose columns accumulate over
// a whole pass. Per line figures and per other-line accumulators are summed in a fixed order, so the results do
// not depend on the thread count.

#include "solvers/masked_stream.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/update_rules.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "solvers/masked_checks.hpp"
#include "solvers/masked_loop.hpp"
#include "solvers/solve.hpp"
#include "solvers/update_rule.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::solvers {
namespace {

using backend::Side;

/// A tile pair as the iteration reads it: `lines` lines of the own half, each with entries against the other
/// half's lines. Dense: line l's entry against other line r sits at offset(l, r) in `a` and `w`.
template <class T>
struct TileLines {
  bool sparse = false;
  bool columns = true;  // column stripes: lines are A's columns
  const T* a = nullptr;
  const T* w = nullptr;  // the mask's tile, or nullptr (weight 1)
  index_t ld = 1, lines = 0, others = 0;
  index_t first = 0;  // the tile's first line in the block
  const index_t* ptr = nullptr;
  const col_index_t* idx = nullptr;
  bool nan_missing = false;

  TileLines(const stream::Tile<T>& at, const stream::Tile<T>* wt, backend::Side side, bool nan)
      : sparse(at.sparse), columns(side == Side::H), nan_missing(nan) {
    first = at.range.first;
    if (sparse) {
      a = at.values.data();
      ptr = at.indptr.data();
      idx = at.indices.data();
      lines = at.rows;
      others = at.cols;
      return;
    }
    a = at.lent != nullptr ? at.lent : at.values.data();
    if (wt != nullptr) w = wt->lent != nullptr ? wt->lent : wt->values.data();
    ld = std::max<index_t>(at.rows, 1);
    lines = columns ? at.cols : at.rows;
    others = columns ? at.rows : at.cols;
  }
  [[nodiscard]] std::size_t offset(index_t l, index_t r) const { return to_size(columns ? l * ld + r : r * ld + l); }
  /// The weight of a stored entry: the mask's (1 without one), 0 for a NaN taken as missing.
  [[nodiscard]] double weight(T a_value, std::size_t at) const {
    if (missing_as_nan(nan_missing, a_value)) return 0.0;
    return w != nullptr ? static_cast<double>(w[at]) : 1.0;
  }
  /// f(r, a, w) for every observed entry (w > 0) of line l.
  template <class F>
  void each(index_t l, F&& f) const {
    if (sparse) {
      for (index_t p = ptr[l]; p < ptr[l + 1]; ++p) {
        const double wt = weight(a[p], to_size(p));
        if (wt > 0) f(static_cast<index_t>(idx[p]), static_cast<double>(a[p]), wt);
      }
      return;
    }
    for (index_t r = 0; r < others; ++r) {
      const std::size_t at = offset(l, r);
      const double wt = weight(a[at], at);
      if (wt > 0) f(r, static_cast<double>(a[at]), wt);
    }
  }
};

template <class T>
double dot(const T* y, const T* x, index_t k) {
  double s = 0;
  for (index_t l = 0; l < k; ++l) s += static_cast<double>(y[l]) * static_cast<double>(x[l]);
  return s;
}

/// What one line's update (or a pass's sums) leaves for the figures: residual (Σ w (a - yᵀx)² at the state the
/// sum was taken), KL's figures and the cap hits.
using Sums = MaskedSums;

/// Per-thread scratch for one line's rule.
template <class T>
struct Scratch {
  std::vector<double> b, c, g;
  std::vector<T> bt, ct, gt, nx;
  explicit Scratch(index_t k)
      : b(to_size(k)),
        c(to_size(k)),
        g(to_size(k * k)),
        bt(to_size(k)),
        ct(to_size(k)),
        gt(to_size(k * k)),
        nx(to_size(k)) {}
};

/// Applies the algorithm's column rule to x (k) from b (numerator), c (MU: G x at the old x; KL: the weighted
/// sums s) and g (hals, bpp: the weighted Gram matrix), as iterate_masked does. Adds the KL model term.
template <class T>
void apply_rule(const backend::UpdateRule& rule, T* x, index_t k, Scratch<T>& s, Sums& out) {
  const backend::View<T> xv(x, k, 1, k);
  for (index_t l = 0; l < k; ++l) s.bt[to_size(l)] = static_cast<T>(s.b[to_size(l)]);
  const backend::CView<T> bv(s.bt.data(), k, 1, k);
  switch (rule.algorithm) {
    case Algorithm::mu:
      for (index_t l = 0; l < k; ++l) {
        const double denom = rule.l1 + rule.l2 * static_cast<double>(x[l]) + rule.eps + s.c[to_size(l)];
        s.nx[to_size(l)] = static_cast<T>(static_cast<double>(x[l]) * static_cast<double>(s.bt[to_size(l)]) / denom);
      }
      std::copy(s.nx.begin(), s.nx.end(), x);
      return;
    case Algorithm::kl:
      for (index_t l = 0; l < k; ++l) {
        out.kl_model += s.c[to_size(l)] * static_cast<double>(x[l]);
        s.ct[to_size(l)] = static_cast<T>(s.c[to_size(l)]);
      }
      out.cap_hits += backend::update_columns<T>(rule, xv, bv, bv, s.ct.data(), 0, 1);
      return;
    case Algorithm::hals:
    case Algorithm::bpp: {
      for (std::size_t e = 0; e < s.g.size(); ++e) s.gt[e] = static_cast<T>(s.g[e]);
      const backend::CView<T> gv(s.gt.data(), k, k, k);
      out.cap_hits += backend::update_columns<T>(rule, xv, bv, gv, nullptr, 0, 1);
      return;
    }
  }
}

/// Adds one observed entry (value a, weight w, other line y) to a line's sums at its current x: the numerator b,
/// and c = G x (MU) or the weighted sums s (KL), or the Gram matrix g (hals, bpp); KL's figures into `out`.
template <class T>
void add_entry(Algorithm algorithm, const T* y, const T* x, index_t k, double a, double w, double* b, double* c,
               double* g, Sums& out) {
  const double wa = w * a;
  switch (algorithm) {
    case Algorithm::mu: {
      const double wq = w * dot(y, x, k);
      for (index_t l = 0; l < k; ++l) {
        const double yl = static_cast<double>(y[l]);
        b[l] += wa * yl;
        c[l] += wq * yl;
      }
      return;
    }
    case Algorithm::kl: {
      const double q = dot(y, x, k);
      out.kl_squared += w * (a - q) * (a - q);
      for (index_t l = 0; l < k; ++l) c[l] += w * static_cast<double>(y[l]);
      if (wa == 0) return;
      const double qf = std::max(q, backend::kl_model_floor);
      out.kl_log += wa * std::log(a / qf);
      const double r = wa / qf;
      for (index_t l = 0; l < k; ++l) b[l] += r * static_cast<double>(y[l]);
      return;
    }
    case Algorithm::hals:
    case Algorithm::bpp:
      for (index_t q = 0; q < k; ++q) {
        const double yq = static_cast<double>(y[q]);
        b[q] += wa * yq;
        double* gq = g + q * k;
        for (index_t l = 0; l < k; ++l) gq[l] += w * yq * static_cast<double>(y[l]);
      }
      return;
  }
}

/// The iteration's state and its three kinds of work on a pass.
template <class T>
class Iteration {
 public:
  Iteration(StreamedMaskedProblem<T>& p, const FactorOptions& o, Factors<T>& f)
      : p_(p), o_(o), f_(f), side_(p.tiles->direction()), k_(o.rank) {
    const double eps =
        weighted_division_guard(o.algorithm, std::is_same_v<T, float>, p.weighted_squared_norm, p.weight_sum,
                                static_cast<double>(p.observed));  // as the in-memory iteration
    const auto& pen = o.penalties;
    const backend::UpdateRule rule_h = update_rule(o.algorithm, eps, pen.l1_h, pen.l2_h);
    const backend::UpdateRule rule_w = update_rule(o.algorithm, eps, pen.l1_w, pen.l2_w);
    own_is_h_ = side_ == Side::H;
    rule_own_ = own_is_h_ ? rule_h : rule_w;
    rule_other_ = own_is_h_ ? rule_w : rule_h;
    const index_t others = own_is_h_ ? p.m : p.n;
    b_.assign(to_size(k_ * others), 0.0);
    c_.assign(o.algorithm == Algorithm::mu || o.algorithm == Algorithm::kl ? to_size(k_ * others) : 0, 0.0);
    g_.assign(o.algorithm == Algorithm::hals || o.algorithm == Algorithm::bpp ? to_size(k_ * k_ * others) : 0, 0.0);
    other_sums_.assign(to_size(others), Sums{});
  }

  DenseMatrix<T>& own() { return own_is_h_ ? f_.h : f_.wt; }
  DenseMatrix<T>& other() { return own_is_h_ ? f_.wt : f_.h; }
  const std::vector<char>& own_unobserved() const { return own_is_h_ ? p_.unobserved_cols : p_.unobserved_rows; }
  const std::vector<char>& other_unobserved() const { return own_is_h_ ? p_.unobserved_rows : p_.unobserved_cols; }
  [[nodiscard]] bool own_is_h() const { return own_is_h_; }

  /// One pass. before: the residual at the state on entry (summed per line before its update); update: the
  /// own half's lines; after: the residual once they are updated; accumulate: the other half's sums with the
  /// own lines as they are after the tile's updates.
  struct PassSums {
    Sums own;    ///< the own lines': residuals, their update's KL figures and cap hits
    Sums other;  ///< the other half's KL figures (at its old x), summed in line order
  };
  PassSums pass(bool before, bool update, bool after, bool accumulate) {
    PassSums total;
    if (accumulate) {
      std::fill(b_.begin(), b_.end(), 0.0);
      std::fill(c_.begin(), c_.end(), 0.0);
      std::fill(g_.begin(), g_.end(), 0.0);
      std::fill(other_sums_.begin(), other_sums_.end(), Sums{});
    }
    p_.tiles->pass([&](const stream::Tile<T>& at, const stream::Tile<T>* wt) {
      const TileLines<T> tile(at, wt, side_, p_.nan_missing);
      total.own += own_lines(tile, before, update, after);
      if (accumulate) accumulate_other(tile);
    });
    if (accumulate)
      for (const Sums& s : other_sums_) total.other += s;
    return total;
  }

  /// The other half's update from the sums of the last accumulating pass. Returns the KL model term and NNLS
  /// cap hits (at the old x), summed in line order.
  Sums update_other() {
    DenseMatrix<T>& x = other();
    const std::vector<char>& unobserved = other_unobserved();
    const index_t lines = x.cols();
    std::vector<Sums> per_line(to_size(lines));
    util::for_each_index_dynamic_with(
        lines, true, [this] { return Scratch<T>(k_); },
        [&](index_t r, Scratch<T>& s) {
          T* xr = x.data() + r * k_;
          if (unobserved[to_size(r)] != 0) {
            std::fill(xr, xr + k_, T(0));
            return;
          }
          std::copy(b_.begin() + r * k_, b_.begin() + (r + 1) * k_, s.b.begin());
          if (!c_.empty()) std::copy(c_.begin() + r * k_, c_.begin() + (r + 1) * k_, s.c.begin());
          if (!g_.empty()) std::copy(g_.begin() + r * k_ * k_, g_.begin() + (r + 1) * k_ * k_, s.g.begin());
          apply_rule(rule_other_, xr, k_, s, per_line[to_size(r)]);
        },
        kColumnsPerHandout);
    Sums total;
    for (const Sums& s : per_line) total += s;
    return total;
  }

 private:
  Sums own_lines(const TileLines<T>& tile, bool before, bool update, bool after) {
    if (!before && !update && !after) return {};
    DenseMatrix<T>& x = own();
    const DenseMatrix<T>& y = other();
    const std::vector<char>& unobserved = own_unobserved();
    std::vector<Sums> per_line(to_size(tile.lines));
    const Algorithm algorithm = rule_own_.algorithm;
    util::for_each_index_dynamic_with(
        tile.lines, true, [this] { return Scratch<T>(k_); },
        [&](index_t l, Scratch<T>& s) {
          T* xl = x.data() + (tile.first + l) * k_;
          Sums& out = per_line[to_size(l)];
          // A pass that updates nothing (the final one) also sums KL's figures at the state it reads: the
          // iterations' are of the pair before the last update.
          const bool kl_terms = algorithm == Algorithm::kl && !update;
          const auto residual = [&] {
            tile.each(l, [&](index_t r, double a, double w) {
              const double q = dot(y.data() + r * k_, xl, k_);
              const double d = a - q;
              out.residual += w * d * d;
              if (kl_terms) {
                out.kl_log += backend::kl_log_term(w * a, w, q);
                out.kl_model += w * q;
              }
            });
          };
          if (before) residual();
          if (update) {
            if (unobserved[to_size(tile.first + l)] != 0) {
              std::fill(xl, xl + k_, T(0));
            } else {
              std::fill(s.b.begin(), s.b.end(), 0.0);
              std::fill(s.c.begin(), s.c.end(), 0.0);
              if (algorithm == Algorithm::hals || algorithm == Algorithm::bpp) std::fill(s.g.begin(), s.g.end(), 0.0);
              tile.each(l, [&](index_t r, double a, double w) {
                add_entry(algorithm, y.data() + r * k_, xl, k_, a, w, s.b.data(), s.c.data(), s.g.data(), out);
              });
              apply_rule(rule_own_, xl, k_, s, out);
            }
          }
          if (after) residual();
        },
        kColumnsPerHandout);
    Sums total;
    for (const Sums& s : per_line) total += s;
    return total;
  }

  /// The other half's sums over this tile's lines, with the own lines as they are now and the other half's
  /// current (old) x. Dense: in parallel over the other lines; CSR: in line order on one thread (a row tile's
  /// entries reach every column, and per-thread copies of the sums would cost a factor's memory per thread).
  void accumulate_other(const TileLines<T>& tile) {
    const DenseMatrix<T>& y = own();
    const DenseMatrix<T>& x = other();
    const Algorithm algorithm = rule_other_.algorithm;
    const auto add = [&](index_t r, index_t l, double a, double w) {
      double* c = c_.empty() ? nullptr : c_.data() + r * k_;
      double* g = g_.empty() ? nullptr : g_.data() + r * k_ * k_;
      add_entry(algorithm, y.data() + (tile.first + l) * k_, x.data() + r * k_, k_, a, w, b_.data() + r * k_, c, g,
                other_sums_[to_size(r)]);
    };
    if (tile.sparse) {
      for (index_t l = 0; l < tile.lines; ++l) tile.each(l, [&](index_t r, double a, double w) { add(r, l, a, w); });
      return;
    }
#pragma omp parallel for schedule(static)
    for (index_t r = 0; r < tile.others; ++r)
      for (index_t l = 0; l < tile.lines; ++l) {
        const std::size_t at = tile.offset(l, r);
        const double w = tile.weight(tile.a[at], at);
        if (w > 0) add(r, l, static_cast<double>(tile.a[at]), w);
      }
  }

  StreamedMaskedProblem<T>& p_;
  const FactorOptions& o_;
  Factors<T>& f_;
  Side side_;
  index_t k_;
  bool own_is_h_ = true;
  backend::UpdateRule rule_own_, rule_other_;
  std::vector<double> b_, c_, g_;  // the other half's numerators, G x or sums, Gram matrices (k per line, k²)
  std::vector<Sums> other_sums_;   // KL figures per other line
};

}  // namespace

template <class T>
void scan_masked_tiles(StreamedMaskedProblem<T>& p) {
  const Side side = p.tiles->direction();
  const bool columns = side == Side::H;
  std::vector<index_t> per_row(to_size(p.m), 0), per_col(to_size(p.n), 0);
  index_t observed = 0, non_unit = 0, nonzero = 0;
  double squared = 0, weighted = 0, plain = 0, weights = 0;
  bool sparse = false;
  p.tiles->pass([&](const stream::Tile<T>& at, const stream::Tile<T>* wt) {
    const TileLines<T> tile(at, wt, side, p.nan_missing);
    sparse = tile.sparse;
    const auto visit = [&](index_t l, index_t r, T a, std::size_t at_offset) {
      const index_t line = tile.first + l;
      const index_t i = columns ? r : line, j = columns ? line : r;
      T w = T(1);
      if (tile.w != nullptr) {
        w = tile.w[at_offset];
        check_weight(p.mask_name, i, j, w);
      }
      if (missing_as_nan(p.nan_missing, a)) w = T(0);
      non_unit += w != T(1) ? 1 : 0;
      if (!(w > 0)) return;
      check_observed_entry(p.a_name, i, j, a);
      ++observed;
      nonzero += a != T(0) ? 1 : 0;
      ++per_row[to_size(i)];
      ++per_col[to_size(j)];
      const double ad = static_cast<double>(a), wd = static_cast<double>(w);
      squared += wd * ad * ad;
      weighted += wd * ad;
      weights += wd;
      plain += ad;
    };
    for (index_t l = 0; l < tile.lines; ++l) {
      if (tile.sparse) {
        for (index_t q = tile.ptr[l]; q < tile.ptr[l + 1]; ++q)
          visit(l, static_cast<index_t>(tile.idx[q]), tile.a[q], to_size(q));
      } else {
        for (index_t r = 0; r < tile.others; ++r) visit(l, r, tile.a[tile.offset(l, r)], tile.offset(l, r));
      }
    }
  });
  p.observed = observed;
  p.observed_nonzero = nonzero;
  p.weighted_squared_norm = squared;
  p.weighted_sum = weighted;
  p.observed_sum = plain;
  p.weight_sum = weights;
  require_observed(observed, squared, weighted, weights, p.a_name);
  p.all_unit = !sparse && non_unit == 0;
  p.unobserved_rows.assign(to_size(p.m), 0);
  p.unobserved_cols.assign(to_size(p.n), 0);
  for (index_t i = 0; i < p.m; ++i) p.unobserved_rows[to_size(i)] = per_row[to_size(i)] == 0 ? 1 : 0;
  for (index_t j = 0; j < p.n; ++j) p.unobserved_cols[to_size(j)] = per_col[to_size(j)] == 0 ? 1 : 0;
  p.unobserved_row_count = std::count(p.unobserved_rows.begin(), p.unobserved_rows.end(), 1);
  p.unobserved_col_count = std::count(p.unobserved_cols.begin(), p.unobserved_cols.end(), 1);
}

template <class T>
FactorResult<T> solve_masked_streamed(StreamedMaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f,
                                      const DenseMatrix<T>* W0, const DenseMatrix<T>* H0) {
  check_options(options, p.m, p.n);
  if (options.init == InitMethod::nndsvd || options.init == InitMethod::nndsvda)
    throw UsageError("--init " + to_string(options.init) +
                     " needs A whole in memory; a masked run that streams A starts from --init random");
  const auto init_start = std::chrono::steady_clock::now();
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, p.m, p.n);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  // As solve_masked: the random start is scaled to the mean of the observed entries.
  const backend::MatrixStats stats = masked_stats(p);
  check_masked_scale<T>(p, options);
  InitialScale initial_scale;
  f = initialise<T>(*host, nullptr, layout, options, stats, W0, H0, &initial_scale);
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();

  const auto& pen = options.penalties;
  const bool kl = options.algorithm == Algorithm::kl;
  FactorResult<T> result = masked_result<T>(p.observed, p.unobserved_row_count, p.unobserved_col_count);
  result.init_seconds = init_seconds;
  record_initial_scale(result, initial_scale);
  zero_flagged_columns(f.h, p.unobserved_cols);
  zero_flagged_columns(f.wt, p.unobserved_rows);

  Iteration<T> run(p, options, f);
  // Each iteration's figures are recorded as iterate_masked records them; record() is true on a stop.
  MaskedRecorder<T> recorder(options, p.weighted_squared_norm, result);
  const auto frobenius = [&](double residual) { return frobenius_objective(residual, f, pen); };
  const int iterations = options.max_iterations;
  // The order of the halves (FactorOptions::w_first) decides whether the stripes' own half comes first.
  const bool own_first = options.w_first != run.own_is_h();
  if (own_first) {
    // Pass t updates the own half and accumulates the other's sums; the other half follows. Frobenius figures
    // need the state after both halves: they are summed in pass t + 1 before each line's update, and a stop
    // they call for undoes that pass's own-half updates (the copy below); the last iteration's are a pass of
    // their own.
    bool stopped = false;
    DenseMatrix<T> saved;
    for (int it = 1; it <= iterations && !stopped; ++it) {
      const bool pending = !kl && it > 1;
      double pending_objective = 0;
      if (pending) {
        saved = run.own();
        pending_objective = frobenius(0.0);
      }
      const auto s = run.pass(pending, true, false, true);
      result.nnls_cap_hits += s.own.cap_hits;
      if (pending && recorder.record(it - 1, s.own.residual, pending_objective + 0.5 * std::max(s.own.residual, 0.0))) {
        run.own() = std::move(saved);
        stopped = true;
        break;
      }
      const Sums o = run.update_other();
      result.nnls_cap_hits += o.cap_hits;
      // KL's figures are the second half's at its old x, as iterate_masked reports them.
      if (kl && recorder.record(it, s.other.kl_squared, s.other.kl_log - p.weighted_sum + o.kl_model)) stopped = true;
    }
    if (!stopped && !kl && iterations > 0) {
      const auto s = run.pass(true, false, false, false);
      recorder.record(iterations, s.own.residual, frobenius(s.own.residual));
    }
  } else {
    // The other half comes first: a pass accumulates its sums from the start, then pass t updates the own
    // half (the figures of iteration t at hand) and accumulates the other's sums for iteration t + 1.
    if (iterations > 0) {
      (void)run.pass(false, false, false, true);
      result.nnls_cap_hits += run.update_other().cap_hits;
    }
    for (int it = 1; it <= iterations; ++it) {
      const bool more = it < iterations;
      const Sums s = run.pass(false, true, !kl, more).own;
      result.nnls_cap_hits += s.cap_hits;
      const bool stop = kl ? recorder.record(it, s.kl_squared, s.kl_log - p.weighted_sum + s.kl_model + frobenius(0.0))
                           : recorder.record(it, s.residual, frobenius(s.residual));
      if (stop || !more) break;
      result.nnls_cap_hits += run.update_other().cap_hits;
    }
  }
  recorder.finish();
  if (options.normalize) normalise(f);
  const Sums final_pass = run.pass(true, false, false, false).own;
  set_final_figures(result, std::sqrt(final_pass.residual / p.weighted_squared_norm), p.weighted_squared_norm,
                    returned_penalty_terms(f, options));
  if (options.algorithm == Algorithm::kl)  // also after no iteration: the divergence at the start
    result.objective = final_pass.kl_log - p.weighted_sum + final_pass.kl_model + frobenius_objective(0.0, f, pen);
  return result;
}

std::int64_t masked_stream_bytes(Algorithm algorithm, index_t k, index_t m, index_t n, index_t lines_other,
                                 bool with_grams, std::size_t scalar_bytes) {
  const bool gram = algorithm == Algorithm::hals || algorithm == Algorithm::bpp;
  std::int64_t bytes = (gram ? 1 : 2) * k * lines_other * 8;  // b and (G x or s), float64
  if (gram && with_grams) bytes += k * k * lines_other * 8;
  bytes += lines_other * static_cast<std::int64_t>(sizeof(double) * 5);     // KL figures per line
  bytes += k * std::max(m, n) * static_cast<std::int64_t>(scalar_bytes);    // the saved own half
  bytes += (m + n) * static_cast<std::int64_t>(sizeof(index_t) + 1);        // counts and flags
  bytes += std::max(m, n) * static_cast<std::int64_t>(sizeof(double) * 5);  // per-line figures of a pass
  return bytes;
}

template void scan_masked_tiles<float>(StreamedMaskedProblem<float>&);
template void scan_masked_tiles<double>(StreamedMaskedProblem<double>&);
template FactorResult<float> solve_masked_streamed<float>(StreamedMaskedProblem<float>&, const FactorOptions&,
                                                          Factors<float>&, const DenseMatrix<float>*,
                                                          const DenseMatrix<float>*);
template FactorResult<double> solve_masked_streamed<double>(StreamedMaskedProblem<double>&, const FactorOptions&,
                                                            Factors<double>&, const DenseMatrix<double>*,
                                                            const DenseMatrix<double>*);

}  // namespace dnmf::solvers
