// One tile of a block of A in a ring slot: a stripe of whole columns or rows of the block, dense or CSR.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "backend/kernels.hpp"
#include "dist/grid.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"
#include "stream/buffer.hpp"

namespace dnmf::stream {

/// Where a tile lies in its block and how much it stores.
struct TileExtent {
  dist::Range range;      ///< columns (column stripes) or rows (row stripes) of the block, block-local
  index_t entries = 0;    ///< stored entries: rows*cols (dense), nnz or an upper bound of it (CSR)
  std::size_t bytes = 0;  ///< memory the tile needs in a slot
};

/// The most entries and the most lines of any of `extents`: what a slot is sized for (make_tile_slot).
struct LargestTile {
  index_t entries = 0, lines = 0;
};
inline LargestTile largest_tile(const std::vector<TileExtent>& extents) {
  LargestTile m;
  for (const TileExtent& e : extents) {
    m.entries = std::max(m.entries, e.entries);
    m.lines = std::max(m.lines, e.range.size());
  }
  return m;
}

/// A slot's contents. Dense tiles are column-major with ld = rows; CSR tiles have indptr from 0.
template <class T>
struct Tile {
  std::size_t index = 0;  ///< tile number within a pass
  dist::Range range;      ///< as in TileExtent
  bool sparse = false;
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;              ///< CSR: stored entries
  std::size_t bytes_read = 0;   ///< bytes the source read to fill it
  Buffer<T> values;             ///< dense entries, or CSR values
  Buffer<index_t> indptr;       ///< CSR: rows + 1 row starts
  Buffer<col_index_t> indices;  ///< CSR: column indices (block-local)
  /// Dense entries lent by the source instead of copied into `values` (a file mapping); nullptr otherwise.
  const T* lent = nullptr;
  std::size_t lent_bytes = 0;  ///< bytes at `lent`

  /// The tile as the kernels take it.
  [[nodiscard]] MatrixRef<T> ref() const {
    if (sparse) return CsrView<T>{rows, cols, indptr.data(), indices.data(), values.data()};
    return DenseView<const T>{lent != nullptr ? lent : values.data(), rows, cols, rows > 0 ? rows : 1};
  }
};

/// Memory a tile needs for its extent: dense entries, or CSR values, indices and row starts.
template <class T>
std::size_t tile_bytes(bool sparse, index_t entries, index_t range_rows) {
  if (!sparse) return to_size(entries) * sizeof(T);
  return to_size(entries) * (sizeof(T) + sizeof(col_index_t)) + to_size(range_rows + 1) * sizeof(index_t);
}

}  // namespace dnmf::stream
