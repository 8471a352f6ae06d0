#include "stream/masked_tiles.hpp"

#include <algorithm>
#include <utility>

#include "dnmf/index.hpp"
#include "stream/ring_pass.hpp"

namespace dnmf::stream {
namespace {

std::string stripes(backend::Side side) { return side == backend::Side::H ? "column" : "row"; }

}  // namespace

template <class T>
MaskedTiles<T>::MaskedTiles(std::unique_ptr<TileSource<T>> a, std::unique_ptr<TileSource<T>> mask,
                            std::size_t pair_bytes, int depth)
    : a_(std::move(a)), mask_(std::move(mask)), depth_(depth) {
  if (depth < 2) throw Error("internal: a streaming ring needs depth >= 2, got " + std::to_string(depth));
  if (mask_) {
    // Both are cut by the same rule, so their stripes match exactly when they are cut the same way.
    if (mask_->sparse() || a_->sparse())
      throw UsageError(mask_->name() + ": a streamed mask must be a dense .npy beside a dense .npy A (a sparse A " +
                       "streams with --unstored missing and no mask)");
    if (mask_->direction() != a_->direction())
      throw UsageError(mask_->name() + ": streamed in " + stripes(mask_->direction()) + " stripes but " + a_->name() +
                       " in " + stripes(a_->direction()) +
                       " stripes; save the mask in A's order (both Fortran or both C order: numpy.asfortranarray or "
                       "numpy.ascontiguousarray)");
    if (mask_->rows() != a_->rows() || mask_->cols() != a_->cols())
      throw DataError(mask_->name() + ": the mask's block is " + std::to_string(mask_->rows()) + "x" +
                      std::to_string(mask_->cols()) + " but A's is " + std::to_string(a_->rows()) + "x" +
                      std::to_string(a_->cols()));
  }
  // A dense pair splits the slot in equal halves (same shape, same scalar); A alone takes all of it.
  const std::size_t each = mask_ ? pair_bytes / 2 : pair_bytes;
  extents_ = a_->partition(each);
  std::vector<TileExtent> mask_extents;
  if (mask_) {
    mask_extents = mask_->partition(each);
    const bool same =
        mask_extents.size() == extents_.size() &&
        std::equal(extents_.begin(), extents_.end(), mask_extents.begin(), [](const auto& x, const auto& y) {
          return x.range.first == y.range.first && x.range.last == y.range.last;
        });
    if (!same) throw Error("internal: the mask's tiles do not match A's");
  }
  if (extents_.empty()) return;
  structure_checked_.assign(extents_.size(), 0);
  std::vector<TilePair<T>> slots;
  for (int d = 0; d < depth; ++d) {
    TilePair<T> pair;
    pair.a = make_tile_slot(*a_, extents_, host_allocator());
    if (mask_) pair.w = make_tile_slot(*mask_, mask_extents, host_allocator());
    slots.push_back(std::move(pair));
  }
  // Entries are checked by the solver's first pass, which knows which ones are observed (a missing entry may
  // hold anything) and words a bad weight as a weight.
  ring_ =
      std::make_unique<Ring<TilePair<T>>>(std::move(slots), extents_.size(), [this](std::size_t t, TilePair<T>& pair) {
        // A's structure on each tile's first read (a CSR row's duplicate column would count twice), its values
        // never here.
        if (structure_checked_[t] == 0) {
          a_->read_structure_checked(extents_[t], pair.a);
          structure_checked_[t] = 1;
        } else {
          a_->read(extents_[t], pair.a, false);
        }
        pair.a.index = t;
        std::uint64_t bytes = pair.a.bytes_read;
        if (mask_) {
          mask_->read(extents_[t], pair.w, false);
          pair.w.index = t;
          bytes += pair.w.bytes_read;
        }
        bytes_read_ += bytes;
      });
}

template <class T>
MaskedTiles<T>::~MaskedTiles() {
  ring_.reset();  // stop the producer before the sources and extents it reads go
}

template <class T>
backend::OperandStats MaskedTiles<T>::stats() const {
  return ring_operand_stats(ring_.get(), passes_, bytes_read_.load());
}

template class MaskedTiles<float>;
template class MaskedTiles<double>;

}  // namespace dnmf::stream
