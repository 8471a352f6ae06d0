#include "stream/dcsr.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <ostream>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "stream/dcsr_source.hpp"

namespace dnmf::stream {
namespace {

static_assert(std::endian::native == std::endian::little, ".dcsr files are little-endian");

constexpr char kMagic[8] = {'D', 'N', 'M', 'F', 'C', 'S', 'R', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kHeaderBytes = 64;
constexpr std::uint64_t kAlign = 64;  // each array starts on a 64-byte boundary

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

}  // namespace

DcsrHeader read_dcsr_header(const ReadFile& file) {
  const std::string& path = file.path();
  if (file.size() < kHeaderBytes)
    throw Error(path + ": too short for a .dcsr header (" + std::to_string(file.size()) + " bytes)");
  std::array<char, kHeaderBytes> h{};
  file.read(0, h.data(), h.size());
  if (std::memcmp(h.data(), kMagic, sizeof kMagic) != 0) throw Error(path + ": not a .dcsr file (bad magic)");
  const auto version = get<std::uint32_t>(h, 8);
  if (version != kVersion)
    throw Error(path + ": .dcsr version " + std::to_string(version) + " is not supported (expected 1)");
  DcsrHeader d;
  d.value_bytes = get<std::uint32_t>(h, 12);
  d.rows = get<std::int64_t>(h, 16);
  d.cols = get<std::int64_t>(h, 24);
  d.nnz = get<std::int64_t>(h, 32);
  d.indptr_offset = get<std::uint64_t>(h, 40);
  d.indices_offset = get<std::uint64_t>(h, 48);
  d.values_offset = get<std::uint64_t>(h, 56);
  if (d.value_bytes != 4 && d.value_bytes != 8)
    throw Error(path + ": .dcsr value size " + std::to_string(d.value_bytes) + " (expected 4 or 8)");
  if (d.rows < 0 || d.cols < 0 || d.nnz < 0 || d.cols > std::numeric_limits<col_index_t>::max())
    throw Error(path + ": .dcsr shape " + std::to_string(d.rows) + "x" + std::to_string(d.cols) + " with nnz " +
                std::to_string(d.nnz) + " is invalid");
  const auto rows = static_cast<std::uint64_t>(d.rows), nnz = static_cast<std::uint64_t>(d.nnz);
  const bool ordered = d.indptr_offset >= kHeaderBytes && d.indices_offset >= d.indptr_offset + (rows + 1) * 8 &&
                       d.values_offset >= d.indices_offset + nnz * 4 &&
                       d.values_offset + nnz * d.value_bytes <= file.size();
  if (!ordered)
    throw Error(path + ": .dcsr arrays do not fit the file (" + std::to_string(file.size()) +
                " bytes; truncated or corrupt header)");
  return d;
}

DcsrHeader read_dcsr_header(const std::string& path) { return read_dcsr_header(ReadFile(path)); }

template <class T>
void write_dcsr(const std::string& path, CsrView<T> a) {
  if (a.cols > std::numeric_limits<col_index_t>::max())
    throw Error(path + ": " + std::to_string(a.cols) + " columns do not fit .dcsr's 32-bit column indices");
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
  io::write_file_atomically(path, [&](std::ostream& out) {
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
      for (index_t q = 0; q < n; ++q) starts[static_cast<std::size_t>(q)] = a.indptr[i + q] - base;
      write(starts.data(), static_cast<std::uint64_t>(n) * 8);
    }
    pad_to(indices_offset);
    write(a.indices + base, static_cast<std::uint64_t>(nnz) * 4);
    pad_to(values_offset);
    write(a.values + base, static_cast<std::uint64_t>(nnz) * sizeof(T));
  });
}

io::MatrixShape read_dcsr_shape(const std::string& path) {
  const DcsrHeader h = read_dcsr_header(path);
  return {h.rows, h.cols, h.nnz, true};
}

template <class T>
io::LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols) {
  DcsrSource<T> source(path, rows, cols);
  std::vector<index_t> indptr(static_cast<std::size_t>(rows.size() + 1));
  std::vector<col_index_t> indices(static_cast<std::size_t>(source.stored()));
  std::vector<T> values(static_cast<std::size_t>(source.stored()));
  std::size_t bytes_read = 0;
  const index_t nnz = source.read_rows_into({0, rows.size()}, indptr.data(), indices.data(), values.data(),
                                            static_cast<std::size_t>(source.stored()), true, bytes_read);
  indices.resize(static_cast<std::size_t>(nnz));
  values.resize(static_cast<std::size_t>(nnz));
  io::LocalBlock<T> block;
  block.sparse = true;
  block.csr = CsrMatrix<T>(rows.size(), cols.size(), std::move(indptr), std::move(indices), std::move(values));
  return block;
}

template <class T>
CsrMatrix<T> read_dcsr(const std::string& path) {
  const DcsrHeader h = read_dcsr_header(path);
  return std::move(read_dcsr_block<T>(path, {0, h.rows}, {0, h.cols}).csr);
}

#define DNMF_INSTANTIATE_DCSR(T)                                                               \
  template void write_dcsr<T>(const std::string&, CsrView<T>);                                 \
  template io::LocalBlock<T> read_dcsr_block<T>(const std::string&, dist::Range, dist::Range); \
  template CsrMatrix<T> read_dcsr<T>(const std::string&);
DNMF_INSTANTIATE_DCSR(float)
DNMF_INSTANTIATE_DCSR(double)
#undef DNMF_INSTANTIATE_DCSR

}  // namespace dnmf::stream
