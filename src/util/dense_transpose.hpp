// The transpose of a column-major matrix: the factors of a run on Aᵀ (or its row-major storage) handed back in
// A's terms, W from the solver's Wt, and given initial factors made the solver's.
#pragma once

#include <algorithm>

#include "dnmf/matrix.hpp"

namespace dnmf::util {

/// dst(j, i) = src(i, j) for the rows x cols column-major src (leading dimension ld_src) into the cols x rows
/// dst (ld_dst). In blocks of 64 x 16: a factor's transpose (20000 x 16, say) read one column at a time and
/// written one row at a time strides through the whole matrix on one side (a cache line per element written);
/// a block's reads and writes stay in L1.
template <class T>
void transpose_into(const T* src, index_t ld_src, index_t rows, index_t cols, T* dst, index_t ld_dst) {
  constexpr index_t kRowBlock = 64, kColBlock = 16;
  for (index_t j0 = 0; j0 < cols; j0 += kColBlock) {
    const index_t j1 = std::min(cols, j0 + kColBlock);
    for (index_t i0 = 0; i0 < rows; i0 += kRowBlock) {
      const index_t i1 = std::min(rows, i0 + kRowBlock);
      for (index_t i = i0; i < i1; ++i)
        for (index_t j = j0; j < j1; ++j) dst[j + i * ld_dst] = src[i + j * ld_src];
    }
  }
}

/// xᵀ as a new column-major matrix.
template <class T>
[[nodiscard]] DenseMatrix<T> transposed(const DenseMatrix<T>& x) {
  DenseMatrix<T> t(x.cols(), x.rows());
  transpose_into(x.data(), std::max<index_t>(x.rows(), 1), x.rows(), x.cols(), t.data(),
                 std::max<index_t>(x.cols(), 1));
  return t;
}

}  // namespace dnmf::util
