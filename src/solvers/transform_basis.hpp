// dnmf internal: the basis W and the penalty a caller hands to transform(), checked for both transforms.
#pragma once

#include <cmath>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::solvers {

/// Wᵀ (k x m) of the caller's W (m x k). The basis is given by the caller, so it is checked like input data:
/// DataError naming the first negative or non-finite entry.
template <class T>
DenseMatrix<T> checked_basis_transpose(DenseView<const T> w) {
  DenseMatrix<T> wt(w.cols, w.rows);
  for (index_t l = 0; l < w.cols; ++l)
    for (index_t i = 0; i < w.rows; ++i) {
      const T v = w(i, l);
      if (!(std::isfinite(static_cast<double>(v)) && v >= T(0)))
        throw DataError("transform: W entry at row " + std::to_string(i) + ", column " + std::to_string(l) +
                        " is negative or not finite");
      wt(l, i) = v;
    }
  return wt;
}

/// UsageError unless both penalty terms are finite and >= 0.
inline void check_transform_penalty(const TransformPenalty& p) {
  if (!(std::isfinite(p.l1) && p.l1 >= 0 && std::isfinite(p.l2) && p.l2 >= 0))
    throw UsageError("transform: the penalties must be finite and >= 0 (l1 " + std::to_string(p.l1) + ", l2 " +
                     std::to_string(p.l2) + ")");
}

}  // namespace dnmf::solvers
