// The project's binary CSR format (.dcsr; docs/formats.md): a 64-byte header, then the row pointers (the row
// index: any row range is found without reading anything else), the column indices and the values, each a
// flat little-endian array. A block of rows costs three preads and nothing is parsed, which is why streaming
// reads sparse matrices from .dcsr rather than from Matrix Market text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dist/grid.hpp"
#include "dnmf/matrix.hpp"
#include "io/block_read.hpp"
#include "io/input_file.hpp"

namespace dnmf::io {

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
[[nodiscard]] DcsrHeader read_dcsr_header(const detail::InputFile& file);
[[nodiscard]] DcsrHeader read_dcsr_header(const std::string& path);

/// Shape and nnz of a .dcsr file, from its header alone.
[[nodiscard]] MatrixShape read_dcsr_shape(const std::string& path);

/// Rows x columns (global indices) of a .dcsr file as a CSR block in precision T, columns renumbered from the
/// block's first. Entries are checked (finite, non-negative, indices in range and increasing in each row).
template <class T>
LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols);

/// Scratch read_dcsr_rows needs: none when the block spans the file's columns and the values are stored as T.
template <class T>
[[nodiscard]] std::size_t dcsr_staging_bytes(const DcsrHeader& header, dist::Range cols);

/// The reader under the others (and under streaming's tile source): global rows [first, first + count), keeping
/// columns `cols` (renumbered from cols.first), into row starts (count + 1, from 0), indices and values with
/// room for `capacity` entries. Returns the entries kept and adds the bytes read to `bytes_read`. Column
/// indices are always checked against the file's width (they address memory); `validate` adds the entry checks
/// and the increasing order within rows. `staging` is reused scratch (dcsr_staging_bytes).
template <class T>
index_t read_dcsr_rows(const detail::InputFile& file, const DcsrHeader& header, index_t first, index_t count,
                       dist::Range cols, index_t* indptr, col_index_t* indices, T* values, std::size_t capacity,
                       bool validate, std::vector<std::byte>& staging, std::size_t& bytes_read);

}  // namespace dnmf::io
