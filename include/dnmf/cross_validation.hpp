// dnmf: choosing k by cross-validation on held-out entries (docs/masked.md). Each fold hides a random fraction
// of the observed entries, every k is fitted on the rest by the masked solver, and the error on the hidden
// entries says where more components stop helping.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dnmf/context.hpp"
#include "dnmf/options.hpp"
#include "dnmf/source.hpp"

namespace dnmf {

/// One finished (fold, k) fit, as cross_validate() reports it to CrossValidationOptions::progress.
struct CrossValidationProgress {
  int fold = 0;   ///< 0-based
  int folds = 0;  ///< of the run
  index_t k = 0;
  double heldout_error = 0;  ///< as CrossValidationRank::fold_errors
  double fit_error = 0;      ///< as CrossValidationRank::fit_errors
  int iterations = 0;        ///< the fit's iterations
};

/// Options of cross_validate().
struct CrossValidationOptions {
  std::vector<index_t> ks;  ///< the k values to try (any order, duplicates ignored)
  int folds = 5;            ///< independent random hold-outs, keyed by factor.seed and the fold number
  double holdout = 0.05;    ///< fraction of the observed entries hidden in each fold, 0 < holdout < 1
  /// Solver options (rank ignored); factor.missing says which entries are observed to begin with.
  FactorOptions factor;
  /// Called after each (fold, k) fit, in the order they run (folds outer, ks ascending); empty: no calls.
  std::function<void(const CrossValidationProgress&)> progress;
};

/// The held-out figures of one k.
struct CrossValidationRank {
  index_t k = 0;
  std::vector<double> fold_errors;  ///< per fold: sqrt(Σ_held w (a - WH)² / Σ_held w a²)
  double mean = 0;                  ///< mean over folds
  double standard_error = 0;        ///< standard deviation over folds / sqrt(folds) (0 for one fold)
  std::vector<double> fit_errors;   ///< per fold: the relative error on the entries it was fitted to
};

/// What cross_validate() returns.
struct CrossValidationResult {
  index_t rows = 0, cols = 0;
  index_t observed = 0;  ///< observed entries before any hold-out
  /// Rows and columns with no observed entry before any hold-out: zero factor rows in every fit, with nothing
  /// held out (factor warns of them; so does the cross-validation).
  index_t unobserved_rows = 0, unobserved_cols = 0;
  std::vector<index_t> held_out;  ///< entries hidden in each fold
  /// Per fold: rows and columns of A observed before the hold-out but left with no observed entry by it. Their
  /// factor rows are zero in that fold's fits, so their held-out entries score as predicted zeros for every k (a
  /// warning: use a smaller holdout or a denser matrix).
  std::vector<index_t> emptied_rows, emptied_cols;
  std::vector<CrossValidationRank> ranks;  ///< ascending k
  index_t best_k = 0;                      ///< the k with the lowest mean held-out error
  index_t selected_k = 0;                  ///< the smallest k whose mean is within one standard error of best_k's
  double seconds = 0;
  std::string precision;  ///< "f32" or "f64": the fits' arithmetic
};

/// Cross-validated choice of k for the matrix of `source` on one process (A held in memory; the masked
/// solver's paths). Throws dnmf::UsageError for bad options (empty ks, folds < 1, holdout outside (0, 1), a k
/// that does not fit) and what factor() with a mask throws for bad input.
template <class T>
CrossValidationResult cross_validate(const Source& source, const CrossValidationOptions& options,
                                     const Context& context = Context());

/// The warning a result deserves ("" when none): rows or columns with no observed entry at all, and folds whose
/// hold-out left rows or columns with no observed entry, named with the largest such counts over the folds.
std::string cross_validation_warning(const CrossValidationResult& result);

/// The result as JSON (cv.json of `dnmf cv`): options, per-k errors, the rule and the chosen k.
std::string cross_validation_json(const CrossValidationResult& result, const CrossValidationOptions& options);

}  // namespace dnmf
