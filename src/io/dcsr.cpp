#include "io/dcsr.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <ostream>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"

namespace dnmf::io {
namespace {

static_assert(std::endian::native == std::endian::little, ".dcsr files are little-endian");

constexpr char kMagic[8] = {'D', 'N', 'M', 'F', 'C', 'S', 'R', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kHeaderBytes = 64;
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
      out[q] = static_cast<T>(v);
    }
  }
}

}  // namespace

DcsrHeader read_dcsr_header(const detail::InputFile& file) {
  const std::string& path = file.path();
  if (file.size() < kHeaderBytes)
    throw DataError(path + ": too short for a .dcsr header (" + std::to_string(file.size()) + " bytes)");
  std::array<char, kHeaderBytes> h{};
  file.read_exact(0, h.data(), h.size());
  if (std::memcmp(h.data(), kMagic, sizeof kMagic) != 0) throw DataError(path + ": not a .dcsr file (bad magic)");
  const auto version = get<std::uint32_t>(h, 8);
  if (version != kVersion)
    throw DataError(path + ": .dcsr version " + std::to_string(version) + " is not supported (expected 1)");
  DcsrHeader d;
  d.value_bytes = get<std::uint32_t>(h, 12);
  d.rows = get<std::int64_t>(h, 16);
  d.cols = get<std::int64_t>(h, 24);
  d.nnz = get<std::int64_t>(h, 32);
  d.indptr_offset = get<std::uint64_t>(h, 40);
  d.indices_offset = get<std::uint64_t>(h, 48);
  d.values_offset = get<std::uint64_t>(h, 56);
  if (d.value_bytes != 4 && d.value_bytes != 8)
    throw DataError(path + ": .dcsr value size " + std::to_string(d.value_bytes) + " (expected 4 or 8)");
  if (d.rows < 0 || d.cols < 0 || d.nnz < 0 || d.cols > std::numeric_limits<col_index_t>::max())
    throw DataError(path + ": .dcsr shape " + std::to_string(d.rows) + "x" + std::to_string(d.cols) + " with nnz " +
                    std::to_string(d.nnz) + " is invalid");
  const auto rows = static_cast<std::uint64_t>(d.rows), nnz = static_cast<std::uint64_t>(d.nnz);
  const bool ordered = d.indptr_offset >= kHeaderBytes && d.indices_offset >= d.indptr_offset + (rows + 1) * 8 &&
                       d.values_offset >= d.indices_offset + nnz * 4 &&
                       d.values_offset + nnz * d.value_bytes <= file.size();
  if (!ordered)
    throw DataError(path + ": .dcsr arrays do not fit the file (" + std::to_string(file.size()) +
                    " bytes; truncated or corrupt header)");
  return d;
}

DcsrHeader read_dcsr_header(const std::string& path) { return read_dcsr_header(detail::InputFile(path)); }

template <class T>
void write_dcsr(const std::string& path, CsrView<T> a) {
  if (a.cols > std::numeric_limits<col_index_t>::max())
    throw DataError(path + ": " + std::to_string(a.cols) + " columns do not fit .dcsr's 32-bit column indices");
  const index_t base = a.rows > 0 ? a.indptr[0] : 0;
  const index_t nnz = a.nnz();
  std::array<char, kHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  const std::uint64_t indptr_offset = kHeaderBytes;
  const std::uint64_t indices_offset = align_up(indptr_offset + static_cast<std::uint64_t>(a.rows + 1) * 8);
  const std::uint64_t values_offset = align_up(indices_offset + static_cast<std::uint64_t>(nnz) * 4);
  put<std::uint32_t>(h, 8, kVersion);
  put<std::uint32_t>(h, 12, sizeof(T));
  put<std::int64_t>(h, 16, a.rows);
  put<std::int64_t>(h, 24, a.cols);
  put<std::int64_t>(h, 32, nnz);
  put<std::uint64_t>(h, 40, indptr_offset);
  put<std::uint64_t>(h, 48, indices_offset);
  put<std::uint64_t>(h, 56, values_offset);
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
                       bool validate, std::vector<std::byte>& staging, std::size_t& bytes_read) {
  const std::string& path = file.path();
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
        if (validate && !acceptable_entry(values[p])) bad_value(first + i, col, values[p]);
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
      if (validate && !acceptable_entry(v)) bad_value(first + i, col, v);
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
LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols) {
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
  const index_t bound = row_span[1] - row_span[0];
  if (bound < 0 || row_span[0] < 0 || row_span[1] > header.nnz)
    throw DataError(path + ": row pointers of rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) +
                    ") are not increasing inside [0, nnz] (corrupt file)");
  std::vector<index_t> indptr(to_size(rows.size() + 1));
  std::vector<col_index_t> indices(to_size(bound));
  std::vector<T> values(to_size(bound));
  std::vector<std::byte> staging;
  std::size_t bytes_read = 0;
  const index_t nnz = read_dcsr_rows(file, header, rows.first, rows.size(), cols, indptr.data(), indices.data(),
                                     values.data(), to_size(bound), true, staging, bytes_read);
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
  template LocalBlock<T> read_dcsr_block<T>(const std::string&, dist::Range, dist::Range);                       \
  template CsrMatrix<T> read_dcsr<T>(const std::string&);                                                        \
  template std::size_t dcsr_staging_bytes<T>(const DcsrHeader&, dist::Range);                                    \
  template index_t read_dcsr_rows<T>(const detail::InputFile&, const DcsrHeader&, index_t, index_t, dist::Range, \
                                     index_t*, col_index_t*, T*, std::size_t, bool, std::vector<std::byte>&,     \
                                     std::size_t&);
// NOLINTEND(bugprone-macro-parentheses)
DNMF_INSTANTIATE_DCSR(float)
DNMF_INSTANTIATE_DCSR(double)
#undef DNMF_INSTANTIATE_DCSR

}  // namespace dnmf::io
