// What the host-side streamed operands (StreamedOperand: A alone; MaskedTiles: A with its mask) share around
// their prefetch ring: the slot buffers, one pass over the tiles in order, and the ring's figures.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/operand.hpp"
#include "dnmf/error.hpp"
#include "stream/buffer.hpp"
#include "stream/ring.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::stream {

/// A slot's buffers from `allocator`, sized for the largest of `extents` (values only where the source fills
/// slots rather than lending mapped tiles; indptr and indices for a CSR source).
template <class T>
Tile<T> make_tile_slot(const TileSource<T>& source, const std::vector<TileExtent>& extents,
                       const BufferAllocator& allocator) {
  const auto [entries, lines] = largest_tile(extents);
  Tile<T> tile;
  if (source.fills_slots()) tile.values = Buffer<T>(allocator, to_size(std::max<index_t>(entries, 1)));
  if (source.sparse()) {
    tile.indptr = Buffer<index_t>(allocator, to_size(lines + 1));
    tile.indices = Buffer<col_index_t>(allocator, to_size(std::max<index_t>(entries, 1)));
  }
  return tile;
}

/// Asked before each tile of a pass whether to stop (FactorOptions::cancel on one process); empty: never.
using PassCancel = std::function<bool()>;

/// One pass over `ring`'s `tiles` slots in order: body(slot) for each, index_of(slot) checked against its place,
/// then intact() (the sources did not change under the pass) before the pass counts in `passes`. A pass
/// abandoned by an exception restarts the ring, so the next one begins at tile 0 again. With no tiles the pass
/// counts and does nothing. `cancel` is asked before each tile: a pass over a large file takes minutes, and an
/// interrupt should not wait for its end (dnmf::Cancelled naming `name` and the tile).
template <class Slot, class IndexOf, class Body, class Intact>
void ring_pass(Ring<Slot>* ring, std::size_t tiles, long long& passes, IndexOf&& index_of, Body&& body, Intact&& intact,
               const PassCancel& cancel = {}, const std::string& name = {}) {
  if (tiles == 0) {
    ++passes;
    return;
  }
  try {
    for (std::size_t t = 0; t < tiles; ++t) {
      if (cancel && cancel())
        throw Cancelled("cancelled while streaming " + name + " (tile " + std::to_string(t + 1) + " of " +
                        std::to_string(tiles) + ")");
      const Slot& slot = ring->acquire();
      const std::size_t index = index_of(slot);
      if (index != t) throw Error("internal: tile " + std::to_string(index) + " arrived as tile " + std::to_string(t));
      body(slot);
      ring->release();
    }
    intact();
  } catch (...) {
    ring->restart();
    throw;
  }
  ++passes;
}

/// The operand's figures: passes, bytes brought in and, where a ring ran, its tiles and times.
template <class Slot>
backend::OperandStats ring_operand_stats(const Ring<Slot>* ring, long long passes, std::uint64_t bytes_read) {
  backend::OperandStats s;
  s.passes = passes;
  s.bytes_read = static_cast<double>(bytes_read);
  if (ring != nullptr) {
    const RingStats r = ring->stats();
    s.tiles = r.tiles_delivered;
    s.seconds_waiting = r.seconds_waiting;
    s.seconds_reading = r.seconds_filling;
  }
  return s;
}

}  // namespace dnmf::stream
