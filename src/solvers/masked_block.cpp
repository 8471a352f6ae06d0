// See masked_block.hpp. The checks and their messages are those of masked_problem.cpp for a whole matrix, with
// the block's offsets added so that the text names the entry's place in A whichever rank finds it.

#include "solvers/masked_block.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "dnmf/error.hpp"
#include "solvers/masked_checks.hpp"

namespace dnmf::solvers {
namespace {

/// An entry of the block: block-local (i, j), value and weight.
template <class T>
struct Entry {
  index_t i, j;
  T a, w;
};

/// Calls f(i, j, value) for every stored entry (every entry of a dense matrix), (i, j) block-local in A's
/// orientation.
template <class T, class F>
void for_each_stored(const StoredMatrix<T>& s, F&& f) {
  if (const auto* d = std::get_if<DenseView<const T>>(s.matrix)) {
    for (index_t c = 0; c < d->cols; ++c)
      for (index_t r = 0; r < d->rows; ++r) s.transposed ? f(c, r, (*d)(r, c)) : f(r, c, (*d)(r, c));
    return;
  }
  const auto& csr = std::get<CsrView<T>>(*s.matrix);
  for (index_t r = 0; r < csr.rows; ++r)
    for (index_t p = csr.indptr[r]; p < csr.indptr[r + 1]; ++p) {
      const index_t c = csr.indices[p];
      s.transposed ? f(c, r, csr.values[p]) : f(r, c, csr.values[p]);
    }
}

/// The block's checks with global places.
template <class T>
struct Checker {
  dist::Range rows, cols;
  void weight(const std::string& name, index_t i, index_t j, T w) const {
    check_weight(name, rows.first + i, cols.first + j, w);
  }
  void observed(const std::string& name, index_t i, index_t j, T a) const {
    check_observed_entry(name, rows.first + i, cols.first + j, a);
  }
};

/// Adds an observed entry to the block's figures.
template <class T>
void count(MaskedProblem<T>& p, T a, T w) {
  ++p.observed;
  p.observed_nonzero += a != T(0) ? 1 : 0;
  const double ad = static_cast<double>(a), wd = static_cast<double>(w);
  p.weighted_squared_norm += wd * ad * ad;
  p.weighted_sum += wd * ad;
  p.weight_sum += wd;
  p.observed_sum += ad;
}

/// Dense A, or sparse A whose unstored entries are observed zeros: dense halves.
template <class T>
void build_dense(MaskedBlock<T>& b, const StoredMatrix<T>& a, const StoredMatrix<T>& mask,
                 const MissingValues& missing) {
  const Checker<T> check{b.rows, b.cols};
  const index_t m = b.rows.size(), n = b.cols.size();
  MaskedProblem<T>& p = b.problem;
  DenseMatrix<T> value(m, n, T(0));
  for_each_stored(a, [&](index_t i, index_t j, T v) { value(i, j) = v; });
  DenseMatrix<T> w(m, n, T(1));
  if (mask.matrix != nullptr) {
    if (is_sparse(*mask.matrix)) std::fill(w.storage().begin(), w.storage().end(), T(0));
    for_each_stored(mask, [&](index_t i, index_t j, T v) {
      check.weight(mask.name, i, j, v);
      w(i, j) = v;
    });
  }
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      T& x = value(i, j);
      T& wt = w(i, j);
      if (missing_as_nan(missing.nan_missing, x)) wt = T(0);
      if (wt > 0) {
        check.observed(a.name, i, j, x);
        count(p, x, wt);
      } else {
        x = T(0);  // never read again, whatever it held
      }
      b.non_unit += wt != T(1) ? 1 : 0;
    }
  for (const bool transpose : {false, true}) {
    MaskedHalf<T>& h = transpose ? p.w_half : p.h_half;
    h.dense = true;
    h.rows = transpose ? n : m;
    h.cols = transpose ? m : n;
    h.weighted = DenseMatrix<T>(h.rows, h.cols);
    h.weights = DenseMatrix<T>(h.rows, h.cols);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) {
        const T wa = static_cast<T>(static_cast<double>(w(i, j)) * static_cast<double>(value(i, j)));
        (transpose ? h.weighted(j, i) : h.weighted(i, j)) = wa;
        (transpose ? h.weights(j, i) : h.weights(i, j)) = w(i, j);
      }
  }
}

/// Records in h.common_coef whether all of the half's list coefficients are one value.
template <class T>
void note_common_coef(MaskedHalf<T>& h) {
  const std::vector<double>& c = h.gram_coef;
  h.common_coef.reset();
  if (std::all_of(c.begin(), c.end(), [&](double v) { return v == c.front(); }))
    h.common_coef = c.empty() ? 0.0 : c.front();
}

/// One half of the sparse form from the observed entries; `by_row`: Aᵀ's half (its columns are A's rows).
template <class T>
void sparse_half(MaskedHalf<T>& h, index_t rows, index_t cols, const std::vector<Entry<T>>& entries, bool by_row) {
  h.rows = rows;
  h.cols = cols;
  h.ptr.assign(to_size(cols) + 1, 0);
  for (const auto& e : entries) ++h.ptr[to_size(by_row ? e.i : e.j) + 1];
  for (index_t c = 0; c < cols; ++c) h.ptr[to_size(c) + 1] += h.ptr[to_size(c)];
  h.row.resize(entries.size());
  h.weighted_value.resize(entries.size());
  h.weight.resize(entries.size());
  std::vector<index_t> next(h.ptr.begin(), h.ptr.end() - 1);
  for (const auto& e : entries) {
    const auto at = to_size(next[to_size(by_row ? e.i : e.j)]++);
    h.row[at] = by_row ? e.j : e.i;
    h.weighted_value[at] = static_cast<T>(static_cast<double>(e.w) * static_cast<double>(e.a));
    h.weight[at] = e.w;
  }
  // Only stored entries are observed: each column's Gram matrix is summed over its own entries.
  h.direct_gram = true;
  h.gram_ptr = h.ptr;
  h.gram_row = h.row;
  h.gram_coef.assign(h.weight.begin(), h.weight.end());
  note_common_coef(h);
}

/// Sparse A whose unstored entries are missing: the stored entries with a positive weight are observed.
template <class T>
void build_sparse(MaskedBlock<T>& b, const StoredMatrix<T>& a, const StoredMatrix<T>& mask,
                  const MissingValues& missing) {
  const Checker<T> check{b.rows, b.cols};
  MaskedProblem<T>& p = b.problem;
  std::vector<Entry<T>> entries;
  for_each_stored(a, [&](index_t i, index_t j, T v) { entries.push_back({i, j, v, T(1)}); });
  if (mask.matrix != nullptr) {
    // Each of A's entries takes its weight from the mask, 0 where the mask has none. The mask's entries are checked
    // and looked up in A's sorted rows as they are visited, never copied: a copy of every mask entry (32 bytes
    // each, grown without a reserve) was 384 MiB of a 465 MiB peak for a 5.4M-entry mask beside 243k stored
    // entries of A, a run the memory plan had put at 78 MB.
    const auto order = [](const Entry<T>& x, const Entry<T>& y) { return std::tie(x.i, x.j) < std::tie(y.i, y.j); };
    std::sort(entries.begin(), entries.end(), order);
    std::vector<std::size_t> row_start(to_size(b.rows.size()) + 1, 0);
    for (const Entry<T>& e : entries) ++row_start[to_size(e.i) + 1];
    for (std::size_t r = 0; r + 1 < row_start.size(); ++r) row_start[r + 1] += row_start[r];
    for (Entry<T>& e : entries) e.w = T(-1);  // not met in the mask yet (weights are checked to be >= 0)
    for_each_stored(mask, [&](index_t i, index_t j, T v) {
      check.weight(mask.name, i, j, v);
      const auto first = entries.begin() + static_cast<std::ptrdiff_t>(row_start[to_size(i)]);
      const auto last = entries.begin() + static_cast<std::ptrdiff_t>(row_start[to_size(i) + 1]);
      auto it = std::lower_bound(first, last, j, [](const Entry<T>& e, index_t col) { return e.j < col; });
      for (; it != last && it->j == j; ++it)
        if (it->w < T(0)) it->w = v;
    });
    for (Entry<T>& e : entries)
      if (e.w < T(0)) e.w = T(0);
  }
  std::vector<Entry<T>> kept;
  kept.reserve(entries.size());
  for (auto& e : entries) {
    if (missing_as_nan(missing.nan_missing, e.a)) e.w = T(0);
    if (!(e.w > 0)) continue;
    check.observed(a.name, e.i, e.j, e.a);
    count(p, e.a, e.w);
    kept.push_back(e);
  }
  sparse_half(p.h_half, b.rows.size(), b.cols.size(), kept, false);
  sparse_half(p.w_half, b.cols.size(), b.rows.size(), kept, true);
}

/// A dense half's Gram lists from its weights: corrections (w != 1) of the full Gram matrix, or the observed
/// entries themselves (`direct`).
template <class T>
void dense_gram_lists(MaskedHalf<T>& h, bool direct) {
  h.direct_gram = direct;
  h.gram_ptr.assign(to_size(h.cols) + 1, 0);
  // Counted first so the lists are allocated once at their size: grown entry by entry they held up to twice it,
  // and their peak is part of the memory plan (masked_resident_bytes.cpp).
  std::size_t listed = 0;
  for (index_t j = 0; j < h.cols; ++j) {
    for (index_t i = 0; i < h.rows; ++i) {
      const double w = static_cast<double>(h.weights(i, j));
      listed += (direct ? w > 0 : w != 1.0) ? 1 : 0;
    }
  }
  h.gram_row.clear();
  h.gram_coef.clear();
  h.gram_row.reserve(listed);
  h.gram_coef.reserve(listed);
  for (index_t j = 0; j < h.cols; ++j) {
    for (index_t i = 0; i < h.rows; ++i) {
      const double w = static_cast<double>(h.weights(i, j));
      if (direct ? w > 0 : w != 1.0) {
        h.gram_row.push_back(i);
        h.gram_coef.push_back(direct ? w : w - 1.0);
      }
    }
    h.gram_ptr[to_size(j) + 1] = static_cast<index_t>(h.gram_row.size());
  }
  note_common_coef(h);
}

/// Marks the half's columns observed in no block of `along` (the ranks sharing them) and returns how many of
/// the columns [owned.first, owned.last) (block-local) this rank owns are unobserved.
template <class T>
index_t mark_unobserved(MaskedHalf<T>& h, dist::Communicator& along, dist::Range owned) {
  std::vector<unsigned char> seen = observed_columns(h);
  along.allreduce_max(seen.data(), seen.size(), dist::Scalar::u8);
  h.unobserved.resize(seen.size());
  for (std::size_t j = 0; j < seen.size(); ++j) h.unobserved[j] = seen[j] != 0 ? 0 : 1;
  return std::count(h.unobserved.begin() + owned.first, h.unobserved.begin() + owned.last, 1);
}

}  // namespace

template <class T>
void choose_gram_lists(MaskedBlock<T>& b) {
  if (b.sparse) return;
  MaskedProblem<T>& p = b.problem;
  p.all_unit = b.non_unit == 0;
  const bool direct = b.non_unit >= p.observed;
  dense_gram_lists(p.h_half, direct);
  dense_gram_lists(p.w_half, direct);
}

template <class T>
std::vector<unsigned char> observed_columns(const MaskedHalf<T>& h) {
  std::vector<unsigned char> seen(to_size(h.cols), 0);
  for (index_t j = 0; j < h.cols; ++j) {
    if (h.dense) {
      for (index_t i = 0; i < h.rows && seen[to_size(j)] == 0; ++i) seen[to_size(j)] = h.weights(i, j) > 0 ? 1 : 0;
    } else {
      seen[to_size(j)] = h.ptr[to_size(j) + 1] > h.ptr[to_size(j)] ? 1 : 0;
    }
  }
  return seen;
}

template <class T>
MaskedBlock<T> build_masked_block(const StoredMatrix<T>& a, const StoredMatrix<T>& mask, const MissingValues& missing,
                                  dist::Range rows, dist::Range cols) {
  MaskedBlock<T> b;
  b.rows = rows;
  b.cols = cols;
  b.problem.m = rows.size();
  b.problem.n = cols.size();
  b.sparse = is_sparse(*a.matrix) && missing.unstored == Unstored::missing;
  if (b.sparse) {
    build_sparse(b, a, mask, missing);
  } else {
    build_dense(b, a, mask, missing);
  }
  return b;
}

template <class T>
void agree_masked_block(MaskedBlock<T>& b, const dist::Grid& grid, const dist::Layout& layout,
                        const std::string& name) {
  dist::Communicator& world = grid.world();
  MaskedProblem<T>& p = b.problem;
  std::int64_t counts[3] = {p.observed, b.non_unit, p.observed_nonzero};
  world.allreduce_sum(counts, 3);
  double sums[4] = {p.weighted_squared_norm, p.weighted_sum, p.observed_sum, p.weight_sum};
  world.allreduce_sum(sums, 4);
  p.m = layout.m;
  p.n = layout.n;
  p.observed = counts[0];
  b.non_unit = counts[1];
  p.observed_nonzero = counts[2];
  p.weighted_squared_norm = sums[0];
  p.weighted_sum = sums[1];
  p.observed_sum = sums[2];
  p.weight_sum = sums[3];
  // The same figures on every rank: the same refusal everywhere, reported once.
  try {
    require_observed(p.observed, p.weighted_squared_norm, p.weighted_sum, p.weight_sum, name);
  } catch (const Error& e) {
    throw CollectiveError(e);
  }
  choose_gram_lists(b);
  const index_t cols = mark_unobserved(
      p.h_half, grid.col_comm(), {layout.h_cols.first - layout.a_cols.first, layout.h_cols.last - layout.a_cols.first});
  const index_t rows = mark_unobserved(
      p.w_half, grid.row_comm(), {layout.w_rows.first - layout.a_rows.first, layout.w_rows.last - layout.a_rows.first});
  std::int64_t unobserved[2] = {rows, cols};
  world.allreduce_sum(unobserved, 2);
  p.unobserved_rows = unobserved[0];
  p.unobserved_cols = unobserved[1];
}

template MaskedBlock<float> build_masked_block<float>(const StoredMatrix<float>&, const StoredMatrix<float>&,
                                                      const MissingValues&, dist::Range, dist::Range);
template MaskedBlock<double> build_masked_block<double>(const StoredMatrix<double>&, const StoredMatrix<double>&,
                                                        const MissingValues&, dist::Range, dist::Range);
template void agree_masked_block<float>(MaskedBlock<float>&, const dist::Grid&, const dist::Layout&,
                                        const std::string&);
template void agree_masked_block<double>(MaskedBlock<double>&, const dist::Grid&, const dist::Layout&,
                                         const std::string&);
template void choose_gram_lists<float>(MaskedBlock<float>&);
template void choose_gram_lists<double>(MaskedBlock<double>&);
template std::vector<unsigned char> observed_columns<float>(const MaskedHalf<float>&);
template std::vector<unsigned char> observed_columns<double>(const MaskedHalf<double>&);

}  // namespace dnmf::solvers
