// The transpose of a column-major matrix: the factors of a run on Aᵀ (or its row-major storage) handed back in
// A's terms, and W from the solver's Wt.
#pragma once

#include "dnmf/matrix.hpp"

namespace dnmf::util {

/// xᵀ as a new column-major matrix.
template <class T>
[[nodiscard]] DenseMatrix<T> transposed(const DenseMatrix<T>& x) {
  DenseMatrix<T> t(x.cols(), x.rows());
  for (index_t j = 0; j < x.cols(); ++j)
    for (index_t i = 0; i < x.rows(); ++i) t(j, i) = x(i, j);
  return t;
}

}  // namespace dnmf::util
