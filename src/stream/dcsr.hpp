// The project's binary CSR format (.dcsr; docs/formats.md): a 64-byte header, then the row pointers (the row
// index: any row range is found without reading anything else), the column indices and the values, each a
// flat little-endian array. A block of rows costs three preads; nothing is parsed.
#pragma once

#include <cstdint>
#include <string>

#include "dist/grid.hpp"
#include "dnmf/matrix.hpp"
#include "io/block_read.hpp"
#include "stream/read_file.hpp"

namespace dnmf::stream {

/// What a .dcsr header says.
struct DcsrHeader {
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;
  std::size_t value_bytes = 8;       ///< 4: float32 values, 8: float64
  std::uint64_t indptr_offset = 0;   ///< rows + 1 int64 row starts
  std::uint64_t indices_offset = 0;  ///< nnz int32 column indices
  std::uint64_t values_offset = 0;   ///< nnz values
};

/// Reads and checks the header (magic, version, sizes against the file's length); dnmf::Error names the file.
[[nodiscard]] DcsrHeader read_dcsr_header(const ReadFile& file);
[[nodiscard]] DcsrHeader read_dcsr_header(const std::string& path);

/// Writes `matrix` (rows sorted, unique column indices) with values stored as T (atomically).
template <class T>
void write_dcsr(const std::string& path, CsrView<T> matrix);

/// Shape and nnz of a .dcsr file, without reading its arrays.
[[nodiscard]] io::MatrixShape read_dcsr_shape(const std::string& path);

/// Rows x columns (global indices) of a .dcsr file as a CSR block in precision T, columns renumbered from the
/// block's first. Entries are checked (finite, non-negative, indices in range and increasing in each row).
template <class T>
io::LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols);

/// The whole matrix.
template <class T>
CsrMatrix<T> read_dcsr(const std::string& path);

}  // namespace dnmf::stream
