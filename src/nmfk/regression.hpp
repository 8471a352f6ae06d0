// The regression step of NMFk (DESIGN §6): H = argmin ||A − W H||_F, H ≥ 0, on the original A with W fixed
// at the centroids, distributed over a group's grid as one exact H half-iteration: Wᵀ A_ij on every rank,
// summed over the grid column (reduce-scatter, so each rank receives the columns of H it owns), then each
// column's NNLS solved by block principal pivoting from Wᵀa_j and WᵀW.
#pragma once

#include <optional>
#include <vector>

#include "nmfk/group.hpp"

namespace dnmf::rank_search {

/// The regression of one k, complete on the group's root.
struct RegressionRecord {
  index_t k = 0;
  double rel_error = 0;               ///< ||A − W H||_F / ||A||_F
  std::vector<double> column_errors;  ///< ||a_j − W h_j|| / ||a_j|| (0 where a_j = 0)
  DenseMatrix<double> H;              ///< k x n
  double seconds = 0;
};

/// Collective over the group; `W` (m x k, non-negative) is the same on every rank. Errors come from the
/// Gram identity ||a_j − W h_j||² = ||a_j||² − 2 h_jᵀ(Wᵀa_j) + h_jᵀ(WᵀW)h_j, in float64.
template <class T>
std::optional<RegressionRecord> regress(GroupContext<T>& group, const DenseMatrix<double>& W, BackendKind backend);

}  // namespace dnmf::rank_search
