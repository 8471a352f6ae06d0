#include "stream/device_streamed_operand.hpp"

#include <algorithm>
#include <utility>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/memory_source.hpp"

namespace dnmf::stream {

using backend::CView;
using backend::FusedSums;
using backend::KlSums;
using backend::MatrixStats;
using backend::Side;
using backend::UpdateRule;
using backend::View;

template <class T>
DeviceStreamedOperand<T>::DeviceStreamedOperand(std::unique_ptr<TileEngine<T>> engine, DenseView<const T> host,
                                                Side direction, std::size_t tile_bytes, int depth)
    : engine_(std::move(engine)), kernels_(engine_->kernels()), host_(host), direct_(true), depth_(depth) {
  source_ = std::make_unique<MemorySource<T>>(MatrixRef<T>{host}, direction);
  if (host.rows > 0 && host.cols > 0) {
    const std::size_t span = to_size((host.cols - 1) * host.ld + host.rows) * sizeof(T);
    host_pinned_ = engine_->pin(host.data, span);
  }
  setup(tile_bytes, 0);
}

template <class T>
DeviceStreamedOperand<T>::DeviceStreamedOperand(std::unique_ptr<TileEngine<T>> engine,
                                                std::unique_ptr<TileSource<T>> source, std::size_t tile_bytes,
                                                int depth, int host_depth)
    : engine_(std::move(engine)), kernels_(engine_->kernels()), source_(std::move(source)), depth_(depth) {
  if (source_->sparse())
    throw Error(source_->name() + ": CSR blocks cannot stream through the device yet (dense .npy files can)");
  if (host_depth < 2)
    throw Error("internal: the host ring feeding the device needs depth >= 2, got " + std::to_string(host_depth));
  host_pinned_ = engine_->pins_host();
  setup(tile_bytes, host_depth);
}

template <class T>
void DeviceStreamedOperand<T>::setup(std::size_t tile_bytes, int host_depth) {
  if (depth_ < 2) throw Error("internal: a device tile ring needs depth >= 2, got " + std::to_string(depth_));
  extents_ = source_->partition(tile_bytes);
  validated_.assign(extents_.size(), 0);
  index_t entries = 0;
  for (const TileExtent& e : extents_) {
    entries = std::max(entries, e.entries);
    widest_ = std::max(widest_, e.range.size());
  }
  slot_elements_ = to_size(std::max<index_t>(entries, 1));
  engine_->configure(depth_, slot_elements_, extents_.size(), 3 * extents_.size(), host_depth);
  if (direct_ || extents_.empty()) return;
  std::vector<HostSlot> slots;
  const BufferAllocator allocator = engine_->host_allocator();
  for (int d = 0; d < host_depth; ++d) {
    HostSlot slot;
    slot.id = d;
    slot.tile.values = Buffer<T>(allocator, slot_elements_);
    slots.push_back(std::move(slot));
  }
  ring_ = std::make_unique<Ring<HostSlot>>(std::move(slots), extents_.size(), [this](std::size_t t, HostSlot& slot) {
    engine_->wait_host_read(slot.id);  // the last copy from it
    const bool validate = validated_[t] == 0;
    source_->read(extents_[t], slot.tile, validate);
    slot.tile.index = t;
    validated_[t] = 1;
    bytes_read_ += slot.tile.bytes_read;
  });
}

template <class T>
DeviceStreamedOperand<T>::~DeviceStreamedOperand() {
  try {
    engine_->synchronize();  // no copy may still read a host buffer, nor a kernel the numerator
  } catch (...) {            // a failed device cannot be waited for; the buffers go regardless
  }
  ring_.reset();  // stop the producer before the source and extents it reads go
  kernels_.deallocate(numer_);
}

template <class T>
template <class Body>
void DeviceStreamedOperand<T>::pass(Body&& body) {
  if (extents_.empty()) {
    ++passes_;
    return;
  }
  const bool by_columns = source_->direction() == Side::H;
  try {
    for (std::size_t t = 0; t < extents_.size(); ++t) {
      const TileExtent& e = extents_[t];
      const index_t r = by_columns ? rows() : e.range.size();
      const index_t c = by_columns ? e.range.size() : cols();
      const int s = static_cast<int>(sequence_++ % to_size(depth_));
      if (direct_) {
        const T* first = host_.data + (by_columns ? e.range.first * host_.ld : e.range.first);
        engine_->copy_in(s, t, first, r, c, host_.ld);
      } else {
        HostSlot& h = ring_->acquire();
        if (h.tile.index != t || h.tile.rows != r || h.tile.cols != c)
          throw Error("internal: host tile " + std::to_string(h.tile.index) + " arrived as tile " + std::to_string(t));
        const T* data = h.tile.lent != nullptr ? h.tile.lent : h.tile.values.data();  // a mapped file's tile
        engine_->copy_in(s, t, data, r, c, std::max<index_t>(r, 1));
        engine_->mark_host_read(h.id);  // the producer refills it once this copy is done
        ring_->release();
      }
      bytes_copied_ += static_cast<double>(r) * static_cast<double>(c) * sizeof(T);
      engine_->compute_begin(s, t);
      body(DenseView<const T>{engine_->slot(s), r, c, std::max<index_t>(r, 1)}, e, t);
      engine_->compute_end(s, t);
      ++tiles_;
    }
    if (!direct_) source_->check_intact();  // a mapped file that shrank: the pass read zeros
  } catch (...) {
    // Work queued on a buffer whose end was never marked must finish before the buffer is refilled.
    try {
      engine_->synchronize();
    } catch (...) {
    }
    if (ring_) ring_->restart();
    throw;
  }
  ++passes_;
}

template <class T>
void DeviceStreamedOperand<T>::scale_empty(View<T> out, T beta) {
  if (beta == T(1)) return;
  if (beta != T(0)) throw Error("internal: streamed product of an empty block with beta other than 0 or 1");
  kernels_.fill(out, T(0));
}

template <class T>
View<T> DeviceStreamedOperand<T>::numerator(index_t k, index_t lines) {
  const auto need = to_size(std::max<index_t>(k * widest_, 1));
  if (need > numer_capacity_) {
    kernels_.deallocate(numer_);  // waits for the device: only when k grows
    numer_ = nullptr;
    numer_ = kernels_.allocate(need);
    numer_capacity_ = need;
  }
  return {numer_, k, lines, std::max<index_t>(k, 1)};
}

template <class T>
MatrixStats DeviceStreamedOperand<T>::stats() {
  pass([&](CView<T> tile, const TileExtent&, std::size_t t) { engine_->stats(tile, t); });
  MatrixStats total;
  for (const SumPair& s : engine_->finish(extents_.size())) {
    total.sum += s[0];
    total.squared_norm += s[1];
  }
  return total;
}

template <class T>
void DeviceStreamedOperand<T>::multiply(Side side, CView<T> y, View<T> out, T beta) {
  // On the stripe side a tile owns out's columns in its range; on the other side every tile adds into all of
  // out (y's columns in the range).
  const bool owns = side == source_->direction();
  if (!owns && extents_.empty()) return scale_empty(out, beta);
  bool first = true;
  pass([&](CView<T> tile, const TileExtent& e, std::size_t) {
    const dist::Range r = e.range;
    if (owns) {
      kernels_.multiply(tile, side, y, out.columns(r.first, r.last), beta);
    } else {
      kernels_.multiply(tile, side, y.columns(r.first, r.last), out, first ? beta : T(1));
    }
    first = false;
  });
}

template <class T>
KlSums DeviceStreamedOperand<T>::kl_multiply(Side side, CView<T> y, CView<T> x, View<T> out, T beta) {
  const bool owns = side == source_->direction();
  KlSums sums;
  if (!owns && extents_.empty()) {
    scale_empty(out, beta);
    return sums;
  }
  bool first = true;
  pass([&](CView<T> tile, const TileExtent& e, std::size_t t) {
    const dist::Range r = e.range;
    if (owns) {
      engine_->kl_multiply(tile, side, y, x.columns(r.first, r.last), out.columns(r.first, r.last), beta, t);
    } else {
      engine_->kl_multiply(tile, side, y.columns(r.first, r.last), x, out, first ? beta : T(1), t);
    }
    first = false;
  });
  for (const SumPair& s : engine_->finish(extents_.size())) sums += KlSums{s[0], s[1]};
  return sums;
}

template <class T>
FusedSums DeviceStreamedOperand<T>::fused_pass(Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy,
                                               const T* y_row_sums, View<T> other_numer, View<T> gx) {
  if (side != source_->direction())
    throw Error("internal: a device-streamed block in " + std::string(side == Side::H ? "row" : "column") +
                " stripes cannot run the single pass for this side");
  const bool kl = rule.algorithm == Algorithm::kl;
  const index_t k = x.rows;
  kernels_.fill(other_numer, T(0));
  kernels_.fill(gx, T(0));
  FusedSums total;
  // Per tile, the generic pass of fused_pass.cpp with its three sums (KL numerator, cross, KL accumulation)
  // left on the device in pairs 3t, 3t+1, 3t+2; only bpp's host-side update waits inside the loop.
  pass([&](CView<T> tile, const TileExtent& e, std::size_t t) {
    const View<T> x_tile = x.columns(e.range.first, e.range.last);
    const View<T> numer = numerator(k, e.range.size());
    if (kl) {
      engine_->kl_multiply(tile, side, y, x_tile, numer, T(0), 3 * t);
    } else {
      kernels_.multiply(tile, side, y, numer, T(0));
    }
    total.nnls_cap_hits += kernels_.update(rule, x_tile, numer, gy, y_row_sums);
    engine_->dot(x_tile, numer, 3 * t + 1);
    if (kl) {
      engine_->kl_multiply(tile, other(side), x_tile, y, other_numer, T(1), 3 * t + 2);
    } else {
      kernels_.multiply(tile, other(side), x_tile, other_numer, T(1));
    }
    kernels_.gram(x_tile, gx, T(1));
  });
  const std::vector<SumPair> sums = engine_->finish(3 * extents_.size());
  for (std::size_t t = 0; t < extents_.size(); ++t) {
    total.cross += sums[3 * t + 1][0];
    if (kl) {
      total.kl_numer += KlSums{sums[3 * t][0], sums[3 * t][1]};
      total.kl_accum += KlSums{sums[3 * t + 2][0], sums[3 * t + 2][1]};
    }
  }
  return total;
}

template <class T>
backend::OperandStats DeviceStreamedOperand<T>::operand_stats() const {
  backend::OperandStats s;
  s.passes = passes_;
  s.tiles = tiles_;
  s.bytes_read = bytes_copied_;
  if (ring_) {
    const RingStats r = ring_->stats();
    s.seconds_waiting = r.seconds_waiting;
    s.seconds_reading = r.seconds_filling;
  }
  return s;
}

template <class T>
Timeline DeviceStreamedOperand<T>::timeline() {
  Timeline t = engine_->timeline(extents_.size());
  if (t.tiles.empty()) return t;
  const bool by_columns = source_->direction() == Side::H;
  for (const TileExtent& e : extents_)
    t.bytes_copied +=
        static_cast<double>(e.range.size()) * static_cast<double>(by_columns ? rows() : cols()) * sizeof(T);
  return t;
}

template class DeviceStreamedOperand<float>;
template class DeviceStreamedOperand<double>;

}  // namespace dnmf::stream
