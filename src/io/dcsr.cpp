#include "io/dcsr.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/csr_to_write.hpp"
#include "io/narrow.hpp"
#include "util/crc32c.hpp"

namespace dnmf::io {
namespace {

static_assert(std::endian::native == std::endian::little, ".dcsr files are little-endian");

constexpr char kMagic[8] = {'D', 'N', 'M', 'F', 'C', 'S', 'R', '\0'};
constexpr std::uint32_t kVersion = 2;  // 2: checksum table after the values; 1 (still read): none
constexpr std::uint64_t kHeaderBytes = 64;
// The checksum table: u64 chunk count, u32 CRC of the header, u32 CRC of the entries, then per chunk
// u64 row end, u32 × 3 CRCs (row ends, indices, values), u32 zero.
constexpr std::uint64_t kTableFixedBytes = 16;
constexpr std::uint64_t kChunkBytes = 24;
// A chunk closes after this many rows or entries: verifying a tile's edges rereads at most about a chunk.
constexpr index_t kChunkRows = index_t{1} << 16;
constexpr index_t kChunkEntries = index_t{1} << 17;
constexpr std::size_t kVerifyPiece = std::size_t{1} << 20;
constexpr std::uint64_t kAlign = 64;  // each array starts on a 64-byte boundary
// Entries are filtered or converted this much at a time.
constexpr std::size_t kStagingBytes = std::size_t{4} << 20;

std::uint64_t align_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

template <class U>
void put(std::array<char, kHeaderBytes>& h, std::size_t at, U value) {
  std::memcpy(h.data() + at, &value, sizeof(U));
}
template <class U>
U get(const std::array<char, kHeaderBytes>& h, std::size_t at) {
  U value;
  std::memcpy(&value, h.data() + at, sizeof(U));
  return value;
}

template <class T>
void convert_values(const std::byte* raw, std::size_t word, index_t count, T* out) {
  if (word == 4) {
    for (index_t q = 0; q < count; ++q) {
      float v;
      std::memcpy(&v, raw + q * 4, 4);
      out[q] = static_cast<T>(v);
    }
  } else {
    for (index_t q = 0; q < count; ++q) {
      double v;
      std::memcpy(&v, raw + q * 8, 8);
      out[q] = narrow_entry<T>(v);
    }
  }
}

std::string crc_text(std::uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

std::uint64_t values_end(const DcsrHeader& d) {
  return d.values_offset + static_cast<std::uint64_t>(d.nnz) * d.value_bytes;
}

// Version 2: the table after the values, checked against the header bytes and the file's length.
void read_checksum_table(const detail::InputFile& file, const std::array<char, kHeaderBytes>& h, DcsrHeader& d) {
  const std::string& path = file.path();
  const std::uint64_t at = align_up(values_end(d));
  if (at + kTableFixedBytes > file.size())
    throw DataError(path + ": the .dcsr checksum table is missing (file of " + std::to_string(file.size()) +
                    " bytes; truncated or corrupt header)");
  std::array<char, kTableFixedBytes> fixed{};
  file.read_exact(at, fixed.data(), fixed.size());
  std::uint64_t count = 0;
  std::uint32_t header_crc = 0, table_crc = 0;
  std::memcpy(&count, fixed.data(), 8);
  std::memcpy(&header_crc, fixed.data() + 8, 4);
  std::memcpy(&table_crc, fixed.data() + 12, 4);
  const std::uint32_t computed = util::crc32c(h.data(), h.size());
  if (computed != header_crc)
    throw DataError(path + ": .dcsr header checksum mismatch (stored " + crc_text(header_crc) + ", computed " +
                    crc_text(computed) + "): the header is damaged");
  const std::uint64_t room = (file.size() - at - kTableFixedBytes) / kChunkBytes;
  if (count > room || at + kTableFixedBytes + count * kChunkBytes != file.size())
    throw DataError(path + ": the .dcsr checksum table (" + std::to_string(count) + " chunks) does not fit the file (" +
                    std::to_string(file.size()) + " bytes; truncated or damaged)");
  std::vector<char> raw(count * kChunkBytes);
  file.read_exact(at + kTableFixedBytes, raw.data(), raw.size());
  const std::uint32_t computed_table = util::crc32c(raw.data(), raw.size());
  if (computed_table != table_crc)
    throw DataError(path + ": .dcsr checksum table mismatch (stored " + crc_text(table_crc) + ", computed " +
                    crc_text(computed_table) + "): the table is damaged");
  d.chunks.resize(count);
  index_t previous = 0;
  for (std::uint64_t c = 0; c < count; ++c) {
    DcsrChunk& k = d.chunks[c];
    const char* e = raw.data() + c * kChunkBytes;
    std::memcpy(&k.row_end, e, 8);
    std::memcpy(&k.crc_indptr, e + 8, 4);
    std::memcpy(&k.crc_indices, e + 12, 4);
    std::memcpy(&k.crc_values, e + 16, 4);
    if (k.row_end <= previous || k.row_end > d.rows)
      throw DataError(path + ": .dcsr checksum chunk " + std::to_string(c) + " ends at row " +
                      std::to_string(k.row_end) + ", not inside (" + std::to_string(previous) + ", " +
                      std::to_string(d.rows) + "] (damaged table)");
    previous = k.row_end;
  }
  if (previous != d.rows)
    throw DataError(path + ": the .dcsr checksum chunks cover " + std::to_string(previous) + " of " +
                    std::to_string(d.rows) + " rows (damaged table)");
}

}  // namespace

DcsrHeader read_dcsr_header(const detail::InputFile& file) {
  const std::string& path = file.path();
  if (file.size() < kHeaderBytes)
    throw DataError(path + ": too short for a .dcsr header (" + std::to_string(file.size()) + " bytes)");
  std::array<char, kHeaderBytes> h{};
  file.read_exact(0, h.data(), h.size());
  if (std::memcmp(h.data(), kMagic, sizeof kMagic) != 0) throw DataError(path + ": not a .dcsr file (bad magic)");
  DcsrHeader d;
  d.version = get<std::uint32_t>(h, 8);
  if (d.version != 1 && d.version != kVersion)
    throw DataError(path + ": .dcsr version " + std::to_string(d.version) + " is not supported (expected 1 or 2)");
  d.value_bytes = get<std::uint32_t>(h, 12);
  d.rows = get<std::int64_t>(h, 16);
  d.cols = get<std::int64_t>(h, 24);
  d.nnz = get<std::int64_t>(h, 32);
  d.indptr_offset = get<std::uint64_t>(h, 40);
  d.indices_offset = get<std::uint64_t>(h, 48);
  d.values_offset = get<std::uint64_t>(h, 56);
  if (d.value_bytes != 4 && d.value_bytes != 8)
    throw DataError(path + ": .dcsr value size " + std::to_string(d.value_bytes) + " (expected 4 or 8)");
  // Bounds keep the offset arithmetic below far from overflow whatever the header says.
  constexpr std::int64_t kHuge = std::int64_t{1} << 56;
  if (d.rows < 0 || d.cols < 0 || d.nnz < 0 || d.rows > kHuge || d.nnz > kHuge ||
      d.cols > std::numeric_limits<col_index_t>::max() || d.indptr_offset > std::uint64_t{kHuge} ||
      d.indices_offset > std::uint64_t{kHuge} || d.values_offset > std::uint64_t{kHuge})
    throw DataError(path + ": .dcsr shape " + std::to_string(d.rows) + "x" + std::to_string(d.cols) + " with nnz " +
                    std::to_string(d.nnz) + " is invalid");
  const auto rows = static_cast<std::uint64_t>(d.rows), nnz = static_cast<std::uint64_t>(d.nnz);
  const bool ordered = d.indptr_offset >= kHeaderBytes && d.indices_offset >= d.indptr_offset + (rows + 1) * 8 &&
                       d.values_offset >= d.indices_offset + nnz * 4 && values_end(d) <= file.size();
  if (!ordered)
    throw DataError(path + ": .dcsr arrays do not fit the file (" + std::to_string(file.size()) +
                    " bytes; truncated or corrupt header)");
  if (d.version == 1) {
    if (values_end(d) != file.size())
      throw DataError(path + ": .dcsr (version 1) arrays end at byte " + std::to_string(values_end(d)) +
                      ", the file has " + std::to_string(file.size()) + " (corrupt header)");
  } else {
    read_checksum_table(file, h, d);
  }
  // The header against the row index: a changed row or entry count shows here even without checksums.
  index_t ends[2] = {-1, -1};
  file.read_exact(d.indptr_offset, &ends[0], 8);
  file.read_exact(d.indptr_offset + rows * 8, &ends[1], 8);
  if (ends[0] != 0 || ends[1] != d.nnz)
    throw DataError(path + ": .dcsr row pointers run from " + std::to_string(ends[0]) + " to " +
                    std::to_string(ends[1]) + ", the header says 0 to nnz = " + std::to_string(d.nnz) + " for " +
                    std::to_string(d.rows) + " rows (corrupt header)");
  return d;
}

void verify_dcsr_rows(const detail::InputFile& file, const DcsrHeader& header, index_t first, index_t count,
                      DcsrVerified* verified) {
  if (header.chunks.empty() || count <= 0) return;
  const std::string& path = file.path();
  if (verified != nullptr && verified->size() != header.chunks.size()) verified->assign(header.chunks.size(), 0);
  // The first chunk ending after `first`.
  auto it = std::upper_bound(header.chunks.begin(), header.chunks.end(), first,
                             [](index_t row, const DcsrChunk& c) { return row < c.row_end; });
  std::vector<char> piece;
  for (; it != header.chunks.end(); ++it) {
    const auto c = static_cast<std::size_t>(it - header.chunks.begin());
    const index_t r0 = c == 0 ? 0 : header.chunks[c - 1].row_end, r1 = it->row_end;
    if (r0 >= first + count) break;
    if (verified != nullptr && (*verified)[c] != 0) continue;
    auto mismatch = [&](const char* what) {
      throw DataError(path + ": checksum mismatch in the " + what + " of rows [" + std::to_string(r0) + ", " +
                      std::to_string(r1) + "): the file is damaged");
    };
    // Row pointers: indptr[r0] (the chunk's first entry) and the row ends indptr[r0 + 1 .. r1].
    index_t begin = 0;
    file.read_exact(header.indptr_offset + static_cast<std::uint64_t>(r0) * 8, &begin, 8);
    std::uint32_t crc = 0;
    index_t end = begin;
    for (index_t i = r0; i < r1;) {
      const index_t n = std::min<index_t>(r1 - i, static_cast<index_t>(kVerifyPiece / 8));
      piece.resize(to_size(n) * 8);
      file.read_exact(header.indptr_offset + static_cast<std::uint64_t>(i + 1) * 8, piece.data(), piece.size());
      crc = util::crc32c(piece.data(), piece.size(), crc);
      std::memcpy(&end, piece.data() + piece.size() - 8, 8);
      i += n;
    }
    if (crc != it->crc_indptr) mismatch("row pointers");
    if (begin < 0 || end < begin || end > header.nnz) mismatch("row pointers");
    auto array_crc = [&](std::uint64_t offset, std::size_t word) {
      std::uint32_t sum = 0;
      const auto total = static_cast<std::uint64_t>(end - begin) * word;
      for (std::uint64_t done = 0; done < total;) {
        const std::uint64_t n = std::min<std::uint64_t>(total - done, kVerifyPiece);
        piece.resize(n);
        file.read_exact(offset + static_cast<std::uint64_t>(begin) * word + done, piece.data(), n);
        sum = util::crc32c(piece.data(), n, sum);
        done += n;
      }
      return sum;
    };
    if (array_crc(header.indices_offset, 4) != it->crc_indices) mismatch("column indices");
    if (array_crc(header.values_offset, header.value_bytes) != it->crc_values) mismatch("values");
    if (verified != nullptr) (*verified)[c] = 1;
  }
}

DcsrHeader read_dcsr_header(const std::string& path) { return read_dcsr_header(detail::InputFile(path)); }

namespace {

// The checksum chunks of `a` (row pointers rebased to 0), as read_checksum_table expects them.
template <class T>
std::vector<DcsrChunk> checksum_chunks(CsrView<T> a, index_t base) {
  std::vector<DcsrChunk> chunks;
  std::vector<index_t> ends;
  for (index_t r0 = 0; r0 < a.rows;) {
    index_t r1 = r0 + 1;
    while (r1 < a.rows && r1 - r0 < kChunkRows && a.indptr[r1 + 1] - a.indptr[r0] <= kChunkEntries) ++r1;
    DcsrChunk c;
    c.row_end = r1;
    ends.resize(to_size(r1 - r0));
    for (index_t i = r0; i < r1; ++i) ends[to_size(i - r0)] = a.indptr[i + 1] - base;
    c.crc_indptr = util::crc32c(ends.data(), ends.size() * 8);
    const index_t p0 = a.indptr[r0], n = a.indptr[r1] - p0;
    c.crc_indices = util::crc32c(a.indices + p0, to_size(n) * 4);
    c.crc_values = util::crc32c(a.values + p0, to_size(n) * sizeof(T));
    chunks.push_back(c);
    r0 = r1;
  }
  return chunks;
}

}  // namespace

template <class T>
void write_dcsr(const std::string& path, CsrView<T> a) {
  detail::check_csr_to_write(path, a);
  write_dcsr_unchecked(path, a);
}

template <class T>
void write_dcsr_unchecked(const std::string& path, CsrView<T> a) {
  if (a.cols > std::numeric_limits<col_index_t>::max())
    throw DataError(path + ": " + std::to_string(a.cols) + " columns do not fit .dcsr's 32-bit column indices");
  const index_t base = a.rows > 0 ? a.indptr[0] : 0;
  const index_t nnz = a.nnz();
  std::array<char, kHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  const std::uint64_t indptr_offset = kHeaderBytes;
  const std::uint64_t indices_offset = align_up(indptr_offset + static_cast<std::uint64_t>(a.rows + 1) * 8);
  const std::uint64_t values_offset = align_up(indices_offset + static_cast<std::uint64_t>(nnz) * 4);
  const std::uint64_t table_offset = align_up(values_offset + static_cast<std::uint64_t>(nnz) * sizeof(T));
  put<std::uint32_t>(h, 8, kVersion);
  put<std::uint32_t>(h, 12, sizeof(T));
  put<std::int64_t>(h, 16, a.rows);
  put<std::int64_t>(h, 24, a.cols);
  put<std::int64_t>(h, 32, nnz);
  put<std::uint64_t>(h, 40, indptr_offset);
  put<std::uint64_t>(h, 48, indices_offset);
  put<std::uint64_t>(h, 56, values_offset);
  const std::vector<DcsrChunk> chunks = checksum_chunks(a, base);
  std::vector<char> table(kTableFixedBytes + chunks.size() * kChunkBytes, 0);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    char* e = table.data() + kTableFixedBytes + c * kChunkBytes;
    std::memcpy(e, &chunks[c].row_end, 8);
    std::memcpy(e + 8, &chunks[c].crc_indptr, 4);
    std::memcpy(e + 12, &chunks[c].crc_indices, 4);
    std::memcpy(e + 16, &chunks[c].crc_values, 4);
  }
  const std::uint64_t count = chunks.size();
  const std::uint32_t header_crc = util::crc32c(h.data(), h.size());
  const std::uint32_t table_crc = util::crc32c(table.data() + kTableFixedBytes, table.size() - kTableFixedBytes);
  std::memcpy(table.data(), &count, 8);
  std::memcpy(table.data() + 8, &header_crc, 4);
  std::memcpy(table.data() + 12, &table_crc, 4);
  write_file_atomically(path, [&](std::ostream& out) {
    std::uint64_t at = 0;
    auto write = [&](const void* data, std::uint64_t bytes) {
      out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
      at += bytes;
    };
    auto pad_to = [&](std::uint64_t offset) {
      static const char kZeros[kAlign] = {};
      write(kZeros, offset - at);
    };
    write(h.data(), h.size());
    std::vector<index_t> starts(1024);
    for (index_t i = 0; i <= a.rows; i += static_cast<index_t>(starts.size())) {
      const index_t n = std::min<index_t>(static_cast<index_t>(starts.size()), a.rows + 1 - i);
      for (index_t q = 0; q < n; ++q) starts[to_size(q)] = a.indptr[i + q] - base;
      write(starts.data(), static_cast<std::uint64_t>(n) * 8);
    }
    pad_to(indices_offset);
    write(a.indices + base, static_cast<std::uint64_t>(nnz) * 4);
    pad_to(values_offset);
    write(a.values + base, static_cast<std::uint64_t>(nnz) * sizeof(T));
    pad_to(table_offset);
    write(table.data(), table.size());
  });
}

MatrixShape read_dcsr_shape(const std::string& path) {
  const DcsrHeader h = read_dcsr_header(path);
  return {h.rows, h.cols, h.nnz, true};
}

template <class T>
std::size_t dcsr_staging_bytes(const DcsrHeader& header, dist::Range cols) {
  const bool whole_rows = cols.first == 0 && cols.last == header.cols;
  return whole_rows && header.value_bytes == sizeof(T) ? 0 : kStagingBytes;
}

template <class T>
index_t read_dcsr_rows(const detail::InputFile& file, const DcsrHeader& header, index_t first, index_t count,
                       dist::Range cols, index_t* indptr, col_index_t* indices, T* values, std::size_t capacity,
                       bool validate, std::vector<std::byte>& staging, std::size_t& bytes_read, DcsrVerified* verified,
                       bool check_values) {
  const std::string& path = file.path();
  verify_dcsr_rows(file, header, first, count, verified);
  const index_t r = count;
  file.read_exact(header.indptr_offset + static_cast<std::uint64_t>(first) * sizeof(index_t), indptr,
                  to_size(r + 1) * sizeof(index_t));
  bytes_read += to_size(r + 1) * sizeof(index_t);
  const index_t base = indptr[0], end = indptr[r];
  for (index_t i = 0; i < r; ++i)
    if (indptr[i] < 0 || indptr[i + 1] < indptr[i] || indptr[i + 1] > header.nnz)
      throw DataError(path + ": row pointers of row " + std::to_string(first + i) + " are not increasing inside [0, " +
                      std::to_string(header.nnz) + "] (corrupt file)");
  const index_t width = header.cols;
  auto bad_index = [&](index_t row, index_t col) {
    throw DataError(path + ": row " + std::to_string(row) + " has column index " + std::to_string(col) +
                    (col < 0 || col >= width ? " outside [0, " + std::to_string(width) + ")"
                                             : std::string(", not above the one before it (unsorted or duplicate)")));
  };
  auto bad_value = [&](index_t row, index_t col, T value) {
    throw DataError(path + ": " + describe_bad_entry(row, col, value));
  };

  if (dcsr_staging_bytes<T>(header, cols) == 0) {
    const index_t n = end - base;
    if (to_size(n) > capacity) throw DataError(path + ": more entries than room (file changed?)");
    file.read_exact(header.indices_offset + static_cast<std::uint64_t>(base) * 4, indices, to_size(n) * 4);
    file.read_exact(header.values_offset + static_cast<std::uint64_t>(base) * sizeof(T), values,
                    to_size(n) * sizeof(T));
    bytes_read += to_size(n) * (4 + sizeof(T));
    for (index_t i = 0; i <= r; ++i) indptr[i] -= base;
    for (index_t i = 0; i < r; ++i) {
      index_t previous = -1;
      for (index_t p = indptr[i]; p < indptr[i + 1]; ++p) {
        const index_t col = indices[p];
        if (col < 0 || col >= width || (validate && col <= previous)) bad_index(first + i, col);
        previous = col;
        if (validate && check_values && !acceptable_entry(values[p])) bad_value(first + i, col, values[p]);
      }
    }
    return n;
  }

  // Through the staging buffer: the entries of a chunk are filtered to the block's columns and converted. The
  // row starts are rewritten in place; row i's original end is read before its slot is overwritten.
  const std::size_t word = header.value_bytes;
  // A multiple of 16 entries keeps the three arrays in the buffer aligned for their types.
  const auto chunk = static_cast<index_t>(kStagingBytes / (4 + word + sizeof(T))) / 16 * 16;
  staging.resize(to_size(chunk) * (4 + word + sizeof(T)));
  auto* chunk_indices = reinterpret_cast<col_index_t*>(staging.data());
  std::byte* chunk_raw = staging.data() + to_size(chunk) * 4;
  auto* chunk_values = reinterpret_cast<T*>(chunk_raw + to_size(chunk) * word);
  index_t kept = 0, i = 0, previous = -1;
  index_t row_end = r > 0 ? indptr[1] : end;
  indptr[0] = 0;
  for (index_t p0 = base; p0 < end; p0 += chunk) {
    const index_t n = std::min(chunk, end - p0);
    file.read_exact(header.indices_offset + static_cast<std::uint64_t>(p0) * 4, chunk_indices, to_size(n) * 4);
    file.read_exact(header.values_offset + static_cast<std::uint64_t>(p0) * word, chunk_raw, to_size(n) * word);
    bytes_read += to_size(n) * (4 + word);
    convert_values(chunk_raw, word, n, chunk_values);
    for (index_t q = 0; q < n; ++q) {
      while (p0 + q >= row_end) {
        ++i;
        row_end = indptr[i + 1];
        indptr[i] = kept;
        previous = -1;
      }
      const index_t col = chunk_indices[q];
      if (col < 0 || col >= width || (validate && col <= previous)) bad_index(first + i, col);
      previous = col;
      const T v = chunk_values[q];
      if (validate && check_values && !acceptable_entry(v)) bad_value(first + i, col, v);
      if (col < cols.first || col >= cols.last) continue;
      if (to_size(kept) >= capacity) throw DataError(path + ": more entries than room (file changed?)");
      indices[kept] = static_cast<col_index_t>(col - cols.first);
      values[kept] = v;
      ++kept;
    }
  }
  for (index_t j = i + 1; j <= r; ++j) indptr[j] = kept;
  return kept;
}

template <class T>
LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries) {
  const detail::InputFile file(path);
  const DcsrHeader header = read_dcsr_header(file);
  if (rows.first < 0 || rows.first > rows.last || rows.last > header.rows || cols.first < 0 || cols.first > cols.last ||
      cols.last > header.cols)
    throw DataError(path + ": block rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                    ") x columns [" + std::to_string(cols.first) + ", " + std::to_string(cols.last) +
                    ") is outside the " + std::to_string(header.rows) + "x" + std::to_string(header.cols) + " matrix");
  // The rows' entries over all columns bound the block's.
  index_t row_span[2] = {0, 0};
  file.read_exact(header.indptr_offset + static_cast<std::uint64_t>(rows.first) * 8, &row_span[0], 8);
  file.read_exact(header.indptr_offset + static_cast<std::uint64_t>(rows.last) * 8, &row_span[1], 8);
  // Both values come from the file: check their order before subtracting, so a corrupt pair cannot overflow.
  if (row_span[0] < 0 || row_span[1] < row_span[0] || row_span[1] > header.nnz)
    throw DataError(path + ": row pointers of rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                    ") are not increasing inside [0, nnz] (corrupt file)");
  const index_t bound = row_span[1] - row_span[0];
  std::vector<index_t> indptr(to_size(rows.size() + 1));
  std::vector<col_index_t> indices(to_size(bound));
  std::vector<T> values(to_size(bound));
  std::vector<std::byte> staging;
  std::size_t bytes_read = 0;
  const index_t nnz = read_dcsr_rows(file, header, rows.first, rows.size(), cols, indptr.data(), indices.data(),
                                     values.data(), to_size(bound), true, staging, bytes_read, nullptr, check_entries);
  indices.resize(to_size(nnz));
  values.resize(to_size(nnz));
  LocalBlock<T> block;
  block.sparse = true;
  block.csr = CsrMatrix<T>(rows.size(), cols.size(), std::move(indptr), std::move(indices), std::move(values));
  return block;
}

template <class T>
CsrMatrix<T> read_dcsr(const std::string& path) {
  const DcsrHeader h = read_dcsr_header(path);
  return std::move(read_dcsr_block<T>(path, {0, h.rows}, {0, h.cols}).csr);
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type in these explicit instantiations
#define DNMF_INSTANTIATE_DCSR(T)                                                                                 \
  template void write_dcsr<T>(const std::string&, CsrView<T>);                                                   \
  template void write_dcsr_unchecked<T>(const std::string&, CsrView<T>);                                         \
  template LocalBlock<T> read_dcsr_block<T>(const std::string&, dist::Range, dist::Range, bool);                 \
  template CsrMatrix<T> read_dcsr<T>(const std::string&);                                                        \
  template std::size_t dcsr_staging_bytes<T>(const DcsrHeader&, dist::Range);                                    \
  template index_t read_dcsr_rows<T>(const detail::InputFile&, const DcsrHeader&, index_t, index_t, dist::Range, \
                                     index_t*, col_index_t*, T*, std::size_t, bool, std::vector<std::byte>&,     \
                                     std::size_t&, DcsrVerified*, bool);
// NOLINTEND(bugprone-macro-parentheses)
DNMF_INSTANTIATE_DCSR(float)
DNMF_INSTANTIATE_DCSR(double)
#undef DNMF_INSTANTIATE_DCSR

}  // namespace dnmf::io
