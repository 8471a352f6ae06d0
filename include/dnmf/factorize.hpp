// dnmf: the factorisation entry point.
#pragma once

#include <string>
#include <vector>

#include "dnmf/matrix.hpp"
#include "dnmf/options.hpp"

namespace dnmf {

/// Outcome of factorize(): A ≈ W H with W (m x k) and H (k x n) non-negative.
template <class T>
struct FactorResult {
  DenseMatrix<T> W;  ///< m x k, column-major
  DenseMatrix<T> H;  ///< k x n, column-major
  int iterations = 0;
  bool converged = false;                 ///< stopped by tol rather than by max_iterations
  double rel_error = 0;                   ///< ||A - WH||_F / ||A||_F of the returned factors
  double objective = 0;                   ///< final value of the algorithm's loss
  std::vector<double> rel_error_history;  ///< one entry per iteration
  std::vector<double> objective_history;  ///< one entry per iteration
  double seconds = 0;                     ///< iterations only (init excluded)
  double init_seconds = 0;
  std::string backend;  ///< backend name as run
  int threads = 1;
  bool fused = false;              ///< whether the single-pass iteration ran
  long long nnls_cap_hits = 0;     ///< bpp: columns whose pivoting hit its round cap (a warning)
  int extrapolation_restarts = 0;  ///< FactorOptions::extrapolate: steps that raised the objective (β shrank)
  int extrapolation_reverts = 0;   ///< ... of which so far (error doubled, or W·H gone) that the pair was dropped
  /// InitMethod::given: the powers of two the given W and H were multiplied by, because the mean of their product
  /// was more than 2^20 from A's or their mean entries more than 2^40 apart (a warning; 0, 0: taken as given).
  int initial_w_exponent = 0;
  int initial_h_exponent = 0;
  /// ||A||_F from the pass that checks A (absolute errors need no other pass); for a masked run the weighted
  /// norm of the observed entries, sqrt(Σ w·a²), the scale of its rel_error.
  double norm_a = 0;
  // Masked runs (FactorOptions::missing): rel_error and the histories count observed entries only, weighted.
  bool masked = false;
  index_t observed = 0;         ///< observed entries (weight > 0); m·n for an unmasked run
  index_t unobserved_rows = 0;  ///< rows of A with no observed entry: their rows of W are zero (a warning)
  index_t unobserved_cols = 0;  ///< columns of A with no observed entry: their columns of H are zero (a warning)
};

/// Factorises A (dense or CSR, all entries finite and >= 0) into W H.
/// W0/H0 are used when options.init == InitMethod::given (copied, not modified).
/// Throws dnmf::Error for bad options (rank outside 1..min(m,n), negative penalties, ...).
template <class T>
FactorResult<T> factorize(const MatrixRef<T>& A, const FactorOptions& options, const DenseMatrix<T>* W0 = nullptr,
                          const DenseMatrix<T>* H0 = nullptr);

/// Coefficients of new data on a fixed basis (see transform()).
template <class T>
struct TransformResult {
  DenseMatrix<T> H;             ///< k x n, non-negative
  double rel_error = 0;         ///< ||A - W H||_F / ||A||_F
  long long nnls_cap_hits = 0;  ///< columns whose pivoting hit its round cap (a warning, answer still feasible)
  index_t observed = -1;        ///< with missing values: the observed entries of A (-1: every entry)
  index_t unobserved_cols = 0;  ///< with missing values: columns of A with no observed entry (their H column is 0)
};

/// Penalties on the coefficients transform() solves: each column minimises its least squares plus
/// l1 Σ h + ½ l2 ‖h‖², as FactorOptions::penalties' H terms add them to a fit's H half (so that a penalised
/// fit's coefficients are what transform() gives for its own data).
struct TransformPenalty {
  double l1 = 0;
  double l2 = 0;
};

/// Solves H = argmin ||A - W H||_F (+ `penalty`) subject to H >= 0 with W (m x k) fixed, each column exactly by
/// block principal pivoting: projecting new data onto learned features, and NMFk's regression step.
/// Throws UsageError when W's row count differs from A's or a penalty is negative or not finite, DataError when W
/// has a negative or non-finite entry. The products run on the host whatever `backend` says (the cuda backend
/// included). rel_error is the fit's error, without the penalty terms. `threads`: OpenMP threads for the call
/// (0: OpenMP's default), as FactorOptions::threads.
template <class T>
TransformResult<T> transform(const MatrixRef<T>& A, DenseView<const T> W, BackendKind backend = BackendKind::cpu,
                             const TransformPenalty& penalty = {}, int threads = 0);

/// transform() of new data with missing values (docs/masked.md): each column solves min Σ_i w_ij (a_ij −
/// (W h_j)_i)², h_j ≥ 0, over A's observed entries only (the masked H half-step, exact by block principal
/// pivoting on the column's weighted Gram matrix). `missing` says what is observed as for factor(): a mask of A's
/// shape (0 = missing, > 0 = weight), NaN entries as missing, a sparse A's unstored entries as missing. A column
/// with no observed entry gets zeros, even when no column has one; rel_error is sqrt(Σ w (a − WH)² / Σ w a²)
/// over observed entries (0 when they are all zero). Runs on
/// the host whatever `backend` says, as the unmasked transform does; DataError naming the file and place for a
/// bad mask or entry, or for a bad W. `threads` as for the transform above.
template <class T>
TransformResult<T> transform(const Source& A, DenseView<const T> W, const MissingValues& missing,
                             BackendKind backend = BackendKind::cpu, const TransformPenalty& penalty = {},
                             int threads = 0);

/// ||A - W H||_F / ||A||_F computed directly (one pass, float64 sums): a check for the Gram identity.
template <class T>
double relative_error_direct(const MatrixRef<T>& A, DenseView<const T> W, DenseView<const T> H);

}  // namespace dnmf
