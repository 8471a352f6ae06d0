// Tiles of a .npy block by pread: a Fortran-order file in column stripes, a C-order file in row stripes, so
// that each stripe is a run of whole file lines (one read when the block spans the file's full lines).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/io.hpp"
#include "io/npy_convert.hpp"
#include "stream/file_stamp.hpp"
#include "stream/mapping_guard.hpp"
#include "stream/read_file.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

/// How an NpySource brings tiles in.
enum class NpyAccess {
  automatic,  ///< mapped where the file holds the tiles as they are computed on, else read
  read,       ///< pread into the slots (and convert or transpose on the way)
  mapped,     ///< lend views of a read-only mapping of the file (no copy); needs a Fortran-order file of T
              ///< whose block spans whole columns, else falls back to read
};

template <class T>
class NpySource final : public TileSource<T> {
 public:
  /// The block rows x cols (global indices) of the .npy file `path`; throws dnmf::Error naming the file.
  NpySource(const std::string& path, dist::Range rows, dist::Range cols, NpyAccess access = NpyAccess::automatic);
  ~NpySource() override;
  NpySource(const NpySource&) = delete;
  NpySource& operator=(const NpySource&) = delete;

  [[nodiscard]] std::string name() const override { return file_.path(); }
  [[nodiscard]] std::string kind() const override { return "npy"; }
  [[nodiscard]] index_t rows() const override { return rows_.size(); }
  [[nodiscard]] index_t cols() const override { return cols_.size(); }
  [[nodiscard]] bool sparse() const override { return false; }
  [[nodiscard]] backend::Side direction() const override { return columns_ ? backend::Side::H : backend::Side::W; }
  [[nodiscard]] index_t stored() const override { return rows() * cols(); }
  [[nodiscard]] std::size_t min_tile_bytes() const override;
  [[nodiscard]] std::size_t staging_bytes() const override;
  [[nodiscard]] bool fills_slots() const override { return map_ == nullptr; }
  /// True when tiles are lent from a mapping of the file rather than read into the slots.
  [[nodiscard]] bool mapped() const { return map_ != nullptr; }
  [[nodiscard]] std::vector<TileExtent> partition(std::size_t max_tile_bytes) const override;
  void read(const TileExtent& extent, Tile<T>& tile, bool validate) override;
  /// Mapped: an IoError when the file shrank under the mapping (SIGBUS caught by the guard, or a smaller size).
  void check_intact() const override;
  /// See ReadFile::set_drop_behind (benchmarks of cold reads).
  void set_drop_behind(bool on) { file_.set_drop_behind(on); }

 private:
  ReadFile file_;
  FileStamp stamp_{file_.path(), file_.descriptor()};
  io::NpyHeader header_;
  dist::Range rows_, cols_;
  bool columns_ = true;  // Fortran order (or a single line): column stripes
  io::Converter<T> convert_;
  std::vector<std::byte> staging_;
  const std::byte* map_ = nullptr;  // the whole file, read-only, when tiles are lent
  std::size_t map_bytes_ = 0;
  const std::byte* block_begin_ = nullptr;                           // where this block's columns start in the mapping
  std::vector<std::pair<const std::byte*, const std::byte*>> lent_;  // tiles lent and not yet released
  std::unique_ptr<MappingGuard> guard_;                              // SIGBUS of the mapping -> zeros + a mark

  /// Lends `extent` out of the mapping: unmaps the tile's previous pages from this process, prefaults the new.
  void lend(const TileExtent& extent, Tile<T>& tile);
};

}  // namespace dnmf::stream
