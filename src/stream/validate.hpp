// Entry checks as tiles stream in: NMF needs finite, non-negative entries, and a bad one is reported with its
// global position.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::stream {

[[noreturn]] inline void bad_entry(const std::string& source, index_t row, index_t col, double value) {
  std::ostringstream text;
  text << source << ": entry at row " << row << ", column " << col << " is " << value
       << " (NMF needs finite non-negative entries)";
  throw Error(text.str());
}

/// Throws for the first entry of `tile` (block-placed at global row0, col0) that is negative, NaN or infinite.
template <class T>
void check_dense_entries(const std::string& source, DenseView<const T> tile, index_t row0, index_t col0) {
  for (index_t j = 0; j < tile.cols; ++j) {
    const T* column = tile.data + j * tile.ld;
    bool bad = false;
    for (index_t i = 0; i < tile.rows; ++i) bad |= !(column[i] >= T(0) && column[i] <= std::numeric_limits<T>::max());
    if (!bad) continue;
    for (index_t i = 0; i < tile.rows; ++i)
      if (!(column[i] >= T(0) && column[i] <= std::numeric_limits<T>::max()))
        bad_entry(source, row0 + i, col0 + j, static_cast<double>(column[i]));
  }
}

}  // namespace dnmf::stream
