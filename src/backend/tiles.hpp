// Tiles of A along a side: column ranges (Side::H) or row ranges (Side::W).
#pragma once

#include <algorithm>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"

namespace dnmf::backend {

/// The part of A that the factor columns [first, last) of `side` touch.
template <class T>
MatrixRef<T> tile_of(const MatrixRef<T>& a, Side side, index_t first, index_t last) {
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    return side == Side::H ? MatrixRef<T>{d->columns(first, last)} : MatrixRef<T>{d->row_range(first, last)};
  }
  const auto& s = std::get<CsrView<T>>(a);
  if (side == Side::H) throw Error("internal: CSR matrices are tiled by rows only");
  return s.row_range(first, last);
}

/// Extent of A along a side: its columns (Side::H) or rows (Side::W).
template <class T>
index_t extent_of(const MatrixRef<T>& a, Side side) {
  return side == Side::H ? cols_of(a) : rows_of(a);
}

/// Splits [0, extent) into tiles of about `target_work` units of work each, never narrower than one.
/// Dense: work is proportional to width. CSR rows: work is nnz plus `row_work` per row (a pass that also updates
/// each row's factor column weighs that update in stored entries' worth, so that rows of very different lengths,
/// as in text data, still give tiles of even cost).
template <class T>
std::vector<index_t> tile_bounds(const MatrixRef<T>& a, Side side, double target_work, double row_work = 1.0) {
  const index_t extent = extent_of(a, side);
  std::vector<index_t> bounds{0};
  if (extent == 0) return bounds;
  if (const auto* s = std::get_if<CsrView<T>>(&a)) {
    double acc = 0;
    for (index_t i = 0; i < extent; ++i) {
      acc += static_cast<double>(s->indptr[i + 1] - s->indptr[i]) + row_work;
      if (acc >= target_work) {
        bounds.push_back(i + 1);
        acc = 0;
      }
    }
    if (bounds.back() != extent) bounds.push_back(extent);
    return bounds;
  }
  const auto& d = std::get<DenseView<const T>>(a);
  const index_t other = side == Side::H ? d.rows : d.cols;
  const auto width =
      std::max<index_t>(1, static_cast<index_t>(target_work / static_cast<double>(std::max<index_t>(other, 1))));
  for (index_t t = width; t < extent; t += width) bounds.push_back(t);
  bounds.push_back(extent);
  return bounds;
}

}  // namespace dnmf::backend
