// A's tiles and, beside each, the same stripe of the mask (weights), through one prefetch ring: the masked
// streamed solver reads both in one pass (docs/masked.md, "Streaming"). Each ring slot holds a pair of tiles
// filled by the producer together, so the budget counts a pair per slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/operand.hpp"
#include "dnmf/error.hpp"
#include "stream/ring.hpp"
#include "stream/ring_pass.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

/// One ring slot: a tile of A and the same stripe of the mask (unused without a mask).
template <class T>
struct TilePair {
  Tile<T> a;
  Tile<T> w;
};

template <class T>
class MaskedTiles {
 public:
  /// Streams `a` and, unless null, `mask` (the same block of a matrix of A's shape, read in the same stripes) in
  /// pairs of at most `pair_bytes` through `depth` >= 2 slots. Throws dnmf::UsageError when the mask would be cut
  /// in other stripes than A (a .npy of the other order, a sparse mask), dnmf::Error when a line exceeds a tile.
  MaskedTiles(std::unique_ptr<TileSource<T>> a, std::unique_ptr<TileSource<T>> mask, std::size_t pair_bytes, int depth);
  ~MaskedTiles();
  MaskedTiles(const MaskedTiles&) = delete;
  MaskedTiles& operator=(const MaskedTiles&) = delete;

  [[nodiscard]] const TileSource<T>& a() const { return *a_; }
  [[nodiscard]] const TileSource<T>* mask() const { return mask_.get(); }
  /// Side::H: column stripes (each tile holds whole columns of A); Side::W: row stripes.
  [[nodiscard]] backend::Side direction() const { return a_->direction(); }
  [[nodiscard]] std::size_t tile_count() const { return extents_.size(); }
  [[nodiscard]] int depth() const { return depth_; }
  [[nodiscard]] backend::OperandStats stats() const;

  /// Asked before each tile of every pass from now on (dnmf::Cancelled when it returns true).
  void set_cancel(PassCancel cancel) { cancel_ = std::move(cancel); }

  /// One pass: body(a_tile, mask_tile or nullptr) for every tile in order. A pass abandoned by an exception
  /// restarts the ring, so the next pass begins at tile 0 again.
  template <class Body>
  void pass(Body&& body) {
    ring_pass(
        ring_.get(), extents_.size(), passes_, [](const TilePair<T>& pair) { return pair.a.index; },
        [&](const TilePair<T>& pair) { body(pair.a, mask_ ? &pair.w : nullptr); },
        [this] {
          a_->check_intact();
          if (mask_) mask_->check_intact();
        },
        cancel_, a_->name());
  }

 private:
  std::unique_ptr<TileSource<T>> a_, mask_;
  std::vector<TileExtent> extents_;
  std::vector<char> structure_checked_;  // per tile; touched by the producer only
  int depth_ = 2;
  long long passes_ = 0;
  PassCancel cancel_;
  std::atomic<std::uint64_t> bytes_read_{0};
  std::unique_ptr<Ring<TilePair<T>>> ring_;  // last: its producer uses the members above
};

/// Bytes of a slot pair for the planner's narrowest tile: A's and the mask's narrowest stripes.
template <class T>
std::size_t min_pair_bytes(const TileSource<T>& a, const TileSource<T>* mask) {
  return a.min_tile_bytes() + (mask != nullptr ? mask->min_tile_bytes() : 0);
}

}  // namespace dnmf::stream
