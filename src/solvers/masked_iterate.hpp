// The masked (weighted) alternating iteration on one process, A in memory: H half then W half, each column
// solved against its own weighted Gram matrix and numerator by the algorithm's ordinary column rule
// (solvers/<algorithm>.hpp), so the update rules are the unmasked ones with G and b replaced (docs/masked.md).
#pragma once

#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_loop.hpp"
#include "solvers/masked_problem.hpp"

namespace dnmf::solvers {

/// Runs the iteration from `factors` (Wt: k x m, H: k x n) and leaves the final ones there, normalised when
/// options.normalize. The result's errors and objective count observed entries only (weighted); W/H empty.
/// Rows and columns with no observed entry keep zero factors.
template <class T>
FactorResult<T> iterate_masked(const MaskedProblem<T>& problem, const FactorOptions& options, Factors<T>& factors);

/// After the loop, with the final factors on the host: normalises them when options.normalize and sets the
/// result's final figures.
template <class T>
void finish_masked(const MaskedProblem<T>& problem, const FactorOptions& options, Factors<T>& factors,
                   FactorResult<T>& result);

/// The dense half's numerator Yᵀ(W∘A) (k x h.cols, `yt` k x h.rows) into `out` with leading dimension `ld`, in
/// fixed blocks of columns on the caller's threads, each product serial: the same bits for any thread count.
template <class T>
void dense_weighted_numerator(const MaskedHalf<T>& h, const T* yt, index_t k, T* out, index_t ld);

/// Zeroes the factor rows and columns of the rows and columns with no observed entry (they stay zero).
template <class T>
void zero_unobserved(const MaskedProblem<T>& problem, Factors<T>& factors);

/// sqrt(Σ w (a - (WH)_ij)² / Σ w a²) over the observed entries, computed directly (Wt: k x m, H: k x n); with
/// `kl_objective`, also the weighted KL(A ‖ WH) = Σ w (a·log(a / m) − a + m) over them, stored there.
template <class T>
double masked_relative_error(const MaskedProblem<T>& problem, const DenseMatrix<T>& wt, const DenseMatrix<T>& h,
                             double* kl_objective = nullptr);

}  // namespace dnmf::solvers
