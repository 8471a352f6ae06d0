#include "stream/dcsr_source.hpp"

#include <algorithm>
#include <limits>

#include "dnmf/error.hpp"
#include "stream/validate.hpp"

namespace dnmf::stream {
namespace {

// Row pointers are scanned, and entries filtered or converted, this much at a time.
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;
constexpr index_t kScanRows = 1 << 16;

}  // namespace

template <class T>
DcsrSource<T>::DcsrSource(const std::string& path, dist::Range rows, dist::Range cols)
    : file_(path), header_(read_dcsr_header(file_)), rows_(rows), cols_(cols) {
  if (rows.first < 0 || rows.first > rows.last || rows.last > header_.rows || cols.first < 0 ||
      cols.first > cols.last || cols.last > header_.cols)
    throw Error(path + ": block rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                ") x columns [" + std::to_string(cols.first) + ", " + std::to_string(cols.last) + ") is outside the " +
                std::to_string(header_.rows) + "x" + std::to_string(header_.cols) + " matrix");
  convert_ = converter_for<T>('f', header_.value_bytes, path);
  scan_rows([&](index_t, index_t nnz) {
    row_nnz_ += nnz;
    max_row_ = std::max(max_row_, nnz);
  });
  file_.advise_sequential();
}

template <class T>
template <class Visit>
void DcsrSource<T>::scan_rows(Visit visit) const {
  std::vector<index_t> starts;
  for (index_t i = 0; i < rows(); i += kScanRows) {
    const index_t n = std::min(kScanRows, rows() - i);
    starts.resize(static_cast<std::size_t>(n + 1));
    file_.read(header_.indptr_offset + static_cast<std::uint64_t>(rows_.first + i) * sizeof(index_t), starts.data(),
               starts.size() * sizeof(index_t));
    for (index_t q = 0; q < n; ++q) {
      const index_t a = starts[static_cast<std::size_t>(q)], b = starts[static_cast<std::size_t>(q + 1)];
      if (a < 0 || b < a || b > header_.nnz)
        throw Error(name() + ": row pointers of row " + std::to_string(rows_.first + i + q) + " are [" +
                    std::to_string(a) + ", " + std::to_string(b) +
                    "), not inside [0, nnz = " + std::to_string(header_.nnz) + ") and increasing (corrupt file)");
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
  return whole_rows() && convert_.identity ? 0 : kStagingBytes;
}

template <class T>
std::vector<TileExtent> DcsrSource<T>::partition(std::size_t max_tile_bytes) const {
  std::vector<TileExtent> tiles;
  if (rows() == 0) return tiles;
  const std::size_t total = tile_bytes<T>(true, row_nnz_, rows());
  const std::size_t parts = (total + max_tile_bytes - 1) / max_tile_bytes;
  const std::size_t target = (total + parts - 1) / parts;  // equal shares of the block's bytes
  index_t start = 0, nnz = 0;
  auto close = [&](index_t end) {
    tiles.push_back({{start, end}, nnz, tile_bytes<T>(true, nnz, end - start)});
    start = end;
    nnz = 0;
  };
  scan_rows([&](index_t i, index_t row) {
    if (tile_bytes<T>(true, row, 1) > max_tile_bytes)
      throw Error(name() + ": row " + std::to_string(rows_.first + i) + " holds " + std::to_string(row) +
                  " entries, more than a tile of " + std::to_string(max_tile_bytes) + " bytes can take");
    if (i > start && tile_bytes<T>(true, nnz + row, i + 1 - start) > max_tile_bytes) close(i);
    nnz += row;
    if (tile_bytes<T>(true, nnz, i + 1 - start) >= target) close(i + 1);
  });
  if (start < rows()) close(rows());
  return tiles;
}

template <class T>
index_t DcsrSource<T>::read_rows_into(dist::Range range, index_t* indptr, col_index_t* indices, T* values,
                                      std::size_t capacity, bool validate, std::size_t& bytes_read) {
  const index_t r = range.size();
  const index_t row0 = rows_.first + range.first;  // global
  file_.read(header_.indptr_offset + static_cast<std::uint64_t>(row0) * sizeof(index_t), indptr,
             static_cast<std::size_t>(r + 1) * sizeof(index_t));
  bytes_read += static_cast<std::size_t>(r + 1) * sizeof(index_t);
  const index_t base = indptr[0], end = indptr[r];
  for (index_t i = 0; i < r; ++i)
    if (indptr[i] < 0 || indptr[i + 1] < indptr[i] || indptr[i + 1] > header_.nnz)
      throw Error(name() + ": row pointers of row " + std::to_string(row0 + i) + " are not increasing inside [0, " +
                  std::to_string(header_.nnz) + "] (corrupt file)");
  const index_t width = header_.cols;
  auto bad_index = [&](index_t row, index_t col) {
    throw Error(name() + ": row " + std::to_string(row) + " has column index " + std::to_string(col) +
                (col < 0 || col >= width ? " outside [0, " + std::to_string(width) + ")"
                                         : std::string(", not above the one before it (unsorted or duplicate)")));
  };

  if (whole_rows() && convert_.identity) {
    const index_t count = end - base;
    if (static_cast<std::size_t>(count) > capacity) throw Error(name() + ": tile larger than its slot (file changed?)");
    file_.read(header_.indices_offset + static_cast<std::uint64_t>(base) * 4, indices,
               static_cast<std::size_t>(count) * 4);
    file_.read(header_.values_offset + static_cast<std::uint64_t>(base) * sizeof(T), values,
               static_cast<std::size_t>(count) * sizeof(T));
    bytes_read += static_cast<std::size_t>(count) * (4 + sizeof(T));
    for (index_t i = 0; i <= r; ++i) indptr[i] -= base;
    for (index_t i = 0; i < r; ++i) {
      index_t previous = -1;
      for (index_t p = indptr[i]; p < indptr[i + 1]; ++p) {
        const index_t col = indices[p];
        if (col < 0 || col >= width || (validate && col <= previous)) bad_index(row0 + i, col);
        previous = col;
        if (validate && !(values[p] >= T(0) && values[p] <= std::numeric_limits<T>::max()))
          bad_entry(name(), row0 + i, col, static_cast<double>(values[p]));
      }
    }
    return count;
  }

  // Through the staging buffer: the entries of a chunk are filtered to the block's columns and converted. The
  // row starts are rewritten in place; row i's original end is read before its slot is overwritten.
  const std::size_t word = header_.value_bytes;
  const auto chunk = static_cast<index_t>(kStagingBytes / (4 + word + sizeof(T)));
  staging_.resize(static_cast<std::size_t>(chunk) * (4 + word + sizeof(T)));
  auto* chunk_indices = reinterpret_cast<col_index_t*>(staging_.data());
  std::byte* chunk_raw = staging_.data() + static_cast<std::size_t>(chunk) * 4;
  auto* chunk_values = reinterpret_cast<T*>(chunk_raw + static_cast<std::size_t>(chunk) * word);
  index_t kept = 0, i = 0, previous = -1;
  index_t row_end = r > 0 ? indptr[1] : end;
  indptr[0] = 0;
  for (index_t p0 = base; p0 < end; p0 += chunk) {
    const index_t n = std::min(chunk, end - p0);
    file_.read(header_.indices_offset + static_cast<std::uint64_t>(p0) * 4, chunk_indices,
               static_cast<std::size_t>(n) * 4);
    file_.read(header_.values_offset + static_cast<std::uint64_t>(p0) * word, chunk_raw,
               static_cast<std::size_t>(n) * word);
    bytes_read += static_cast<std::size_t>(n) * (4 + word);
    convert_.run(chunk_raw, static_cast<std::size_t>(n), chunk_values);
    for (index_t q = 0; q < n; ++q) {
      while (p0 + q >= row_end) {
        ++i;
        row_end = indptr[i + 1];
        indptr[i] = kept;
        previous = -1;
      }
      const index_t col = chunk_indices[q];
      if (col < 0 || col >= width || (validate && col <= previous)) bad_index(row0 + i, col);
      previous = col;
      const T v = chunk_values[q];
      if (validate && !(v >= T(0) && v <= std::numeric_limits<T>::max()))
        bad_entry(name(), row0 + i, col, static_cast<double>(v));
      if (col < cols_.first || col >= cols_.last) continue;
      if (static_cast<std::size_t>(kept) >= capacity)
        throw Error(name() + ": tile larger than its slot (file changed?)");
      indices[kept] = static_cast<col_index_t>(col - cols_.first);
      values[kept] = v;
      ++kept;
    }
  }
  for (index_t j = i + 1; j <= r; ++j) indptr[j] = kept;
  return kept;
}

template <class T>
void DcsrSource<T>::read(const TileExtent& extent, Tile<T>& tile, bool validate) {
  tile.range = extent.range;
  tile.sparse = true;
  tile.rows = extent.range.size();
  tile.cols = cols();
  tile.bytes_read = 0;
  if (tile.indptr.capacity() < static_cast<std::size_t>(tile.rows + 1))
    throw Error("internal: tile larger than its slot");
  tile.nnz = read_rows_into(extent.range, tile.indptr.data(), tile.indices.data(), tile.values.data(),
                            std::min(tile.indices.capacity(), tile.values.capacity()), validate, tile.bytes_read);
}

template class DcsrSource<float>;
template class DcsrSource<double>;

}  // namespace dnmf::stream
