#include "api/masked_resident_bytes.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>

#include "dnmf/error.hpp"
#include "solvers/masked_checks.hpp"
#include "stream/masked_tiles.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::api {
namespace {

// A list entry as masked_block.cpp keeps it, in each of the two halves: the row (index_t) and the coefficient
// (double, whatever T is).
constexpr std::int64_t kListEntryBytes = 2 * static_cast<std::int64_t>(sizeof(index_t) + sizeof(double));
// Tiles of the counting pass: small, since it only reads.
constexpr std::size_t kCountingPairBytes = std::size_t{32} << 20;

/// Entries of either half's Gram list without reading the entries: a list holds at most the observed entries,
/// which a mask's stored entries bound; NaN alone lists min(NaN, observed) <= m·n/2.
std::int64_t list_bound(const std::optional<io::MatrixShape>& mask_shape, std::int64_t entries) {
  if (!mask_shape) return entries / 2;
  const std::int64_t stored = mask_shape->stored;
  return stored >= 0 ? std::min(stored, entries) : entries;
}

/// The lists' entries counted as choose_gram_lists will: min(weights other than 1, observed entries), over a
/// streamed pass of A (for its NaN) and the mask side by side. -1 when they cannot be read in pairs.
template <class T>
std::int64_t counted_list_entries(const std::string& a_name, const MissingValues& missing, const dist::Layout& layout) {
  const std::string mask_name = missing.mask ? missing.mask->name() : std::string();
  if (!stream::streamable(a_name) || (missing.mask && !stream::streamable(mask_name))) return -1;
  std::unique_ptr<stream::TileSource<T>> a = stream::open_source<T>(a_name, layout.a_rows, layout.a_cols);
  if (a->sparse()) return -1;
  std::unique_ptr<stream::TileSource<T>> mask;
  if (missing.mask) {
    mask = stream::open_source<T>(mask_name, layout.a_rows, layout.a_cols);
    if (mask->sparse() || mask->direction() != a->direction()) return -1;
  }
  std::int64_t non_unit = 0, observed = 0;
  stream::MaskedTiles<T> tiles(std::move(a), std::move(mask), kCountingPairBytes, 2);
  tiles.pass([&](const stream::Tile<T>& at, const stream::Tile<T>* wt) {
    const T* values = at.lent != nullptr ? at.lent : at.values.data();
    const T* weights = wt == nullptr ? nullptr : wt->lent != nullptr ? wt->lent : wt->values.data();
    const std::size_t count = to_size(at.rows) * to_size(at.cols);
    for (std::size_t e = 0; e < count; ++e) {
      double w = weights != nullptr ? static_cast<double>(weights[e]) : 1.0;
      if (solvers::missing_as_nan(missing.nan_missing, values[e])) w = 0;
      non_unit += w != 1.0 ? 1 : 0;
      observed += w > 0 ? 1 : 0;
    }
  });
  return std::min(non_unit, observed);
}

}  // namespace

template <class T>
std::int64_t masked_resident_extra_bytes(const std::string& a_name, const io::MatrixShape& a_shape,
                                         const std::optional<io::MatrixShape>& mask_shape, const MissingValues& missing,
                                         const dist::Layout& layout, bool count) {
  const std::int64_t entries = a_shape.rows * a_shape.cols;
  if (a_shape.sparse && missing.unstored == Unstored::missing) {
    // The sparse problem keeps no Gram lists; a mask is held as read while the halves are built from it.
    if (!mask_shape) return 0;
    const io::MatrixShape& m = *mask_shape;
    if (!m.sparse) return entries * static_cast<std::int64_t>(sizeof(T));
    return m.stored * static_cast<std::int64_t>(sizeof(T) + sizeof(col_index_t)) +
           (m.rows + 1) * static_cast<std::int64_t>(sizeof(index_t));
  }
  std::int64_t listed = -1;
  if (count) listed = counted_list_entries<T>(a_name, missing, layout);
  if (listed < 0) listed = list_bound(mask_shape, entries);
  // Each half also keeps a start per line.
  const std::int64_t starts = (a_shape.rows + a_shape.cols + 2) * static_cast<std::int64_t>(sizeof(index_t));
  return listed * kListEntryBytes + starts;
}

template std::int64_t masked_resident_extra_bytes<float>(const std::string&, const io::MatrixShape&,
                                                         const std::optional<io::MatrixShape>&, const MissingValues&,
                                                         const dist::Layout&, bool);
template std::int64_t masked_resident_extra_bytes<double>(const std::string&, const io::MatrixShape&,
                                                          const std::optional<io::MatrixShape>&, const MissingValues&,
                                                          const dist::Layout&, bool);

}  // namespace dnmf::api
