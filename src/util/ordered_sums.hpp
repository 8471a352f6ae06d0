// Sums whose bits do not depend on the thread count: an OpenMP reduction adds the threads' partial sums in an
// order that follows the team's size, so a figure users compare between runs (rel_error, the objective, A's
// statistics) changed in its last bits with --threads.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include "dnmf/index.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::util {

/// Σ over items [0, count) of what add(item, acc) adds into its N running sums, in kBlocks blocks of consecutive
/// items (a cut that depends on count only) whose sums are added in block order; the blocks are spread over the
/// team when `parallel`.
template <std::size_t N, class Add>
std::array<double, N> ordered_sums(index_t count, bool parallel, Add add) {
  constexpr index_t kBlocks = 64;
  const index_t per_block = std::max<index_t>((count + kBlocks - 1) / kBlocks, 1);
  const index_t blocks = (count + per_block - 1) / per_block;
  std::vector<std::array<double, N>> partial(static_cast<std::size_t>(std::max<index_t>(blocks, 0)),
                                             std::array<double, N>{});
  for_each_index(blocks, parallel && blocks > 1, [&](index_t b) {
    // A local sum, stored once: added into partial[b] directly, every addition was a load and a store (the
    // compiler cannot tell that the items' values never alias it), a chain through memory per item.
    std::array<double, N> acc{};
    for (index_t i = b * per_block; i < std::min(count, (b + 1) * per_block); ++i) add(i, acc);
    partial[static_cast<std::size_t>(b)] = acc;
  });
  std::array<double, N> total{};
  for (const auto& p : partial)
    for (std::size_t q = 0; q < N; ++q) total[q] += p[q];
  return total;
}

}  // namespace dnmf::util
