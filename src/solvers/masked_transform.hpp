// Coefficients of new data on a fixed basis with missing values: the masked H half-step on its own. Each column
// h_j solves min Σ_i w_ij (a_ij − (W h_j)_i)² over h_j ≥ 0 exactly (block principal pivoting on the column's
// weighted Gram matrix G_j = Σ_i w_ij w_i w_iᵀ and b_j = Σ_i w_ij a_ij w_i, w_i the rows of W).
#pragma once

#include "dnmf/factorize.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/transform_basis.hpp"

namespace dnmf::solvers {

/// H (k x n) for `problem`'s A (m x n) and Wt (k x m, checked by the caller: finite, >= 0), each column with
/// component l's penalties penalty.l1[l] and penalty.l2[l] added (checked by the caller; empty: none). Columns with
/// no observed entry get zero; rel_error is the weighted error over the observed entries.
template <class T>
TransformResult<T> masked_transform(const MaskedProblem<T>& problem, const DenseMatrix<T>& wt,
                                    const ComponentPenalties& penalty = {});

}  // namespace dnmf::solvers
