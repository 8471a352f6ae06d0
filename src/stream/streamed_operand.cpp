#include "stream/streamed_operand.hpp"

#include <algorithm>
#include <utility>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/ring_pass.hpp"

namespace dnmf::stream {

using backend::CView;
using backend::Side;
using backend::View;

template <class T>
StreamedOperand<T>::StreamedOperand(backend::Kernels<T>& kernels, std::unique_ptr<TileSource<T>> source,
                                    std::size_t tile_bytes, int depth, const BufferAllocator& allocator)
    : kernels_(kernels), source_(std::move(source)), depth_(depth) {
  if (depth < 2) throw Error("internal: a streaming ring needs depth >= 2, got " + std::to_string(depth));
  if (!kernels.host_memory() || !allocator.host_visible)
    throw Error("streaming into the " + kernels.name() + " backend is not available yet (tiles are host memory)");
  extents_ = source_->partition(tile_bytes);
  validated_.assign(extents_.size(), 0);
  if (extents_.empty()) return;
  std::vector<Tile<T>> slots;
  slots.reserve(to_size(depth));
  for (int d = 0; d < depth; ++d) slots.push_back(make_tile_slot(*source_, extents_, allocator));
  // A lending source maps its tiles instead: they count like slots.
  const Tile<T>& slot = slots.front();
  slot_bytes_ = source_->fills_slots() ? slot.values.bytes() + slot.indptr.bytes() + slot.indices.bytes()
                                       : to_size(largest_tile(extents_).entries) * sizeof(T);
  ring_ = std::make_unique<Ring<Tile<T>>>(std::move(slots), extents_.size(), [this](std::size_t t, Tile<T>& tile) {
    const bool validate = validated_[t] == 0;
    source_->read(extents_[t], tile, validate);
    tile.index = t;
    validated_[t] = 1;
    bytes_read_ += tile.bytes_read;
  });
}

template <class T>
StreamedOperand<T>::~StreamedOperand() {
  ring_.reset();  // stop the producer before the source and extents it reads go
}

template <class T>
template <class Body>
void StreamedOperand<T>::pass(Body&& body) {
  ring_pass(
      ring_.get(), extents_.size(), passes_, [](const Tile<T>& tile) { return tile.index; }, body,
      [this] { source_->check_intact(); },  // before the pass's sums are used
      cancel_, source_->name());
}

template <class T>
void StreamedOperand<T>::scale_empty(View<T> out, T beta) {
  if (beta == T(1)) return;
  if (beta != T(0)) throw Error("internal: streamed product of an empty block with beta other than 0 or 1");
  kernels_.fill(out, T(0));
}

template <class T>
backend::MatrixStats StreamedOperand<T>::stats() {
  backend::MatrixStats total;
  index_t nonzeros = 0;
  pass([&](const Tile<T>& tile) {
    const backend::MatrixStats s = kernels_.stats(tile.ref());
    total.sum += s.sum;
    total.squared_norm += s.squared_norm;
    // The report's nnz, which a resident run counts on the loaded block: here the only pass that can.
    const MatrixRef<T> ref = tile.ref();
    if (const auto* d = std::get_if<DenseView<const T>>(&ref)) {
      for (index_t j = 0; j < d->cols; ++j)
        for (index_t i = 0; i < d->rows; ++i) nonzeros += (*d)(i, j) != T(0) ? 1 : 0;
    } else {
      const auto& c = std::get<CsrView<T>>(ref);
      for (index_t p = 0; p < c.nnz(); ++p) nonzeros += c.values[c.indptr[0] + p] != T(0) ? 1 : 0;
    }
  });
  nonzeros_ = nonzeros;
  return total;
}

template <class T>
void StreamedOperand<T>::multiply(Side side, CView<T> y, View<T> out, T beta) {
  // A tile covers `range` along the stripe direction: on that side it owns out's columns there; on the other
  // side every tile adds into all of out (y's columns in `range`).
  const bool owns = side == source_->direction();
  if (!owns && extents_.empty()) return scale_empty(out, beta);
  bool first = true;
  pass([&](const Tile<T>& tile) {
    const dist::Range r = tile.range;
    if (owns) {
      kernels_.multiply(tile.ref(), side, y, out.columns(r.first, r.last), beta);
    } else {
      kernels_.multiply(tile.ref(), side, y.columns(r.first, r.last), out, first ? beta : T(1));
    }
    first = false;
  });
}

template <class T>
backend::KlSums StreamedOperand<T>::kl_multiply(Side side, CView<T> y, CView<T> x, View<T> out, T beta) {
  const bool owns = side == source_->direction();
  backend::KlSums sums;
  if (!owns && extents_.empty()) {
    scale_empty(out, beta);
    return sums;
  }
  bool first = true;
  pass([&](const Tile<T>& tile) {
    const dist::Range r = tile.range;
    if (owns) {
      sums += kernels_.kl_multiply(tile.ref(), side, y, x.columns(r.first, r.last), out.columns(r.first, r.last), beta);
    } else {
      sums += kernels_.kl_multiply(tile.ref(), side, y.columns(r.first, r.last), x, out, first ? beta : T(1));
    }
    first = false;
  });
  return sums;
}

template <class T>
backend::FusedSums StreamedOperand<T>::fused_pass(Side side, const backend::UpdateRule& rule, View<T> x, CView<T> y,
                                                  CView<T> gy, const T* y_row_sums, View<T> other_numer, View<T> gx) {
  if (side != source_->direction())
    throw Error("internal: a streamed block in " + std::string(side == Side::H ? "row" : "column") +
                " stripes cannot run the single pass for this side");
  kernels_.fill(other_numer, T(0));
  kernels_.fill(gx, T(0));
  backend::FusedSums total;
  total.cross_before = 0;
  pass([&](const Tile<T>& tile) {
    const dist::Range r = tile.range;
    const backend::FusedSums s = kernels_.fused_pass(tile.ref(), side, rule, x.columns(r.first, r.last), y, gy,
                                                     y_row_sums, other_numer, gx, true);
    total.cross += s.cross;
    total.cross_before += s.cross_before;
    total.kl_numer += s.kl_numer;
    total.kl_accum += s.kl_accum;
    total.nnls_cap_hits += s.nnls_cap_hits;
  });
  return total;
}

template <class T>
bool StreamedOperand<T>::visit_host(const typename backend::Operand<T>::HostPieceVisitor& visit) {
  const bool columns = source_->direction() == Side::H;  // column stripes: a tile is all rows of its columns
  pass([&](const Tile<T>& tile) {
    const MatrixRef<T> ref = tile.ref();
    visit(ref, columns ? 0 : tile.range.first, columns ? tile.range.first : 0, false);
  });
  return true;
}

template <class T>
backend::OperandStats StreamedOperand<T>::operand_stats() const {
  return ring_operand_stats(ring_.get(), passes_, bytes_read_.load());
}

template class StreamedOperand<float>;
template class StreamedOperand<double>;

}  // namespace dnmf::stream
