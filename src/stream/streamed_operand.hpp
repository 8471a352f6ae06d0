// A block of A that does not fit in memory, as the iteration sees it (backend::Operand): every product is one
// pass over the block's tiles, which a TileSource reads into a Ring while the backend computes on the tile
// before. Each tile goes through the backend's own kernels, so streamed results equal resident ones up to the
// order of floating-point sums.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/operand.hpp"
#include "dnmf/index.hpp"
#include "stream/buffer.hpp"
#include "stream/ring.hpp"
#include "stream/ring_pass.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

template <class T>
class StreamedOperand final : public backend::Operand<T> {
 public:
  /// Streams `source` in tiles of at most `tile_bytes` through `depth` >= 2 slots from `allocator`. The
  /// producer starts reading at once. Throws dnmf::Error when a row or column of the block exceeds a tile or
  /// when the kernels cannot compute on host-visible slots.
  StreamedOperand(backend::Kernels<T>& kernels, std::unique_ptr<TileSource<T>> source, std::size_t tile_bytes,
                  int depth, const BufferAllocator& allocator = host_allocator());
  ~StreamedOperand() override;
  StreamedOperand(const StreamedOperand&) = delete;
  StreamedOperand& operator=(const StreamedOperand&) = delete;

  [[nodiscard]] index_t rows() const override { return source_->rows(); }
  [[nodiscard]] index_t cols() const override { return source_->cols(); }
  [[nodiscard]] bool sparse() const override { return source_->sparse(); }
  [[nodiscard]] std::string mode() const override { return "streamed"; }
  [[nodiscard]] const MatrixRef<T>* resident() const override { return nullptr; }

  [[nodiscard]] backend::MatrixStats stats() override;
  void multiply(backend::Side side, backend::CView<T> y, backend::View<T> out, T beta) override;
  backend::KlSums kl_multiply(backend::Side side, backend::CView<T> y, backend::CView<T> x, backend::View<T> out,
                              T beta) override;
  /// The stripe direction: column stripes update H tile by tile, row stripes W.
  [[nodiscard]] backend::Side fused_side() const override { return source_->direction(); }
  [[nodiscard]] bool can_fuse(backend::Side side) const override { return side == source_->direction(); }
  backend::FusedSums fused_pass(backend::Side side, const backend::UpdateRule& rule, backend::View<T> x,
                                backend::CView<T> y, backend::CView<T> gy, const T* y_row_sums,
                                backend::View<T> other_numer, backend::View<T> gx) override;
  [[nodiscard]] backend::OperandStats operand_stats() const override;
  /// Tile by tile (one pass); the slots are host memory.
  bool visit_host(const typename backend::Operand<T>::HostPieceVisitor& visit) override;

  /// Asked before each tile of every pass from now on (dnmf::Cancelled when it returns true). Only where the
  /// whole job is this process: on a grid the ranks stop together, between iterations.
  void set_cancel(PassCancel cancel) { cancel_ = std::move(cancel); }
  /// Entries != 0 of the block, counted during the last stats() pass (-1 before one ran).
  [[nodiscard]] index_t nonzeros() const { return nonzeros_; }
  [[nodiscard]] const TileSource<T>& source() const { return *source_; }
  [[nodiscard]] std::size_t tile_count() const { return extents_.size(); }
  [[nodiscard]] int depth() const { return depth_; }
  /// Memory of one slot (sized for the largest tile) and of the whole ring.
  [[nodiscard]] std::size_t slot_bytes() const { return slot_bytes_; }
  [[nodiscard]] std::size_t ring_bytes() const { return slot_bytes_ * to_size(depth_); }

 private:
  /// One pass: body(tile) for every tile in order. A pass abandoned by an exception restarts the ring, so the
  /// next pass begins at tile 0 again.
  template <class Body>
  void pass(Body&& body);
  /// out = beta·out for a pass with no tiles (an empty block).
  void scale_empty(backend::View<T> out, T beta);

  backend::Kernels<T>& kernels_;
  std::unique_ptr<TileSource<T>> source_;
  std::vector<TileExtent> extents_;
  std::vector<char> validated_;  // per tile; touched by the producer only
  int depth_ = 2;
  std::size_t slot_bytes_ = 0;
  long long passes_ = 0;
  PassCancel cancel_;
  index_t nonzeros_ = -1;
  std::atomic<std::uint64_t> bytes_read_{0};
  std::unique_ptr<Ring<Tile<T>>> ring_;  // last: its producer uses the members above
};

}  // namespace dnmf::stream
