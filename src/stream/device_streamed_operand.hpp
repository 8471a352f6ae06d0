// A dense block of A larger than the device budget, streamed through the device (DESIGN §5, host -> device
// level). The block lives in host memory, either already (registered in place) or read from a file through a
// ring of pinned host tiles (disk -> pinned host -> device); D device tile buffers take it tile by tile. The
// copy of tile t+1 runs while tile t is computed on; events order them (TileEngine); nothing in the tile loop
// waits on the host, and the sums the pass returns are fetched once at its end. Each tile runs the fused
// single pass of DESIGN §3, so A crosses the bus once per iteration.
//
// Plain C++: the device work goes through a TileEngine (CUDA, or a host engine in tests).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backend/operand.hpp"
#include "dnmf/index.hpp"
#include "stream/ring.hpp"
#include "stream/tile_engine.hpp"
#include "stream/tile_source.hpp"
#include "stream/timeline.hpp"

namespace dnmf::stream {

template <class T>
class DeviceStreamedOperand final : public backend::Operand<T> {
 public:
  /// A dense block already in host memory (column-major, any ld; it must outlive the operand), in stripes
  /// along `direction` (Side::H: column stripes, the efficient copy for column-major memory), tiles of at most
  /// `tile_bytes` through `depth` >= 2 device buffers. The engine pins the block in place where it can.
  DeviceStreamedOperand(std::unique_ptr<TileEngine<T>> engine, DenseView<const T> host, backend::Side direction,
                        std::size_t tile_bytes, int depth);
  /// A dense block read from `source` (a file): a producer thread reads tiles into `host_depth` >= 2 host
  /// buffers from the engine's host allocator (pinned), the device copies from them. Throws dnmf::Error for a
  /// CSR source (not streamed through the device yet) and when one line of the block exceeds a tile.
  DeviceStreamedOperand(std::unique_ptr<TileEngine<T>> engine, std::unique_ptr<TileSource<T>> source,
                        std::size_t tile_bytes, int depth, int host_depth);
  ~DeviceStreamedOperand() override;
  DeviceStreamedOperand(const DeviceStreamedOperand&) = delete;
  DeviceStreamedOperand& operator=(const DeviceStreamedOperand&) = delete;

  [[nodiscard]] index_t rows() const override { return source_->rows(); }
  [[nodiscard]] index_t cols() const override { return source_->cols(); }
  [[nodiscard]] bool sparse() const override { return false; }
  [[nodiscard]] std::string mode() const override { return "streamed"; }
  [[nodiscard]] const MatrixRef<T>* resident() const override { return nullptr; }

  [[nodiscard]] backend::MatrixStats stats() override;
  void multiply(backend::Side side, backend::CView<T> y, backend::View<T> out, T beta) override;
  backend::KlSums kl_multiply(backend::Side side, backend::CView<T> y, backend::CView<T> x, backend::View<T> out,
                              T beta) override;
  [[nodiscard]] backend::Side fused_side() const override { return source_->direction(); }
  [[nodiscard]] bool can_fuse(backend::Side side) const override { return side == source_->direction(); }
  backend::FusedSums fused_pass(backend::Side side, const backend::UpdateRule& rule, backend::View<T> x,
                                backend::CView<T> y, backend::CView<T> gy, const T* y_row_sums,
                                backend::View<T> other_numer, backend::View<T> gx) override;
  [[nodiscard]] backend::OperandStats operand_stats() const override;

  /// Per-tile events from the next pass on (see timeline()).
  void set_timeline(bool on) { engine_->set_timeline(on); }
  /// Copy and compute intervals of the last pass, tile by tile (empty unless set_timeline(true)).
  [[nodiscard]] Timeline timeline();

  [[nodiscard]] std::size_t tile_count() const { return extents_.size(); }
  [[nodiscard]] int depth() const { return depth_; }
  /// Device bytes of one tile buffer (sized for the largest tile), and of all of them.
  [[nodiscard]] std::size_t slot_bytes() const { return slot_elements_ * sizeof(T); }
  [[nodiscard]] std::size_t ring_bytes() const { return slot_bytes() * to_size(depth_); }
  /// Whether the host memory copies read from is pinned (registered block or pinned ring).
  [[nodiscard]] bool host_pinned() const { return host_pinned_; }
  /// "memory" (a registered host block) or the file source's kind ("npy").
  [[nodiscard]] std::string source_kind() const { return direct_ ? "memory" : source_->kind(); }

 private:
  /// A host ring slot: a tile read from the file, and its number for the engine's read-done events.
  struct HostSlot {
    Tile<T> tile;
    int id = 0;
  };

  void setup(std::size_t tile_bytes, int host_depth);
  /// One pass: body(device tile, extent, t) for every tile in order, each between its copy and the next
  /// copy into the same device buffer.
  template <class Body>
  void pass(Body&& body);
  void scale_empty(backend::View<T> out, T beta);
  /// The k x lines numerator buffer of the fused pass (device memory, grown on demand).
  backend::View<T> numerator(index_t k, index_t lines);

  std::unique_ptr<TileEngine<T>> engine_;
  backend::Kernels<T>& kernels_;
  std::unique_ptr<TileSource<T>> source_;  // the file, or a MemorySource over the host block (shape)
  DenseView<const T> host_;                // the host block when direct_
  bool direct_ = false;
  bool host_pinned_ = false;
  std::vector<TileExtent> extents_;
  std::vector<char> validated_;  // per tile; touched by the producer only
  int depth_ = 2;
  std::size_t slot_elements_ = 0;
  index_t widest_ = 0;        // lines of the widest tile
  std::size_t sequence_ = 0;  // tiles issued since construction: the device buffer of the next tile
  long long passes_ = 0;
  long long tiles_ = 0;
  double bytes_copied_ = 0;
  T* numer_ = nullptr;
  std::size_t numer_capacity_ = 0;
  std::atomic<std::uint64_t> bytes_read_{0};
  std::unique_ptr<Ring<HostSlot>> ring_;  // last: its producer uses the members above
};

}  // namespace dnmf::stream
