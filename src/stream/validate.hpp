// Entry checks as tiles stream in: NMF needs finite, non-negative entries, and a bad one is reported with its
// global position, in the words the readers use (io::describe_bad_entry).
#pragma once

#include <string>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"
#include "io/entry_scan.hpp"

namespace dnmf::stream {

/// Throws for the first entry of `tile` (block-placed at global row0, col0) that is negative, NaN or infinite.
template <class T>
void check_dense_entries(const std::string& source, DenseView<const T> tile, index_t row0, index_t col0) {
  for (index_t j = 0; j < tile.cols; ++j) {
    const T* column = tile.data + j * tile.ld;
    if (io::all_acceptable(column, tile.rows)) continue;
    for (index_t i = 0; i < tile.rows; ++i)
      if (!io::acceptable_entry(column[i]))
        throw DataError(source + ": " + io::describe_bad_entry(row0 + i, col0 + j, column[i]));
  }
}

}  // namespace dnmf::stream
