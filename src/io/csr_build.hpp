// dnmf internal: making rows of a CSR block canonical (columns sorted, duplicates summed), as the readers that
// assemble a block from entries in file order need.
#pragma once

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::io::detail {

// Short rows, the common case, are sorted in place; longer ones through a scratch array.
inline constexpr index_t kInsertionSortLimit = 32;

/// Stable sort of `count` (index, value) pairs by index, in place.
template <class T>
void insertion_sort(col_index_t* indices, T* values, index_t count) {
  for (index_t k = 1; k < count; ++k) {
    const col_index_t index = indices[k];
    const T value = values[k];
    index_t hole = k;
    for (; hole > 0 && indices[hole - 1] > index; --hole) {
      indices[hole] = indices[hole - 1];
      values[hole] = values[hole - 1];
    }
    indices[hole] = index;
    values[hole] = value;
  }
}

/// Sorts each row's entries by column, stably (so duplicates are summed in their given order), sums
/// duplicates and compacts the arrays; `indptr` (rows + 1 entries, starting at 0) is rewritten to match.
template <class T>
void sort_and_merge_rows(index_t rows, std::vector<index_t>& indptr, std::vector<col_index_t>& indices,
                         std::vector<T>& values) {
  std::vector<std::pair<col_index_t, T>> scratch;
  index_t write = 0;
  for (index_t i = 0; i < rows; ++i) {
    const index_t begin = indptr[i], end = indptr[i + 1];
    indptr[i] = write;
    if (std::is_sorted(indices.begin() + begin, indices.begin() + end)) {
      // files written row by row: nothing to do
    } else if (end - begin <= kInsertionSortLimit) {
      insertion_sort(indices.data() + begin, values.data() + begin, end - begin);
    } else {
      scratch.clear();
      for (index_t k = begin; k < end; ++k) scratch.emplace_back(indices[k], values[k]);
      std::stable_sort(scratch.begin(), scratch.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (index_t k = begin; k < end; ++k) std::tie(indices[k], values[k]) = scratch[k - begin];
    }
    for (index_t k = begin; k < end; ++k) {
      if (write > indptr[i] && indices[write - 1] == indices[k]) {
        values[write - 1] += values[k];
      } else {
        indices[write] = indices[k];
        values[write] = values[k];
        ++write;
      }
    }
  }
  indptr[rows] = write;
  indices.resize(to_size(write));
  values.resize(to_size(write));
}

}  // namespace dnmf::io::detail

namespace dnmf::io::detail {

/// The transpose of a CSR matrix (its CSC storage read as CSR): rows come out with their columns increasing.
template <class T>
CsrMatrix<T> transpose(const CsrMatrix<T>& a) {
  std::vector<index_t> indptr(to_size(a.cols()) + 1, 0);
  for (const col_index_t j : a.indices()) ++indptr[to_size(j) + 1];
  for (index_t j = 0; j < a.cols(); ++j) indptr[to_size(j) + 1] += indptr[to_size(j)];
  std::vector<index_t> next(indptr.begin(), indptr.end() - 1);
  std::vector<col_index_t> indices(a.indices().size());
  std::vector<T> values(a.values().size());
  for (index_t i = 0; i < a.rows(); ++i) {
    for (index_t k = a.indptr()[to_size(i)]; k < a.indptr()[to_size(i) + 1]; ++k) {
      const index_t slot = next[to_size(a.indices()[to_size(k)])]++;
      indices[to_size(slot)] = static_cast<col_index_t>(i);
      values[to_size(slot)] = a.values()[to_size(k)];
    }
  }
  return CsrMatrix<T>(a.cols(), a.rows(), std::move(indptr), std::move(indices), std::move(values));
}

}  // namespace dnmf::io::detail
