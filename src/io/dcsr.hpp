// The project's binary CSR format (.dcsr; docs/formats.md): a 64-byte header, then the row pointers (the row
// index: any row range is found without reading anything else), the column indices and the values, each a
// flat little-endian array. A block of rows costs three preads and nothing is parsed, which is why streaming
// reads sparse matrices from .dcsr rather than from Matrix Market text. Version 2 adds a checksum table after
// the values: CRC-32C of the header and of each chunk of rows, so that every read verifies what it uses.
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

/// One checksummed chunk of rows of a version-2 file: rows [previous row_end, row_end), CRC-32C of their
/// row ends (indptr[r0 + 1 .. r1]), column indices and values.
struct DcsrChunk {
  index_t row_end = 0;
  std::uint32_t crc_indptr = 0;
  std::uint32_t crc_indices = 0;
  std::uint32_t crc_values = 0;
};

/// What a .dcsr header says.
struct DcsrHeader {
  std::uint32_t version = 2;  ///< 1: no checksums (read with structural checks only); 2: checksummed
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;
  std::size_t value_bytes = 8;       ///< 4: float32 values, 8: float64
  std::uint64_t indptr_offset = 0;   ///< rows + 1 int64 row starts
  std::uint64_t indices_offset = 0;  ///< nnz int32 column indices
  std::uint64_t values_offset = 0;   ///< nnz values
  std::vector<DcsrChunk> chunks;     ///< version 2: the checksum table, in row order (empty in version 1)
};

/// Reads of one file remember which chunks they have verified, so that a streamed run checks each once.
using DcsrVerified = std::vector<unsigned char>;

/// Reads and checks the header (magic, version, sizes against the file's length, indptr[0] = 0 and
/// indptr[rows] = nnz; in version 2 its checksum and the checksum table's); dnmf::Error names the file.
[[nodiscard]] DcsrHeader read_dcsr_header(const detail::InputFile& file);
[[nodiscard]] DcsrHeader read_dcsr_header(const std::string& path);

/// Shape and nnz of a .dcsr file, from its header alone.
[[nodiscard]] MatrixShape read_dcsr_shape(const std::string& path);

/// Rows x columns (global indices) of a .dcsr file as a CSR block in precision T, columns renumbered from the
/// block's first. Entries are checked (finite, non-negative, indices in range and increasing in each row);
/// `check_entries` false leaves the values unchecked (a masked run checks only the observed ones).
template <class T>
LocalBlock<T> read_dcsr_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries = true);

/// Scratch read_dcsr_rows needs: none when the block spans the file's columns and the values are stored as T.
template <class T>
[[nodiscard]] std::size_t dcsr_staging_bytes(const DcsrHeader& header, dist::Range cols);

/// The reader under the others (and under streaming's tile source): global rows [first, first + count), keeping
/// columns `cols` (renumbered from cols.first). In a version-2 file the chunks overlapping the rows are verified
/// first (unless marked in `verified`, which is sized and updated when given), a mismatch being a DataError
/// naming the rows; the rows are then read into row starts (count + 1, from 0), indices and values with
/// room for `capacity` entries. Returns the entries kept and adds the bytes read to `bytes_read`. Column
/// indices are always checked against the file's width (they address memory); `validate` adds the entry checks
/// and the increasing order within rows (the values' checks only with `check_values`). `staging` is reused
/// scratch (dcsr_staging_bytes).
template <class T>
index_t read_dcsr_rows(const detail::InputFile& file, const DcsrHeader& header, index_t first, index_t count,
                       dist::Range cols, index_t* indptr, col_index_t* indices, T* values, std::size_t capacity,
                       bool validate, std::vector<std::byte>& staging, std::size_t& bytes_read,
                       DcsrVerified* verified = nullptr, bool check_values = true);

/// write_dcsr without its structure check: how tests make a well-checksummed file with a bad structure, to see
/// the readers refuse it.
template <class T>
void write_dcsr_unchecked(const std::string& path, CsrView<T> a);

/// Verifies the checksums of the chunks overlapping rows [first, first + count) (version 2; nothing in
/// version 1), skipping and marking those in `verified` when given. Reads in pieces of at most 1 MiB.
void verify_dcsr_rows(const detail::InputFile& file, const DcsrHeader& header, index_t first, index_t count,
                      DcsrVerified* verified);

}  // namespace dnmf::io
