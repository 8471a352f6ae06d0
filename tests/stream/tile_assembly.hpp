// Test helper: every tile of a source read through one slot and laid back into a dense matrix, with checks on
// the partition (contiguous, within the byte cap).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "dnmf/index.hpp"
#include "stream/tile_source.hpp"
#include "support/matrix_views.hpp"

namespace dnmf::test {

template <class T>
stream::Tile<T> slot_for(const std::vector<stream::TileExtent>& extents, bool sparse) {
  index_t entries = 1, lines = 1;
  for (const auto& e : extents) {
    entries = std::max(entries, e.entries);
    lines = std::max(lines, e.range.size());
  }
  stream::Tile<T> tile;
  const stream::BufferAllocator host = stream::host_allocator();
  tile.values = stream::Buffer<T>(host, to_size(entries));
  if (sparse) {
    tile.indptr = stream::Buffer<index_t>(host, to_size(lines + 1));
    tile.indices = stream::Buffer<col_index_t>(host, to_size(entries));
  }
  return tile;
}

/// The block as a dense matrix, assembled from tiles of at most `max_bytes`; `tiles` receives their count.
template <class T>
DenseMatrix<T> assemble(stream::TileSource<T>& source, std::size_t max_bytes, std::size_t* tiles = nullptr) {
  const auto extents = source.partition(max_bytes);
  if (tiles != nullptr) *tiles = extents.size();
  stream::Tile<T> tile = slot_for<T>(extents, source.sparse());
  DenseMatrix<T> out(source.rows(), source.cols());
  const bool by_columns = source.direction() == backend::Side::H;
  index_t next = 0;
  for (const auto& e : extents) {
    EXPECT_EQ(e.range.first, next);
    next = e.range.last;
    EXPECT_LE(e.bytes, max_bytes);
    source.read(e, tile, true);
    EXPECT_EQ(tile.range, e.range);
    const MatrixRef<T> ref = tile.ref();
    if (const auto* d = std::get_if<DenseView<const T>>(&ref)) {
      for (index_t j = 0; j < d->cols; ++j)
        for (index_t i = 0; i < d->rows; ++i)
          out(by_columns ? i : e.range.first + i, by_columns ? e.range.first + j : j) = (*d)(i, j);
    } else {
      const auto& s = std::get<CsrView<T>>(ref);
      EXPECT_EQ(s.cols, source.cols());
      for (index_t i = 0; i < s.rows; ++i)
        for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) out(e.range.first + i, s.indices[p]) = s.values[p];
    }
  }
  EXPECT_EQ(next, by_columns ? source.cols() : source.rows());
  return out;
}

}  // namespace dnmf::test
