// Tiles copied out of a matrix already in memory: the ring and the streamed operand without a file (tests,
// and a host-to-device stage whose input is resident on the host).
#pragma once

#include <string>
#include <vector>

#include "stream/tile_source.hpp"

namespace dnmf::stream {

template <class T>
class MemorySource final : public TileSource<T> {
 public:
  /// Block rows x cols of `a` (which must outlive the source), tiled along `direction` (dense: either; CSR:
  /// Side::W only). Throws dnmf::Error for a block outside `a` or a CSR in column stripes.
  MemorySource(MatrixRef<T> a, dist::Range rows, dist::Range cols, backend::Side direction);
  /// The whole of `a`.
  MemorySource(MatrixRef<T> a, backend::Side direction);

  [[nodiscard]] std::string name() const override { return "memory"; }
  [[nodiscard]] std::string kind() const override { return "memory"; }
  [[nodiscard]] index_t rows() const override { return rows_.size(); }
  [[nodiscard]] index_t cols() const override { return cols_.size(); }
  [[nodiscard]] bool sparse() const override { return is_sparse(a_); }
  [[nodiscard]] backend::Side direction() const override { return direction_; }
  [[nodiscard]] index_t stored() const override;
  [[nodiscard]] std::size_t min_tile_bytes() const override;
  [[nodiscard]] std::vector<TileExtent> partition(std::size_t max_tile_bytes) const override;
  void read(const TileExtent& extent, Tile<T>& tile, bool validate) override;

 private:
  /// CSR only: the entries of block row i, and the most of any row.
  [[nodiscard]] index_t row_nnz(index_t i) const;
  [[nodiscard]] index_t widest_row() const;

  MatrixRef<T> a_;
  dist::Range rows_, cols_;
  backend::Side direction_;
};

}  // namespace dnmf::stream
