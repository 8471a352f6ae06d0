#include "stream/memory_source.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/row_tiles.hpp"
#include "stream/validate.hpp"

namespace dnmf::stream {

template <class T>
MemorySource<T>::MemorySource(MatrixRef<T> a, dist::Range rows, dist::Range cols, backend::Side direction)
    : a_(a), rows_(rows), cols_(cols), direction_(direction) {
  if (rows.first < 0 || rows.first > rows.last || rows.last > rows_of(a) || cols.first < 0 || cols.first > cols.last ||
      cols.last > cols_of(a))
    throw Error("memory: block outside the " + std::to_string(rows_of(a)) + "x" + std::to_string(cols_of(a)) +
                " matrix");
  if (is_sparse(a) && direction == backend::Side::H) throw Error("memory: a CSR matrix streams in row ranges only");
}

template <class T>
MemorySource<T>::MemorySource(MatrixRef<T> a, backend::Side direction)
    : MemorySource(a, {0, rows_of(a)}, {0, cols_of(a)}, direction) {}

template <class T>
index_t MemorySource<T>::stored() const {
  if (!is_sparse(a_)) return rows() * cols();
  const auto& s = std::get<CsrView<T>>(a_);
  return s.indptr[rows_.last] - s.indptr[rows_.first];
}

template <class T>
std::size_t MemorySource<T>::min_tile_bytes() const {
  if (!is_sparse(a_))
    return to_size(std::max<index_t>(direction_ == backend::Side::H ? rows() : cols(), 1)) * sizeof(T);
  return tile_bytes<T>(true, widest_row(), 1);
}

template <class T>
index_t MemorySource<T>::row_nnz(index_t i) const {
  const auto& s = std::get<CsrView<T>>(a_);
  return s.indptr[rows_.first + i + 1] - s.indptr[rows_.first + i];
}

template <class T>
index_t MemorySource<T>::widest_row() const {
  index_t widest = 0;
  for (index_t i = 0; i < rows(); ++i) widest = std::max(widest, row_nnz(i));
  return widest;
}

template <class T>
std::vector<TileExtent> MemorySource<T>::partition(std::size_t max_tile_bytes) const {
  std::vector<TileExtent> tiles;
  if (!is_sparse(a_)) {
    const bool by_columns = direction_ == backend::Side::H;
    const index_t extent = by_columns ? cols() : rows();
    const index_t line = by_columns ? rows() : cols();
    if (extent == 0) return tiles;
    const std::size_t line_bytes = to_size(line) * sizeof(T);
    if (line_bytes > max_tile_bytes) throw Error("memory: one line of the block does not fit a tile");
    const index_t width = line_bytes == 0 ? extent : static_cast<index_t>(max_tile_bytes / line_bytes);
    for (const dist::Range r : even_ranges(extent, (extent + width - 1) / width))
      tiles.push_back({r, r.size() * line, to_size(r.size()) * line_bytes});
    return tiles;
  }
  // Row ranges as the file source makes them.
  return balanced_row_tiles<T>(
      rows(), stored(), widest_row(), max_tile_bytes,
      [&](auto visit) {
        for (index_t i = 0; i < rows(); ++i) visit(i, row_nnz(i));
      },
      [](index_t, index_t) -> void { throw Error("memory: one row does not fit a tile"); });
}

template <class T>
void MemorySource<T>::read(const TileExtent& extent, Tile<T>& tile, bool validate) {
  tile.range = extent.range;
  tile.sparse = is_sparse(a_);
  tile.bytes_read = 0;
  if (const auto* d = std::get_if<DenseView<const T>>(&a_)) {
    const bool by_columns = direction_ == backend::Side::H;
    tile.rows = by_columns ? rows() : extent.range.size();
    tile.cols = by_columns ? extent.range.size() : cols();
    const index_t r0 = rows_.first + (by_columns ? 0 : extent.range.first);
    const index_t c0 = cols_.first + (by_columns ? extent.range.first : 0);
    if (to_size(tile.rows * tile.cols) > tile.values.capacity()) throw Error("internal: tile larger than its slot");
    for (index_t j = 0; j < tile.cols; ++j)
      std::memcpy(tile.values.data() + j * tile.rows, d->data + r0 + (c0 + j) * d->ld, to_size(tile.rows) * sizeof(T));
    tile.bytes_read = to_size(tile.rows * tile.cols) * sizeof(T);
    if (validate)
      check_dense_entries("memory",
                          DenseView<const T>(tile.values.data(), tile.rows, tile.cols, std::max<index_t>(tile.rows, 1)),
                          r0, c0);
    return;
  }
  const auto& s = std::get<CsrView<T>>(a_);
  tile.rows = extent.range.size();
  tile.cols = cols();
  index_t kept = 0;
  tile.indptr.data()[0] = 0;
  for (index_t i = 0; i < tile.rows; ++i) {
    const index_t row = rows_.first + extent.range.first + i;
    for (index_t p = s.indptr[row]; p < s.indptr[row + 1]; ++p) {
      const index_t col = s.indices[p];
      const T v = s.values[p];
      if (validate && !io::acceptable_entry(v)) throw DataError("memory: " + io::describe_bad_entry(row, col, v));
      if (col < cols_.first || col >= cols_.last) continue;
      if (to_size(kept) >= tile.values.capacity()) throw Error("internal: tile larger than its slot");
      tile.indices.data()[kept] = static_cast<col_index_t>(col - cols_.first);
      tile.values.data()[kept] = v;
      ++kept;
    }
    tile.indptr.data()[i + 1] = kept;
  }
  tile.nnz = kept;
  tile.bytes_read = to_size(kept) * (sizeof(T) + sizeof(col_index_t)) + to_size(tile.rows + 1) * sizeof(index_t);
}

template class MemorySource<float>;
template class MemorySource<double>;

}  // namespace dnmf::stream
