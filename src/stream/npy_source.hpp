// Tiles of a .npy block by pread: a Fortran-order file in column stripes, a C-order file in row stripes, so
// that each stripe is a run of whole file lines (one read when the block spans the file's full lines).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dnmf/io.hpp"
#include "stream/convert.hpp"
#include "stream/read_file.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

template <class T>
class NpySource final : public TileSource<T> {
 public:
  /// The block rows x cols (global indices) of the .npy file `path`; throws dnmf::Error naming the file.
  NpySource(const std::string& path, dist::Range rows, dist::Range cols);

  [[nodiscard]] std::string name() const override { return file_.path(); }
  [[nodiscard]] std::string kind() const override { return "npy"; }
  [[nodiscard]] index_t rows() const override { return rows_.size(); }
  [[nodiscard]] index_t cols() const override { return cols_.size(); }
  [[nodiscard]] bool sparse() const override { return false; }
  [[nodiscard]] backend::Side direction() const override { return columns_ ? backend::Side::H : backend::Side::W; }
  [[nodiscard]] index_t stored() const override { return rows() * cols(); }
  [[nodiscard]] std::size_t min_tile_bytes() const override;
  [[nodiscard]] std::size_t staging_bytes() const override;
  [[nodiscard]] std::vector<TileExtent> partition(std::size_t max_tile_bytes) const override;
  void read(const TileExtent& extent, Tile<T>& tile, bool validate) override;

 private:
  ReadFile file_;
  io::NpyHeader header_;
  dist::Range rows_, cols_;
  bool columns_ = true;  // Fortran order (or a single line): column stripes
  Converter<T> convert_;
  std::vector<std::byte> staging_;
};

}  // namespace dnmf::stream
