#include "stream/dcsr_source.hpp"

#include <algorithm>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/row_tiles.hpp"

namespace dnmf::stream {
namespace {

constexpr index_t kScanRows = 1 << 16;  // row pointers read per chunk while scanning

}  // namespace

template <class T>
DcsrSource<T>::DcsrSource(const std::string& path, dist::Range rows, dist::Range cols)
    : file_(path), header_(io::read_dcsr_header(file_)), rows_(rows), cols_(cols) {
  if (rows.first < 0 || rows.first > rows.last || rows.last > header_.rows || cols.first < 0 ||
      cols.first > cols.last || cols.last > header_.cols)
    throw DataError(path + ": block rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                    ") x columns [" + std::to_string(cols.first) + ", " + std::to_string(cols.last) +
                    ") is outside the " + std::to_string(header_.rows) + "x" + std::to_string(header_.cols) +
                    " matrix");
  scan_rows([&](index_t, index_t nnz) {
    row_nnz_ += nnz;
    max_row_ = std::max(max_row_, nnz);
  });
}

template <class T>
template <class Visit>
void DcsrSource<T>::scan_rows(Visit visit) const {
  std::vector<index_t> starts;
  for (index_t i = 0; i < rows(); i += kScanRows) {
    const index_t n = std::min(kScanRows, rows() - i);
    starts.resize(to_size(n + 1));
    file_.read_exact(header_.indptr_offset + static_cast<std::uint64_t>(rows_.first + i) * sizeof(index_t),
                     starts.data(), starts.size() * sizeof(index_t));
    for (index_t q = 0; q < n; ++q) {
      const index_t a = starts[to_size(q)], b = starts[to_size(q + 1)];
      if (a < 0 || b < a || b > header_.nnz)
        throw DataError(name() + ": row pointers of row " + std::to_string(rows_.first + i + q) + " are [" +
                        std::to_string(a) + ", " + std::to_string(b) + "), not increasing inside [0, " +
                        std::to_string(header_.nnz) + "] (corrupt file)");
      visit(i + q, b - a);
    }
  }
}

template <class T>
std::size_t DcsrSource<T>::min_tile_bytes() const {
  return tile_bytes<T>(true, max_row_, 1);
}

template <class T>
std::size_t DcsrSource<T>::staging_bytes() const {
  return io::dcsr_staging_bytes<T>(header_, cols_);
}

template <class T>
std::vector<TileExtent> DcsrSource<T>::partition(std::size_t max_tile_bytes) const {
  return balanced_row_tiles<T>(
      rows(), row_nnz_, max_row_, max_tile_bytes, [&](auto visit) { scan_rows(visit); },
      [&](index_t i, index_t row) {
        throw DataError(name() + ": row " + std::to_string(rows_.first + i) + " holds " + std::to_string(row) +
                        " entries, more than a tile of " + std::to_string(max_tile_bytes) + " bytes can take");
      });
}

template <class T>
void DcsrSource<T>::read_structure_checked(const TileExtent& extent, Tile<T>& tile) {
  fill(extent, tile, true, false);
}

template <class T>
void DcsrSource<T>::read(const TileExtent& extent, Tile<T>& tile, bool validate) {
  fill(extent, tile, validate, validate);
}

template <class T>
void DcsrSource<T>::fill(const TileExtent& extent, Tile<T>& tile, bool structure, bool values) {
  tile.range = extent.range;
  tile.sparse = true;
  tile.rows = extent.range.size();
  tile.cols = cols();
  tile.bytes_read = 0;
  if (tile.indptr.capacity() < to_size(tile.rows + 1)) throw DataError("internal: tile larger than its slot");
  tile.nnz = io::read_dcsr_rows(file_, header_, rows_.first + extent.range.first, tile.rows, cols_, tile.indptr.data(),
                                tile.indices.data(), tile.values.data(),
                                std::min(tile.indices.capacity(), tile.values.capacity()), structure, staging_,
                                tile.bytes_read, &verified_, values);
}

template class DcsrSource<float>;
template class DcsrSource<double>;

}  // namespace dnmf::stream
