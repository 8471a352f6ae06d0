// One rank's block of a .npy file by positioned reads; see npy_block.hpp.
#include "io/npy_block.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/input_file.hpp"

namespace dnmf::io {
namespace {

// Bytes per read when runs are merged or a run is split: large enough for efficient reads, small enough that
// the conversion buffer stays a minor part of a rank's memory.
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

/// Converts `count` stored elements of type S to T, writing dst[k * stride].
template <class S, class T>
void convert(const std::byte* src, std::size_t count, T* dst, index_t stride) {
  for (std::size_t k = 0; k < count; ++k) {
    S value;
    std::memcpy(&value, src + k * sizeof(S), sizeof(S));  // the buffer position need not be aligned for S
    dst[static_cast<index_t>(k) * stride] = static_cast<T>(value);
  }
}

/// Converts g runs of `length` stored elements (C-order rows, consecutive in `src`) into rows s..s+g of the
/// column-major `dst` (leading dimension ld). Tiles of columns keep the destination writes within a few dozen
/// cache-resident streams instead of one per column.
template <class S, class T>
void convert_rows(const std::byte* src, std::size_t g, std::size_t length, T* dst, index_t ld) {
  constexpr std::size_t kTile = 64;
  for (std::size_t j0 = 0; j0 < length; j0 += kTile) {
    const std::size_t j1 = std::min(length, j0 + kTile);
    for (std::size_t t = 0; t < g; ++t) {
      const std::byte* row = src + t * length * sizeof(S);
      for (std::size_t j = j0; j < j1; ++j) {
        S value;
        std::memcpy(&value, row + j * sizeof(S), sizeof(S));
        dst[static_cast<index_t>(t) + static_cast<index_t>(j) * ld] = static_cast<T>(value);
      }
    }
  }
}

template <class T>
struct Converter {
  void (*run)(const std::byte*, std::size_t, T*, index_t) = nullptr;
  void (*rows)(const std::byte*, std::size_t, std::size_t, T*, index_t) = nullptr;
};

template <class S, class T>
Converter<T> converter() {
  return {&convert<S, T>, &convert_rows<S, T>};
}

template <class T>
Converter<T> converter_for(const NpyHeader& header) {
  const std::size_t size = header.word_size;
  if (header.kind == 'f') return size == 4 ? converter<float, T>() : converter<double, T>();
  if (header.kind == 'i') {
    if (size == 1) return converter<std::int8_t, T>();
    if (size == 2) return converter<std::int16_t, T>();
    if (size == 4) return converter<std::int32_t, T>();
    return converter<std::int64_t, T>();
  }
  if (size == 1) return converter<std::uint8_t, T>();
  if (size == 2) return converter<std::uint16_t, T>();
  if (size == 4) return converter<std::uint32_t, T>();
  return converter<std::uint64_t, T>();
}

void check_range(const std::string& path, const NpyHeader& header, const char* what, dist::Range range,
                 index_t extent) {
  if (range.first < 0 || range.first > range.last || range.last > extent) {
    throw Error(path + ": " + what + " range [" + std::to_string(range.first) + ", " + std::to_string(range.last) +
                ") is out of bounds for a " + std::to_string(header.rows) + "x" + std::to_string(header.cols) +
                " array");
  }
}

}  // namespace

template <class T>
DenseMatrix<T> read_npy_block(const std::string& path, dist::Range rows, dist::Range cols) {
  const detail::InputFile file(path);
  const NpyHeader header = read_npy_header(path);
  check_range(path, header, "row", rows, header.rows);
  check_range(path, header, "column", cols, header.cols);
  DenseMatrix<T> out;
  try {
    out = DenseMatrix<T>(rows.size(), cols.size());
  } catch (const std::bad_alloc&) {
    throw Error(path + ": cannot allocate the " + std::to_string(rows.size()) + "x" + std::to_string(cols.size()) +
                " block of rows [" + std::to_string(rows.first) + ", " + std::to_string(rows.last) + ")");
  }
  if (out.view().empty()) return out;

  // The block is a set of equal runs in the file: its columns (Fortran order; also any array with one row or
  // one column, laid out alike in both orders) or its rows (C order). Run s starts at element
  // start + s * stride of the data and goes to column s (stride 1 in `out`) or row s (stride rb in `out`).
  const bool by_columns = header.fortran_order || header.rows == 1 || header.cols == 1;
  const index_t rb = rows.size();
  const std::uint64_t start = by_columns ? static_cast<std::uint64_t>(cols.first * header.rows + rows.first)
                                         : static_cast<std::uint64_t>(rows.first * header.cols + cols.first);
  const auto stride = static_cast<std::uint64_t>(by_columns ? header.rows : header.cols);
  const index_t runs = by_columns ? cols.size() : rows.size();
  const auto length = static_cast<std::size_t>(by_columns ? rows.size() : cols.size());
  const index_t out_stride = by_columns ? 1 : rb;
  const auto destination = [&](index_t s) { return out.data() + (by_columns ? s * rb : s); };

  const std::size_t word = header.word_size;
  const Converter<T> convert = converter_for<T>(header);
  const bool direct = by_columns && header.kind == 'f' && word == sizeof(T);  // file bytes are `out`'s bytes
  const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / word);
  // Runs that span the whole other dimension follow each other in the file: several are read at once.
  const index_t group = length == stride ? std::max<index_t>(1, static_cast<index_t>(chunk / length)) : 1;
  std::vector<std::byte> buffer;

  const auto read = [&](std::uint64_t element, std::size_t count, T* dst) {
    const std::uint64_t offset = header.data_offset + element * word;
    if (direct) {
      file.read_exact(offset, dst, count * word);
      return;
    }
    buffer.resize(count * word);
    file.read_exact(offset, buffer.data(), buffer.size());
  };
  for (index_t s = 0; s < runs; s += group) {
    const index_t g = std::min(group, runs - s);
    const std::uint64_t element = start + static_cast<std::uint64_t>(s) * stride;
    if (length <= chunk) {
      read(element, static_cast<std::size_t>(g) * length, destination(s));
      if (direct) continue;
      if (by_columns) {
        convert.run(buffer.data(), static_cast<std::size_t>(g) * length, destination(s), 1);  // columns follow
      } else {
        convert.rows(buffer.data(), static_cast<std::size_t>(g), length, destination(s), rb);
      }
    } else {  // one run larger than the buffer (g == 1): read it in pieces
      for (std::size_t j = 0; j < length; j += chunk) {
        const std::size_t count = std::min(chunk, length - j);
        T* dst = destination(s) + static_cast<index_t>(j) * out_stride;
        read(element + j, count, dst);
        if (!direct) convert.run(buffer.data(), count, dst, out_stride);
      }
    }
  }
  check_nonnegative<T>(out.view(), path, rows.first, cols.first);
  return out;
}

template DenseMatrix<float> read_npy_block<float>(const std::string&, dist::Range, dist::Range);
template DenseMatrix<double> read_npy_block<double>(const std::string&, dist::Range, dist::Range);

}  // namespace dnmf::io
