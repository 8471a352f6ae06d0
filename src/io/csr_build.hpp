// dnmf internal: making rows of a CSR block canonical (columns sorted, duplicates summed), as the readers that
// assemble a block from entries in file order need.
#pragma once

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"
#include "util/parallel_loops.hpp"

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

/// Sorts each row's entries by column, stably: duplicates stay, side by side in their given order.
template <class T>
void sort_rows(index_t rows, const std::vector<index_t>& indptr, std::vector<col_index_t>& indices,
               std::vector<T>& values) {
  std::vector<std::pair<col_index_t, T>> scratch;
  for (index_t i = 0; i < rows; ++i) {
    const index_t begin = indptr[i], end = indptr[i + 1];
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
  }
}

/// Where sort_and_merge_rows added acceptable duplicates up to a value beyond T's range (inf): how many places,
/// and the first one's row (of the block) and column index (as stored).
struct MergeOverflow {
  index_t count = 0;
  index_t row = -1;
  col_index_t col = 0;
};

/// What a reader that names files says of an overflowed sum of duplicates at (row, col), counted from
/// `base` (1: Matrix Market's own numbering, 0: the arrays').
template <class T>
std::string describe_overflowed_sum(index_t row, index_t col, int base) {
  return "the duplicate entries at row " + std::to_string(row + base) + ", column " + std::to_string(col + base) +
         " (" + std::to_string(base) + "-based) add up to inf, beyond " +
         (sizeof(T) == 4 ? "float32's range (--precision f64 holds their sum)" : "float64's range");
}

/// Sorts each row's entries by column, stably (so duplicates are summed in their given order), sums
/// duplicates and compacts the arrays; `indptr` (rows + 1 entries, starting at 0) is rewritten to match.
/// A duplicate that is not acceptable_entry() (negative, NaN, inf, a float32 narrowing marker) is kept instead of
/// summed, so that readers that check entries after merging (masked runs check only the observed ones) refuse
/// the place as a line check would: a -1 and a 2 stay -1, not 1. Acceptable duplicates whose sum overflows
/// give inf there (each line passed the readers' checks, the sum did not): counted in `overflow` when given, so
/// that the reader refuses the place rather than let convert write an inf or factor refuse a nameless sum.
template <class T>
void sort_and_merge_rows(index_t rows, std::vector<index_t>& indptr, std::vector<col_index_t>& indices,
                         std::vector<T>& values, MergeOverflow* overflow = nullptr) {
  sort_rows(rows, indptr, indices, values);
  index_t write = 0;
  for (index_t i = 0; i < rows; ++i) {
    const index_t begin = indptr[i], end = indptr[i + 1];
    indptr[i] = write;
    for (index_t k = begin; k < end; ++k) {
      if (write > indptr[i] && indices[write - 1] == indices[k]) {
        T& merged = values[write - 1];
        if (!acceptable_entry(merged)) continue;  // the first bad duplicate stands
        if (!acceptable_entry(values[k])) {
          merged = values[k];
          continue;
        }
        merged += values[k];
        if (overflow != nullptr && !acceptable_entry(merged)) {
          if (overflow->count++ == 0) {
            overflow->row = i;
            overflow->col = indices[k];
          }
        }
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

/// Column ranges the transpose below fills side by side: one per thread (up to 8) for matrices large enough to
/// pay for a team. The result does not depend on it.
inline index_t transpose_parts(index_t nnz) {
#ifdef _OPENMP
  const auto threads = static_cast<index_t>(omp_get_max_threads());
#else
  const index_t threads = 1;
#endif
  return nnz >= (index_t{1} << 16) ? std::clamp<index_t>(threads, 1, 8) : 1;
}

/// The transpose of a CSR matrix or row range (its CSC storage read as CSR): rows come out with their columns
/// increasing. Each part of the output's rows (A's columns, cut to hold similar numbers of entries) is filled by
/// one thread that reads all of A and keeps the entries in its part: A is read once per part, but every output
/// line is written by one thread in row order (the writes, scattered over the output, are the cost).
template <class T>
CsrMatrix<T> transpose(const CsrView<T>& a) {
  const index_t base = a.rows > 0 ? a.indptr[0] : 0;
  const index_t nnz = a.nnz();
  std::vector<index_t> indptr(to_size(a.cols) + 1, 0);
  for (index_t p = base; p < base + nnz; ++p) ++indptr[to_size(a.indices[p]) + 1];
  for (index_t j = 0; j < a.cols; ++j) indptr[to_size(j) + 1] += indptr[to_size(j)];
  const index_t parts = transpose_parts(nnz);
  std::vector<index_t> first_col(to_size(parts) + 1, a.cols);
  first_col[0] = 0;
  for (index_t q = 1; q < parts; ++q)
    first_col[to_size(q)] =
        static_cast<index_t>(std::lower_bound(indptr.begin(), indptr.end(), q * nnz / parts) - indptr.begin());
  std::vector<col_index_t> indices(to_size(nnz));
  std::vector<T> values(to_size(nnz));
  util::for_each_index(parts, parts > 1, [&](index_t q) {
    const index_t c0 = first_col[to_size(q)], c1 = first_col[to_size(q) + 1];  // non-decreasing: lower bounds
    std::vector<index_t> next(indptr.begin() + c0, indptr.begin() + c1);
    for (index_t i = 0; i < a.rows; ++i) {
      for (index_t p = a.indptr[i]; p < a.indptr[i + 1]; ++p) {
        const index_t j = a.indices[p];
        if (j < c0 || j >= c1) continue;
        const index_t slot = next[to_size(j - c0)]++;
        indices[to_size(slot)] = static_cast<col_index_t>(i);
        values[to_size(slot)] = a.values[p];
      }
    }
  });
  return CsrMatrix<T>(a.cols, a.rows, std::move(indptr), std::move(indices), std::move(values));
}

template <class T>
CsrMatrix<T> transpose(const CsrMatrix<T>& a) {
  return transpose(a.view());
}

}  // namespace dnmf::io::detail
