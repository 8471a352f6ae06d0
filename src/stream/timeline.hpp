// What one streamed pass did on the device, tile by tile: when each tile's host-to-device copy and its compute
// began and ended (CUDA events, read back after the pass), and the overlap summary derived from them. Plain
// C++, so the summary is computed and tested without a GPU.
#pragma once

#include <cstddef>
#include <vector>

namespace dnmf::stream {

/// One tile's intervals, in seconds from the start of its pass.
struct TileTimes {
  double copy_start = 0;
  double copy_end = 0;
  double compute_start = 0;
  double compute_end = 0;
};

/// The tiles of one pass in the order they were issued, and the bytes copied.
struct Timeline {
  std::vector<TileTimes> tiles;
  double bytes_copied = 0;
};

/// How well one pass kept the copy engine and the compute stream busy at once.
struct OverlapSummary {
  std::size_t tiles = 0;
  double wall = 0;          ///< first copy start to last compute end
  double copy_busy = 0;     ///< time at least one copy was in flight (union of copy intervals)
  double compute_busy = 0;  ///< time the compute stream was working on a tile (union of compute intervals)
  double overlapped = 0;    ///< time a copy and a compute were both in flight
  /// overlapped / min(copy_busy, compute_busy): 1 when the shorter activity was hidden entirely under the
  /// other, 0 when they ran one after the other. 0 for fewer than two tiles.
  double overlap_fraction = 0;
  /// copy_busy / wall: 1 when the bus never idled (a bandwidth-bound pass can do no better).
  double copy_utilisation = 0;
  double copy_bandwidth = 0;  ///< bytes_copied / copy_busy (bytes per second)
};

/// Summarises a timeline (intervals may come in any order and may be empty).
[[nodiscard]] OverlapSummary summarise(const Timeline& timeline);

}  // namespace dnmf::stream
