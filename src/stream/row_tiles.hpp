// Row tiles of a CSR block, as the .dcsr file source and the in-memory source cut them: ranges of whole rows
// with about equal bytes, each within the tile cap, and together such that a slot sized for the most entries
// and the most rows of any tile (make_tile_slot) fits the cap as well.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "dnmf/index.hpp"
#include "stream/tile.hpp"

namespace dnmf::stream {

/// The tiles of a block of `rows` rows holding `stored` entries, `max_row` in its fullest row. for_each_row(visit)
/// calls visit(i, nnz of row i) for i = 0..rows-1 in order (it is walked once, twice for skewed blocks);
/// oversized(i, nnz) is called (and must throw) for a row that does not fit a tile alone.
template <class T, class ForEachRow, class Oversized>
std::vector<TileExtent> balanced_row_tiles(index_t rows, index_t stored, index_t max_row, std::size_t max_tile_bytes,
                                           ForEachRow&& for_each_row, Oversized&& oversized) {
  std::vector<TileExtent> tiles;
  if (rows == 0) return tiles;
  const std::size_t total = tile_bytes<T>(true, stored, rows);
  const std::size_t parts = (total + max_tile_bytes - 1) / max_tile_bytes;
  const std::size_t target = (total + parts - 1) / parts;  // equal shares of the block's bytes
  index_t start = 0, nnz = 0;
  auto close = [&](index_t end) {
    tiles.push_back({{start, end}, nnz, tile_bytes<T>(true, nnz, end - start)});
    start = end;
    nnz = 0;
  };
  for_each_row([&](index_t i, index_t row) {
    if (tile_bytes<T>(true, row, 1) > max_tile_bytes) oversized(i, row);
    if (i > start && tile_bytes<T>(true, nnz + row, i + 1 - start) > max_tile_bytes) close(i);
    nnz += row;
    if (tile_bytes<T>(true, nnz, i + 1 - start) >= target) close(i + 1);
  });
  if (start < rows) close(rows);
  // With full rows in one tile and empty ones in another, a slot holding both maxima was up to twice the largest
  // tile, past the plan and the budget. Such blocks are cut again with both capped, so that together they fit.
  const LargestTile most = largest_tile(tiles);
  if (tile_bytes<T>(true, most.entries, most.lines) <= max_tile_bytes) return tiles;
  constexpr std::size_t per_entry = sizeof(T) + sizeof(col_index_t), per_line = sizeof(index_t);
  const double entry_share = static_cast<double>(stored) * per_entry /
                             (static_cast<double>(stored) * per_entry + static_cast<double>(rows + 1) * per_line);
  // The oversized check leaves room for the fullest row and two row pointers.
  index_t entry_cap = std::max(max_row, static_cast<index_t>(entry_share * static_cast<double>(max_tile_bytes) /
                                                             static_cast<double>(per_entry)));
  if (to_size(entry_cap) * per_entry + 2 * per_line > max_tile_bytes) entry_cap = max_row;
  const auto line_cap = static_cast<index_t>((max_tile_bytes - to_size(entry_cap) * per_entry) / per_line) - 1;
  tiles.clear();
  start = 0;
  nnz = 0;
  for_each_row([&](index_t i, index_t row) {
    if (i > start && (nnz + row > entry_cap || i + 1 - start > line_cap)) close(i);
    nnz += row;
  });
  close(rows);
  return tiles;
}

}  // namespace dnmf::stream
