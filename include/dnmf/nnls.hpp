// dnmf: non-negative least squares for many right-hand sides by block principal pivoting, the inner solver of
// ANLS (alternating non-negative least squares).
#pragma once

#include "dnmf/matrix.hpp"

namespace dnmf {

/// Tuning knobs of nnls_bpp. The defaults are what ANLS uses; both exist mainly for tests and experiments.
struct NnlsOptions {
  /// Cap on pivoting rounds (one factorise-and-solve pass over the unfinished columns). 0 picks k/2 + 20. Block
  /// pivoting normally needs a handful of rounds (about 5 to 12 for k from 16 to 200), but on degenerate
  /// problems (k above the rank of C, duplicate columns) the backup rule can take thousands of single-index
  /// rounds. Columns that reach the cap are finished exactly by Lawson-Hanson (see NnlsStats::rounds_cap_hits),
  /// which costs about one factorisation per positive entry of the answer, so pivoting much longer than k/2
  /// rounds does not pay. Must be >= 0.
  int max_rounds = 0;
  /// Amount added to every diagonal entry of G, in G's own units (a ridge penalty 0.5*tikhonov*||x||^2).
  /// Whatever the value, entry i never gets less than the automatic shift 1e-12 * G_ii, so 0 means automatic.
  /// The automatic shift is relative to each diagonal entry rather than to trace(G)/k so that the answer does
  /// not depend on how the columns of C are scaled: a uniform shift would swamp variables with small G_ii.
  /// Where G plus the shift is not numerically positive definite (rounding in float data, k above the rank),
  /// the shift is multiplied by 100 until a Cholesky factorisation succeeds, first once for all of G so that
  /// every passive set is solved with the same shift, then per passive set if needed. Must be finite and >= 0.
  double tikhonov = 0;
  /// Whether calls with several columns may solve passive sets through the inverse of all of (shifted) G while
  /// G is well conditioned (1-norm condition number up to 1e5): each set then costs about k·m multiply-adds
  /// instead of a factorisation of its own (~m³/6), which is most of the cost once ANLS has settled and nearly
  /// every column has a set of its own. The answers agree with factorised ones to about cond(G)·eps relative.
  /// false factorises every set (and single-column calls always do).
  bool use_inverse = true;
  /// Whether calls with several columns may solve the columns whose passive set fewer than four columns share
  /// (once ANLS settles, nearly all of them) several at a time in SIMD lanes, each lane factorising its own
  /// passive block (for k up to 32; the inverse above is then not used). The answers agree with a factorisation
  /// of each set to rounding. false solves every set by its own factorisation, or through the inverse.
  bool lane_solves = true;
};

/// What one nnls_bpp call did; counters are for diagnostics and tests, not for control flow.
struct NnlsStats {
  /// Right-hand sides solved (B's column count).
  index_t columns = 0;
  /// Distinct non-empty passive sets solved, summed over rounds (one per set per round, however many columns
  /// share it): by a Cholesky factorisation of G restricted to the set, or through G's inverse.
  index_t groups = 0;
  /// Those of `groups` solved through the inverse of all of G instead of a factorisation of their own: used by
  /// calls with several columns while G is well conditioned and the set leaves out at most half the variables.
  index_t inverse_groups = 0;
  /// Columns solved in SIMD lanes (NnlsOptions::lane_solves), summed over rounds; their passive sets are counted
  /// in `groups`.
  index_t lane_columns = 0;
  /// Pivoting rounds performed, i.e. the round count of the slowest column (0 when there was nothing to do).
  index_t rounds = 0;
  /// Columns whose pivoting reached max_rounds. They are solved again by the Lawson-Hanson active-set method on
  /// the same (shifted) problem, which lowers the objective at every step and so cannot cycle.
  index_t rounds_cap_hits = 0;
  /// Times the single-index backup rule (Murty's rule) replaced the full exchange to break a cycle.
  index_t backup_rule_uses = 0;
  /// Variables pinned to zero because G_ii <= eps(T)^2 * max_j G_jj (a numerically zero column of C, e.g. an
  /// empty factor column): nothing bounds such a variable, and zero is the answer NMF wants.
  index_t dead_variables = 0;
  /// Factorisations that met a pivot below a quarter of the shift and were retried with the shift multiplied
  /// by 100 (G indefinite through rounding), including the initial factorisation of all of G.
  index_t shift_retries = 0;
  /// Columns set to zero because their solution was not finite (also after conversion to T) or no shift up to
  /// the largest retry made the factorisation succeed.
  index_t nonfinite_zeroed = 0;
  /// Largest amount actually added to a diagonal entry of G, in G's units, after any retries.
  double shift = 0;
};

/// Solves, for every column j, min_x 0.5 x'Gx - b_j'x subject to x >= 0, which is min ||C x - c_j|| over x >= 0
/// when G = C'C and B = C'c. Block principal pivoting with the full exchange rule and Murty's backup rule
/// (Kim & Park, SIAM J. Sci. Comput. 33(6), 2011); columns that share a passive set share one Cholesky
/// factorisation, and distinct passive sets are solved in parallel with OpenMP. Arithmetic is in double.
///
/// G is k x k, symmetric positive semi-definite (only its symmetric part is used); B and X are k x n. On entry
/// the positive entries of X seed the passive sets (ANLS passes its previous iterate); other values, including
/// NaN, are ignored. On exit X holds the solution, which is always finite and non-negative, also for singular,
/// ill-conditioned or zero G. Throws dnmf::Error for mismatched shapes, bad leading dimensions, NaN or infinite
/// entries in G or B, and bad options; never for the numerical content of a valid G.
template <class T>
NnlsStats nnls_bpp(DenseView<const T> G, DenseView<const T> B, DenseView<T> X, const NnlsOptions& options = {});

extern template NnlsStats nnls_bpp<float>(DenseView<const float>, DenseView<const float>, DenseView<float>,
                                          const NnlsOptions&);
extern template NnlsStats nnls_bpp<double>(DenseView<const double>, DenseView<const double>, DenseView<double>,
                                           const NnlsOptions&);

}  // namespace dnmf
