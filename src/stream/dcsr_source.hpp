// Tiles of a .dcsr block: nnz-balanced row ranges, each read with three preads (row starts, indices,
// values). A block narrower than the file (a 2-D grid) keeps only its own columns.
#pragma once

#include <string>
#include <vector>

#include "stream/convert.hpp"
#include "stream/dcsr.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

template <class T>
class DcsrSource final : public TileSource<T> {
 public:
  /// Rows x cols (global indices) of `path`; scans the block's row pointers once (8 bytes a row) to learn its
  /// nnz and fullest row. Throws dnmf::Error naming the file.
  DcsrSource(const std::string& path, dist::Range rows, dist::Range cols);

  [[nodiscard]] std::string name() const override { return file_.path(); }
  [[nodiscard]] std::string kind() const override { return "dcsr"; }
  [[nodiscard]] index_t rows() const override { return rows_.size(); }
  [[nodiscard]] index_t cols() const override { return cols_.size(); }
  [[nodiscard]] bool sparse() const override { return true; }
  [[nodiscard]] backend::Side direction() const override { return backend::Side::W; }
  /// The block rows' nnz: exact for a block of whole rows, an upper bound otherwise.
  [[nodiscard]] index_t stored() const override { return row_nnz_; }
  [[nodiscard]] std::size_t min_tile_bytes() const override;
  [[nodiscard]] std::size_t staging_bytes() const override;
  [[nodiscard]] std::vector<TileExtent> partition(std::size_t max_tile_bytes) const override;
  void read(const TileExtent& extent, Tile<T>& tile, bool validate) override;

  /// Reads block rows `range` (block-local) into row starts (range.size() + 1, from 0), column indices and
  /// values with room for `capacity` entries; returns the entries kept and adds the bytes read to `bytes_read`.
  /// Column indices are always checked against the file's width (they address memory); `validate` adds the
  /// entry checks and the increasing order within each row.
  index_t read_rows_into(dist::Range range, index_t* indptr, col_index_t* indices, T* values, std::size_t capacity,
                         bool validate, std::size_t& bytes_read);

 private:
  /// Calls visit(row, row_nnz) for every row of the block, reading the row pointers in chunks.
  template <class Visit>
  void scan_rows(Visit visit) const;
  [[nodiscard]] bool whole_rows() const { return cols_.first == 0 && cols_.last == header_.cols; }

  ReadFile file_;
  DcsrHeader header_;
  dist::Range rows_, cols_;
  Converter<T> convert_;
  index_t row_nnz_ = 0;  // nnz of the block's rows (all columns)
  index_t max_row_ = 0;  // nnz of the fullest row
  std::vector<std::byte> staging_;
};

}  // namespace dnmf::stream
