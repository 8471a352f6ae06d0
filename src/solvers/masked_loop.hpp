// What every masked solver (one process, device, 2-D grid, streamed) does around its half-steps: the figures a
// half-step or pass leaves, the result's bookkeeping per iteration (histories, progress, stopping rule,
// cancellation, breakdown), the penalties, normalisation and the zeroed factors of unobserved rows and columns.
// Only the half-steps differ between the solvers; the loop and the figures are these (docs/masked.md).
#pragma once

#include <chrono>
#include <functional>
#include <limits>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/solve.hpp"

namespace dnmf::solvers {

/// Columns (or lines) a masked solver hands to a thread at a time: each is a few microseconds of uneven work (its
/// list's length), so they go out in small batches rather than one by one.
inline constexpr index_t kColumnsPerHandout = 16;

/// The figures one half-step (or pass, or process) leaves, summed in a fixed order so that the result does not
/// depend on the thread count.
struct MaskedSums {
  double cross = 0;         ///< Σ_j x_jᵀ b_j with the new x (Frobenius)
  double quad = 0;          ///< Σ_j x_jᵀ G_j x_j with the new x (Frobenius)
  double cross_before = 0;  ///< MU: Σ_j x_jᵀ b_j with the old x, i.e. the previous iteration's cross term
  double quad_before = 0;   ///< MU: Σ_j x_jᵀ G_j x_j with the old x, i.e. the previous iteration's quadratic term
  double residual = 0;      ///< Σ w (a - yᵀx)², summed directly (streamed)
  double kl_log = 0;        ///< KL: Σ w a log(a / q) at the old x
  double kl_model = 0;      ///< KL: Σ w q at the old x
  double kl_squared = 0;    ///< KL: Σ w (a - q)² at the old x
  /// KL: Σ w q over the entries whose q the ratio pass formed, and their number. Where they are all the observed
  /// entries, the objective's model term comes from them (the log term's own q: a float q's rounding cancels
  /// between the two) rather than from kl_model.
  double kl_formed_model = 0;
  double kl_formed = 0;
  long long cap_hits = 0;  ///< bpp
  MaskedSums& operator+=(const MaskedSums& o);
};

/// What one masked iteration hands the loop: the weighted squared error its figure is, the objective (penalties
/// included) and the NNLS cap hits.
struct MaskedStep {
  double squared = 0;
  double objective = 0;
  long long cap_hits = 0;
  /// The fall of the objective's Frobenius part over the iteration, summed from each half's own sums before and
  /// after its update (float32's tol test reads it; NaN: the difference of the objectives).
  double frobenius_fall = std::numeric_limits<double>::quiet_NaN();
};

/// A masked problem's statistics as the random start and the scale check take them: the observed entries' mean
/// spread over all m x n cells (missing entries are not zeros) and their weighted squared norm.
/// (Any problem type with MaskedProblem's m, n, observed, observed_sum, weighted_squared_norm and weight_sum: the
/// streamed one too.)
template <class Problem>
backend::MatrixStats masked_stats(const Problem& p) {
  const double mean = p.observed_sum / static_cast<double>(p.observed);
  return {mean * static_cast<double>(p.m) * static_cast<double>(p.n), p.weighted_squared_norm};
}

/// check_scale (solve.hpp) of a masked problem, the same on every masked path: the statistics of masked_stats,
/// over the observed entries, in the weights' wording only where a mask's weights are not all 1 (a 0/1 mask, NaN
/// as missing, --unstored missing or a cross-validation fold leave A's own entries to blame).
template <class T, class Problem>
void check_masked_scale(const Problem& p, const FactorOptions& options) {
  // Σw over the observed entries is their count exactly when every weight is 1.
  const bool weighted = static_cast<bool>(options.missing.mask) && p.weight_sum != static_cast<double>(p.observed);
  check_scale<T>(masked_stats(p), p.m, p.n, options.algorithm, weighted, p.observed, -1,
                 p.weight_sum / static_cast<double>(p.observed));
}

/// A masked run's result before its first iteration: masked, the observed and unobserved counts, host backend.
template <class T>
FactorResult<T> masked_result(index_t observed, index_t unobserved_rows, index_t unobserved_cols);

/// Keeps a masked run's per-iteration figures in `result`, as every masked solver reports them. The clock
/// starts at construction.
template <class T>
class MaskedRecorder {
 public:
  MaskedRecorder(const FactorOptions& options, double weighted_squared_norm, FactorResult<T>& result);

  /// What iteration `it`'s figures call for.
  struct Verdict {
    bool broken = false;  ///< the objective or the error is not finite
    bool stop = false;    ///< the stopping rule is met
    bool cancel = false;  ///< FactorOptions::cancel said so
  };

  /// Records iteration `it` (the weighted squared error and the objective) unless it is broken, reports
  /// progress and applies the stopping rule; asks FactorOptions::cancel when `ask_cancel` (on a grid, rank 0
  /// alone asks, and its verdict is every rank's). `frobenius_fall` (MaskedStep's), where finite, gives the
  /// change the rule reads in float32 (with the penalties' change); else it reads the objectives' difference.
  Verdict note(int it, double squared, double objective, bool ask_cancel = true,
               double frobenius_fall = std::numeric_limits<double>::quiet_NaN());

  /// Acts on a verdict: throws NumericalError for a breakdown (as a CollectiveError when `collective`), Cancelled
  /// when cancelled; marks the run converged and returns true when it stops.
  bool act(int it, const Verdict& verdict, bool collective = false) const;

  /// note() then act() on one process; true when the run stops.
  bool record(int it, double squared, double objective,
              double frobenius_fall = std::numeric_limits<double>::quiet_NaN()) {
    return act(it, note(it, squared, objective, true, frobenius_fall));
  }

  /// Sets the result's iteration seconds (since construction).
  void finish() const;

 private:
  const FactorOptions& options_;
  double norm_;
  FactorResult<T>& result_;
  std::chrono::steady_clock::time_point start_;
  double previous_;
  double previous_penalties_;
};

/// The loop of a run whose iterations are whole steps (host and device): calls step(it) for it = 1, 2, ... and
/// records each with MaskedRecorder. The result's rel_error, norm_a and objective are left to finish_masked.
template <class T>
FactorResult<T> run_masked_loop(const MaskedProblem<T>& problem, const FactorOptions& options,
                                const std::function<MaskedStep(int)>& step);

/// The result's final figures: rel_error, norm_a = sqrt(Σ w a²) and the objective: with `returned_penalties` >= 0
/// (the penalty terms of the factors as returned) the Frobenius objective of the returned pair from the final error
/// and those terms, else the last iteration's. KL's callers then set their own.
/// Whether normalising the factors changes the Frobenius objective's penalty terms: normalize, a penalty set, and
/// not KL (whose objective, divergence and penalties, its callers set apart).
bool normalising_changes_penalties(const FactorOptions& options);

/// The penalty terms of `f` as returned (0 without penalties): the argument set_final_figures takes after the
/// normalisation. Always given, so that the objective follows the final error, which the masked solvers compute
/// directly (float32's identity had left the in-memory objective 7e-4 off its own rel_error).
template <class T>
double returned_penalty_terms(const Factors<T>& f, const FactorOptions& options);

template <class T>
void set_final_figures(FactorResult<T>& result, double rel_error, double weighted_squared_norm,
                       double returned_penalties = -1);

/// Σ x and Σ x² over a factor (the penalties' terms).
struct PenaltySums {
  double sum = 0, squares = 0;
};
template <class T>
PenaltySums penalty_sums(const DenseMatrix<T>& x);

/// l1 Σx + 0.5 l2 ||x||², each term only where its coefficient is not zero: a factor whose Σx² overflows
/// (entries near 1e154) has no l2 term to turn into 0 · inf = NaN when l2 is 0.
double penalty_terms(double l1, double l2, const PenaltySums& sums);

/// l1 Σx + 0.5 l2 ||x||² (0 without penalties).
template <class T>
double penalty(const DenseMatrix<T>& x, double l1, double l2);

/// The Frobenius objective ½ max(squared, 0) + the penalties of both factors.
template <class T>
double frobenius_objective(double squared, const Factors<T>& factors, const Penalties& penalties);

/// Σ_i Wt(l, i) per row l of Wt (k x m): W's column sums, the scales normalisation divides by.
template <class T>
std::vector<double> factor_scales(const DenseMatrix<T>& wt);

/// Divides row l of Wt by scale[l] and multiplies row l of H by it, where scale[l] > 0: W's columns sum to 1
/// and H absorbs the scale. True when an entry of H overflowed T (then see refuse_overflowed_scale).
template <class T>
[[nodiscard]] bool apply_scales(DenseMatrix<T>& wt, DenseMatrix<T>& h, const std::vector<double>& scale);

/// The DataError of factors that overflow T once normalised (H's rows take the scale: about A's column sums).
/// `agreed`: every process found it (a CollectiveError, said once on a grid).
template <class T>
[[noreturn]] void refuse_overflowed_scale(bool agreed);

/// apply_scales() with the scales of one process's whole Wt; refuses an overflow.
template <class T>
void normalise(Factors<T>& factors);

/// Zeroes column j of x (k x cols) where flags[offset + j] != 0: the factor columns of rows or columns of A
/// with no observed entry, held at zero.
template <class T, class Flag>
void zero_flagged_columns(DenseMatrix<T>& x, const std::vector<Flag>& flags, index_t offset = 0) {
  for (index_t j = 0; j < x.cols(); ++j)
    if (flags[to_size(offset + j)] != 0)
      for (index_t l = 0; l < x.rows(); ++l) x(l, j) = T(0);
}

}  // namespace dnmf::solvers
