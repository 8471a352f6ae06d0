// The generic single pass of DESIGN §3: tile by tile, numerator, update, and the other side's
// accumulation, all through the backend's own kernels. Backends with their own parallel schedule
// (cpu) override Kernels::fused_pass; the streaming ring reuses the same per-tile sequence.
#include "backend/kernels.hpp"
#include "backend/tiles.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend {

template <class T>
FusedSums Kernels<T>::fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y,
                                 CView<T> gy, const T* y_row_sums, View<T> other_numer, View<T> gx, bool accumulate) {
  FusedSums sums;
  const bool kl = rule.algorithm == Algorithm::kl;
  if (!kl) sums.cross_before = 0;
  const index_t k = x.rows;
  // About 4 MiB of A per tile: the tile is touched twice in a row and should still be in cache.
  const auto bounds = tile_bounds(a, side, 4.0 * 1024 * 1024 / sizeof(T));
  index_t widest = 0;
  for (std::size_t t = 1; t < bounds.size(); ++t) widest = std::max(widest, bounds[t] - bounds[t - 1]);
  T* numer_buffer = allocate(to_size(std::max<index_t>(k * widest, 1)));
  try {
    if (!accumulate) {
      fill(other_numer, T(0));
      fill(gx, T(0));
    }
    for (std::size_t t = 1; t < bounds.size(); ++t) {
      const index_t first = bounds[t - 1];
      const index_t last = bounds[t];
      const MatrixRef<T> tile = tile_of(a, side, first, last);
      View<T> x_tile = x.columns(first, last);
      View<T> numer{numer_buffer, k, last - first, std::max<index_t>(k, 1)};
      if (kl) {
        sums.kl_numer += kl_multiply(tile, side, y, x_tile, numer, T(0));
      } else {
        multiply(tile, side, y, numer, T(0));
      }
      if (!kl) sums.cross_before += dot(x_tile, numer);
      sums.nnls_cap_hits += update(rule, x_tile, numer, gy, y_row_sums);
      sums.cross += dot(x_tile, numer);
      if (kl) {
        sums.kl_accum += kl_multiply(tile, other(side), x_tile, y, other_numer, T(1));
      } else {
        multiply(tile, other(side), x_tile, other_numer, T(1));
      }
      gram(x_tile, gx, T(1));
    }
  } catch (...) {
    deallocate(numer_buffer);
    throw;
  }
  deallocate(numer_buffer);
  return sums;
}

template class Kernels<float>;
template class Kernels<double>;

}  // namespace dnmf::backend
