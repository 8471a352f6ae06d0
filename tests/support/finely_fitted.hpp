// The problem the float32 stopping tests share (tests/api, tests/mpi, tests/unit): a planted matrix fitted to
// about 0.1% error, where float32's figures carry rounding as large as the objective's change per iteration, and
// the fixed scatter of missing entries they mask it with.
#pragma once

#include "dnmf/matrix.hpp"
#include "dnmf/planted.hpp"

namespace dnmf::test {

/// A planted rank-8 500x400 matrix with 0.1% noise.
inline PlantedOptions finely_fitted_planted() {
  PlantedOptions p;
  p.rows = 500;
  p.cols = 400;
  p.rank = 8;
  p.noise = 0.001;
  p.seed = 3;
  return p;
}

/// Weights 1 with every tenth entry (in a fixed scatter) 0 = missing.
template <class T>
DenseMatrix<T> tenth_missing(index_t rows, index_t cols) {
  DenseMatrix<T> mask(rows, cols, T(1));
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i)
      if ((i * 7 + j * 3) % 10 == 0) mask(i, j) = T(0);
  return mask;
}

}  // namespace dnmf::test
