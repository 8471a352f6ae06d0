// Where tiles come from: a block of A (rows x cols ranges of a matrix, global indices) cut into stripes
// along one direction. Sources read into ring slots on the producer thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/kernels.hpp"
#include "dist/grid.hpp"
#include "io/block_read.hpp"
#include "stream/tile.hpp"

namespace dnmf::stream {

/// A block of A that can be read stripe by stripe.
template <class T>
class TileSource {
 public:
  virtual ~TileSource() = default;
  /// The file (or "memory") in messages.
  [[nodiscard]] virtual std::string name() const = 0;
  /// Short kind for reports: "npy", "dcsr", "memory".
  [[nodiscard]] virtual std::string kind() const = 0;
  [[nodiscard]] virtual index_t rows() const = 0;  ///< of the block
  [[nodiscard]] virtual index_t cols() const = 0;  ///< of the block
  [[nodiscard]] virtual bool sparse() const = 0;
  /// Side::H: the tiles are column stripes (H's columns update tile by tile); Side::W: row stripes.
  [[nodiscard]] virtual backend::Side direction() const = 0;
  /// Entries the block stores: rows*cols (dense); nnz, or an upper bound for a 2-D block of a CSR file.
  [[nodiscard]] virtual index_t stored() const = 0;
  /// Memory of the narrowest tile the source can make (one column or row; CSR: the fullest row).
  [[nodiscard]] virtual std::size_t min_tile_bytes() const = 0;
  /// Scratch the producer holds besides the slots (conversion and transposition buffers).
  [[nodiscard]] virtual std::size_t staging_bytes() const { return 0; }
  /// False when the source lends tiles out of its own memory (Tile::lent, a file mapping) and the slots need
  /// no entry buffers. The lent pages still count against the budget like slots.
  [[nodiscard]] virtual bool fills_slots() const { return true; }
  /// Cuts the block into tiles of at most `max_tile_bytes` each (never fewer than one row or column),
  /// balanced: equal widths (dense) or equal nnz (CSR). Throws dnmf::Error when one row or column does
  /// not fit.
  [[nodiscard]] virtual std::vector<TileExtent> partition(std::size_t max_tile_bytes) const = 0;
  /// Fills `tile` (buffers already sized for the largest extent) with `extent`. `validate`: check every entry
  /// (negative, NaN, infinite: dnmf::Error naming the source and the entry's global row and column).
  /// Called from one thread at a time.
  virtual void read(const TileExtent& extent, Tile<T>& tile, bool validate) = 0;
  /// read() with the structure checked (a CSR row's column indices increasing: no duplicates) but not the
  /// values, for a reader that checks the values it uses itself (a masked run: a missing entry may hold
  /// anything). Dense sources have no structure to check.
  virtual void read_structure_checked(const TileExtent& extent, Tile<T>& tile) { read(extent, tile, false); }
  /// Throws dnmf::IoError when tiles handed out since the last call may not hold the file's data (a mapped
  /// file shrank under them and they read zeros: mapping_guard.hpp). Called after each pass.
  virtual void check_intact() const {}
};

/// Splits [0, extent) into `parts` ranges of equal size (the first extent % parts one longer).
[[nodiscard]] std::vector<dist::Range> even_ranges(index_t extent, index_t parts);

/// The source for a matrix file by extension: .npy (dense; Fortran order gives column stripes, C order row
/// stripes) or .dcsr (the project's binary CSR: nnz-balanced row ranges). `rows` x `cols` is the block
/// (global indices). Throws dnmf::Error for other formats, naming the file.
template <class T>
std::unique_ptr<TileSource<T>> open_source(const std::string& path, dist::Range rows, dist::Range cols);

/// Shape of a file open_source() can stream, from its header alone (dnmf::Error naming it otherwise).
[[nodiscard]] io::MatrixShape source_shape(const std::string& path);

/// Whether open_source() can stream this file (by extension).
[[nodiscard]] bool streamable(const std::string& path);

}  // namespace dnmf::stream
