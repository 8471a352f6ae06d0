#include "stream/npy_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/validate.hpp"

namespace dnmf::stream {
namespace {

// Conversion and transposition go through this much file data at a time.
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;

void check_block(const std::string& path, const io::NpyHeader& h, dist::Range rows, dist::Range cols) {
  if (rows.first < 0 || rows.first > rows.last || rows.last > h.rows || cols.first < 0 || cols.first > cols.last ||
      cols.last > h.cols)
    throw Error(path + ": block rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                ") x columns [" + std::to_string(cols.first) + ", " + std::to_string(cols.last) + ") is outside the " +
                std::to_string(h.rows) + "x" + std::to_string(h.cols) + " array");
}

}  // namespace

template <class T>
NpySource<T>::NpySource(const std::string& path, dist::Range rows, dist::Range cols, NpyAccess access)
    : file_(path), header_(io::read_npy_header(path)), rows_(rows), cols_(cols) {
  check_block(path, header_, rows, cols);
  // A single row or column is laid out the same way in both orders.
  columns_ = header_.fortran_order || header_.rows == 1 || header_.cols == 1;
  convert_ = io::converter_for<T>(header_.kind, header_.word_size, path);
  file_.advise_sequential();
  // A stripe of whole columns of a Fortran-order file of T is the tile itself: lend it from a mapping instead of
  // copying it (the copy would cost the compute cores as much as a pass of the products on small machines).
  const bool lendable = columns_ && convert_.identity && rows.first == 0 && rows.last == header_.rows &&
                        rows.size() > 0 && cols.size() > 0 && header_.data_offset % sizeof(T) == 0;
  if (access != NpyAccess::read && lendable) {
    void* map = ::mmap(nullptr, to_size(file_.size()), PROT_READ, MAP_SHARED, file_.descriptor(), 0);
    if (map != MAP_FAILED) {
      map_ = static_cast<const std::byte*>(map);
      map_bytes_ = to_size(file_.size());
      block_begin_ = map_ + header_.data_offset + to_size(cols.first) * to_size(header_.rows) * sizeof(T);
      (void)::madvise(map, map_bytes_, MADV_SEQUENTIAL);
      guard_ = std::make_unique<MappingGuard>(map_, map_bytes_);
    }
  }
}

template <class T>
NpySource<T>::~NpySource() {
  guard_.reset();  // first: once unmapped, the range may be another mapping's, whose faults are not ours
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), map_bytes_);
}

template <class T>
void NpySource<T>::lend(const TileExtent& extent, Tile<T>& tile) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  // [first, first + bytes) rounded out to whole pages (by pointer arithmetic: no integer-to-pointer cast).
  auto pages = [&](const void* first, std::size_t bytes) {
    auto* begin = const_cast<std::byte*>(static_cast<const std::byte*>(first));
    const std::size_t lead = reinterpret_cast<std::uintptr_t>(first) % page;
    return std::pair<void*, std::size_t>(begin - lead, (lead + bytes + page - 1) / page * page);
  };
  // The slot's previous tile leaves this process's page tables (it stays in the page cache): the budget counts
  // depth tiles mapped at once, as it counts depth buffers. A page shared with a neighbouring tile that is still
  // in use is simply faulted back in from the page cache when touched.
  if (tile.lent != nullptr) {
    // Populating a tile maps more than its pages: the kernel maps whole page-cache folios and fault-around
    // windows, reaching back into tiles released before. So the release reaches back too: from the end of the
    // nearest tile still in use behind this one (the next pass's first tiles, at the wrap), else from the
    // block's start. Without that, tiles smaller than a folio left a trail of mapped pages (measured: 66 MiB
    // peak for a 32 MiB budget with 40 KB tiles of a cold file; 21 MiB with the release reaching back).
    const auto* released = reinterpret_cast<const std::byte*>(tile.lent);
    std::erase_if(lent_, [&](const auto& range) { return range.first == released; });
    const std::byte* from = block_begin_;
    for (const auto& [begin, end] : lent_)
      if (begin < released) from = std::max(from, end);
    from = std::min(from, released);
    const auto [addr, bytes] = pages(from, to_size(released - from) + tile.lent_bytes);
    (void)::madvise(addr, bytes, MADV_DONTNEED);
    if (file_.drop_behind())
      (void)::posix_fadvise(file_.descriptor(), static_cast<off_t>(reinterpret_cast<const std::byte*>(addr) - map_),
                            static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
    tile.lent = nullptr;
  }
  const std::byte* stripe = block_begin_ + to_size(extent.range.first) * to_size(header_.rows) * sizeof(T);
  const auto offset = to_size(stripe - map_);
  const T* first = reinterpret_cast<const T*>(stripe);
  const std::size_t bytes = to_size(tile.rows * tile.cols) * sizeof(T);
  const auto [addr, length] = pages(first, bytes);
  // Prefault on the producer thread so the compute threads never stall on the file.
  if (::madvise(addr, length, MADV_POPULATE_READ) != 0) {
    const int error = errno;
    if (error == EFAULT) check_intact();  // EFAULT: a page past the file's end (it would raise SIGBUS)
    if (error != EINVAL)
      throw IoError(name() + ": cannot read " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " (" + std::strerror(error) + ")");
    volatile std::byte sink{};  // kernels without MADV_POPULATE_READ: touch every page
    for (std::size_t at = 0; at < length; at += page) sink = static_cast<const std::byte*>(addr)[at];
    (void)sink;
  }
  tile.lent = first;
  tile.lent_bytes = bytes;
  lent_.emplace_back(reinterpret_cast<const std::byte*>(first), reinterpret_cast<const std::byte*>(first) + bytes);
  tile.bytes_read = bytes;
}

template <class T>
void NpySource<T>::check_intact() const {
  if (map_ != nullptr) {
    struct stat now {};
    const bool shrank = ::fstat(file_.descriptor(), &now) == 0 && static_cast<std::uint64_t>(now.st_size) < map_bytes_;
    if (shrank || (guard_ && guard_->faulted()))
      throw IoError(name() + ": the file shrank while it was being read (mapped, " + std::to_string(map_bytes_) +
                    " bytes when opened" + (shrank ? ", " + std::to_string(now.st_size) + " now" : std::string()) +
                    "; truncated during the run?): the results of this pass are void");
  }
  stamp_.check_unchanged(name(), file_.descriptor());
}

template <class T>
std::size_t NpySource<T>::min_tile_bytes() const {
  return to_size(std::max<index_t>(columns_ ? rows() : cols(), 1)) * sizeof(T);
}

template <class T>
std::size_t NpySource<T>::staging_bytes() const {
  // Only a Fortran-order file already in T is read straight into the slots.
  return columns_ && convert_.identity ? 0 : kStagingBytes;
}

template <class T>
std::vector<TileExtent> NpySource<T>::partition(std::size_t max_tile_bytes) const {
  const index_t extent = columns_ ? cols() : rows();
  const index_t line = columns_ ? rows() : cols();
  const std::size_t line_bytes = to_size(line) * sizeof(T);
  std::vector<TileExtent> tiles;
  if (extent == 0) return tiles;
  if (line_bytes > max_tile_bytes)
    throw Error(name() + ": one " + (columns_ ? "column" : "row") + " of the block takes " +
                std::to_string(line_bytes) + " bytes, more than a tile may (" + std::to_string(max_tile_bytes) + ")");
  const auto width = static_cast<index_t>(line_bytes == 0 ? extent : max_tile_bytes / line_bytes);
  const index_t parts = (extent + width - 1) / width;
  for (const dist::Range r : even_ranges(extent, parts))
    tiles.push_back({r, r.size() * line, to_size(r.size()) * line_bytes});
  return tiles;
}

template <class T>
void NpySource<T>::read(const TileExtent& extent, Tile<T>& tile, bool validate) {
  tile.range = extent.range;
  tile.sparse = false;
  tile.rows = columns_ ? rows() : extent.range.size();
  tile.cols = columns_ ? extent.range.size() : cols();
  tile.nnz = 0;
  tile.bytes_read = 0;
  if (map_ == nullptr && to_size(tile.rows * tile.cols) > tile.values.capacity())
    throw Error("internal: tile larger than its slot");
  // The tile is `runs` file lines of `length` elements: columns (Fortran order) or rows (C order).
  const index_t runs = columns_ ? tile.cols : tile.rows;
  const index_t length = columns_ ? tile.rows : tile.cols;
  const auto stride = static_cast<std::uint64_t>(columns_ ? header_.rows : header_.cols);
  const std::uint64_t first =
      columns_ ? static_cast<std::uint64_t>(cols_.first + extent.range.first) * header_.rows + rows_.first
               : static_cast<std::uint64_t>(rows_.first + extent.range.first) * header_.cols + cols_.first;
  const std::size_t word = header_.word_size;
  const auto offset = [&](index_t run, index_t element) {
    return header_.data_offset + (first + static_cast<std::uint64_t>(run) * stride + element) * word;
  };
  const bool adjacent = static_cast<std::uint64_t>(length) == stride;
  if (runs == 0 || length == 0) return;
  if (map_ != nullptr) {
    check_intact();
    lend(extent, tile);
    if (validate)
      check_dense_entries(name(), DenseView<const T>(tile.lent, tile.rows, tile.cols, tile.rows), rows_.first,
                          cols_.first + extent.range.first);
    return;
  }
  T* out = tile.values.data();

  if (columns_ && convert_.identity) {
    // The file holds the tile's bytes in the tile's order: read straight into the slot.
    const std::size_t run_bytes = to_size(length) * word;
    if (adjacent) {
      file_.read(offset(0, 0), out, run_bytes * to_size(runs));
    } else {
      for (index_t s = 0; s < runs; ++s) file_.read(offset(s, 0), out + s * length, run_bytes);
    }
    tile.bytes_read = run_bytes * to_size(runs);
  } else {
    staging_.resize(kStagingBytes);
    const auto chunk = static_cast<index_t>(kStagingBytes / word);
    for (index_t s = 0; s < runs;) {
      if (length <= chunk) {
        const index_t m = adjacent ? std::min(runs - s, chunk / length) : 1;
        const std::size_t bytes = to_size(m * length) * word;
        file_.read(offset(s, 0), staging_.data(), bytes);
        tile.bytes_read += bytes;
        if (columns_) {
          convert_.run(staging_.data(), to_size(m * length), out + s * length);
        } else {
          convert_.transposed(staging_.data(), m, length, out + s, tile.rows);
        }
        s += m;
        continue;
      }
      for (index_t j = 0; j < length; j += chunk) {  // one line longer than the staging buffer
        const index_t n = std::min(chunk, length - j);
        const std::size_t bytes = to_size(n) * word;
        file_.read(offset(s, j), staging_.data(), bytes);
        tile.bytes_read += bytes;
        if (columns_) {
          convert_.run(staging_.data(), to_size(n), out + s * length + j);
        } else {
          convert_.transposed(staging_.data(), 1, n, out + s + j * tile.rows, tile.rows);
        }
      }
      ++s;
    }
  }
  if (validate) {
    const index_t row0 = rows_.first + (columns_ ? 0 : extent.range.first);
    const index_t col0 = cols_.first + (columns_ ? extent.range.first : 0);
    check_dense_entries(name(), DenseView<const T>(out, tile.rows, tile.cols, std::max<index_t>(tile.rows, 1)), row0,
                        col0);
  }
}

template class NpySource<float>;
template class NpySource<double>;

}  // namespace dnmf::stream
