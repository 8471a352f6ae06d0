// Tiles of a .dcsr block (io/dcsr.hpp): nnz-balanced row ranges, each read with three preads (row starts,
// indices, values). A block narrower than the file (a 2-D grid) keeps only its own columns.
#pragma once

#include <string>
#include <vector>

#include "io/dcsr.hpp"
#include "io/input_file.hpp"
#include "stream/file_stamp.hpp"
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
  void read_structure_checked(const TileExtent& extent, Tile<T>& tile) override;
  /// IoError when the file was written since it was opened (its checksums are verified on first read only).
  void check_intact() const override { stamp_.check_unchanged(file_.path(), file_.descriptor()); }

 private:
  /// read() with the structure and the values checked as asked.
  void fill(const TileExtent& extent, Tile<T>& tile, bool structure, bool values);
  /// Calls visit(row, row_nnz) for every row of the block, reading the row pointers in chunks.
  template <class Visit>
  void scan_rows(Visit visit) const;

  io::detail::InputFile file_;
  FileStamp stamp_{file_.path(), file_.descriptor()};
  io::DcsrHeader header_;
  dist::Range rows_, cols_;
  index_t row_nnz_ = 0;  // nnz of the block's rows (all columns)
  index_t max_row_ = 0;  // nnz of the fullest row
  std::vector<std::byte> staging_;
  io::DcsrVerified verified_;  // checksum chunks already verified: each is checked on its first read only
};

}  // namespace dnmf::stream
