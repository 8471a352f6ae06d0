// dnmf internal: making rows of a CSR block canonical (columns sorted, duplicates summed), as the readers that
// assemble a block from entries in file order need.
#pragma once

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "dnmf/matrix.hpp"

namespace dnmf::io::detail {

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
    if (!std::is_sorted(indices.begin() + begin, indices.begin() + end)) {  // files written row by row are sorted
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
  indices.resize(static_cast<std::size_t>(write));
  values.resize(static_cast<std::size_t>(write));
}

}  // namespace dnmf::io::detail
