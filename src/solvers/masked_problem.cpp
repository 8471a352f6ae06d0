// See masked_problem.hpp.

#include "solvers/masked_problem.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"

namespace dnmf::solvers {
namespace {

std::string shape_text(index_t rows, index_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

/// Rows and columns of the stored matrix in A's orientation.
template <class T>
std::pair<index_t, index_t> shape_of(const StoredMatrix<T>& s) {
  const index_t r = rows_of(*s.matrix), c = cols_of(*s.matrix);
  return s.transposed ? std::pair{c, r} : std::pair{r, c};
}

/// Calls f(i, j, value) for every stored entry (every entry of a dense matrix), (i, j) in A's orientation.
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

template <class T>
[[noreturn]] void bad_weight(const std::string& name, index_t i, index_t j, T w) {
  throw DataError(name + ": weight at row " + std::to_string(i) + ", column " + std::to_string(j) + " (0-based) is " +
                  std::to_string(w) + "; mask weights must be finite and >= 0 (0 = missing)");
}

template <class T>
void check_weight(const std::string& name, index_t i, index_t j, T w) {
  if (!(w >= 0) || !std::isfinite(w)) bad_weight(name, i, j, w);
}

/// An observed entry of A must be a finite number >= 0.
template <class T>
void check_observed(const std::string& name, index_t i, index_t j, T a) {
  if (a >= 0 && std::isfinite(a)) return;
  std::string message = name + ": " + io::describe_bad_entry(i, j, a);
  if (std::isnan(a)) message += " (--missing nan takes NaN entries as missing)";
  throw DataError(message);
}

/// An observed entry (i, j) of A with its value and weight (> 0).
template <class T>
struct Entry {
  index_t i, j;
  T a, w;
};

/// Lists by column of a rows x cols matrix, from entries (column, row, coefficient) sorted by column.
void fill_lists(index_t cols, const std::vector<std::tuple<index_t, index_t, double>>& items, std::vector<index_t>& ptr,
                std::vector<index_t>& row, std::vector<double>& coef) {
  ptr.assign(to_size(cols) + 1, 0);
  for (const auto& [c, r, v] : items) ++ptr[to_size(c) + 1];
  for (index_t c = 0; c < cols; ++c) ptr[to_size(c) + 1] += ptr[to_size(c)];
  row.resize(items.size());
  coef.resize(items.size());
  std::vector<index_t> next(ptr.begin(), ptr.end() - 1);
  for (const auto& [c, r, v] : items) {
    const auto at = to_size(next[to_size(c)]++);
    row[at] = r;
    coef[at] = v;
  }
}

/// The Gram lists of a dense half from its weights: corrections (w != 1) or, when they would be more, the
/// observed entries themselves.
template <class T>
void dense_gram_lists(MaskedHalf<T>& h, bool direct) {
  std::vector<std::tuple<index_t, index_t, double>> items;
  for (index_t j = 0; j < h.cols; ++j)
    for (index_t i = 0; i < h.rows; ++i) {
      const double w = static_cast<double>(h.weights(i, j));
      if (direct ? w > 0 : w != 1.0) items.emplace_back(j, i, direct ? w : w - 1.0);
    }
  h.direct_gram = direct;
  fill_lists(h.cols, items, h.gram_ptr, h.gram_row, h.gram_coef);
}

/// A sparse half from the observed entries; `by_row`: Aᵀ's half (its columns are A's rows).
template <class T>
MaskedHalf<T> sparse_half(index_t rows, index_t cols, const std::vector<Entry<T>>& entries, bool by_row) {
  MaskedHalf<T> h;
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
  h.direct_gram = true;
  h.gram_ptr = h.ptr;
  h.gram_row = h.row;
  h.gram_coef.assign(h.weight.begin(), h.weight.end());
  return h;
}

template <class T>
void mark_unobserved(MaskedProblem<T>& p) {
  for (MaskedHalf<T>* h : {&p.h_half, &p.w_half}) {
    h->unobserved.assign(to_size(h->cols), 1);
    if (h->dense) {
      for (index_t j = 0; j < h->cols; ++j)
        for (index_t i = 0; i < h->rows; ++i)
          if (h->weights(i, j) > 0) {
            h->unobserved[to_size(j)] = 0;
            break;
          }
    } else {
      for (index_t j = 0; j < h->cols; ++j) h->unobserved[to_size(j)] = h->ptr[to_size(j) + 1] > h->ptr[to_size(j)];
      for (auto& u : h->unobserved) u = u != 0 ? 0 : 1;
    }
  }
  p.unobserved_cols = std::count(p.h_half.unobserved.begin(), p.h_half.unobserved.end(), 1);
  p.unobserved_rows = std::count(p.w_half.unobserved.begin(), p.w_half.unobserved.end(), 1);
}

template <class T>
void require_observed(const MaskedProblem<T>& p, const std::string& name) {
  if (p.observed == 0) throw DataError(name + ": no entry is observed (every weight is 0 or every entry missing)");
  if (!(p.weighted_squared_norm > 0))
    throw DataError(name + ": every observed entry is zero: there is nothing to factorise");
  if (!std::isfinite(p.weighted_squared_norm))
    throw NumericalError(name +
                         ": the weighted sum of the squared entries overflows double precision: rescale the "
                         "matrix, e.g. divide it by its largest entry");
}

/// Dense A (or sparse A whose unstored entries are observed zeros): dense weights, dense halves.
template <class T>
MaskedProblem<T> build_dense(const StoredMatrix<T>& a, const StoredMatrix<T>& mask, const MissingValues& missing,
                             index_t m, index_t n) {
  MaskedProblem<T> p;
  p.m = m;
  p.n = n;
  DenseMatrix<T> value(m, n, T(0));
  for_each_stored(a, [&](index_t i, index_t j, T v) { value(i, j) = v; });
  DenseMatrix<T> w(m, n, T(1));
  if (mask.matrix != nullptr) {
    if (is_sparse(*mask.matrix)) std::fill(w.storage().begin(), w.storage().end(), T(0));
    for_each_stored(mask, [&](index_t i, index_t j, T v) {
      check_weight(mask.name, i, j, v);
      w(i, j) = v;
    });
  }
  index_t non_unit = 0;
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      T& x = value(i, j);
      T& wt = w(i, j);
      if (missing.nan_missing && std::isnan(x)) wt = T(0);
      if (wt > 0) {
        check_observed(a.name, i, j, x);
        ++p.observed;
        const double xd = static_cast<double>(x), wd = static_cast<double>(wt);
        p.weighted_squared_norm += wd * xd * xd;
        p.weighted_sum += wd * xd;
        p.observed_sum += xd;
      } else {
        x = T(0);  // a missing entry's value is never read again, whatever it was
      }
      non_unit += wt != T(1) ? 1 : 0;
    }
  require_observed(p, a.name);
  p.all_unit = non_unit == 0;
  const bool direct = non_unit >= p.observed;
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
    dense_gram_lists(h, direct);
  }
  mark_unobserved(p);
  return p;
}

/// Sparse A whose unstored entries are missing: only stored entries (with a positive weight) are observed.
template <class T>
MaskedProblem<T> build_sparse(const StoredMatrix<T>& a, const StoredMatrix<T>& mask, const MissingValues& missing,
                              index_t m, index_t n) {
  MaskedProblem<T> p;
  p.m = m;
  p.n = n;
  std::vector<Entry<T>> entries;
  for_each_stored(a, [&](index_t i, index_t j, T v) { entries.push_back({i, j, v, T(1)}); });
  if (mask.matrix != nullptr) {
    // The weights of the stored entries: a merge of both entry lists in (row, column) order.
    std::vector<Entry<T>> weights;
    for_each_stored(mask, [&](index_t i, index_t j, T v) {
      check_weight(mask.name, i, j, v);
      weights.push_back({i, j, T(0), v});
    });
    const auto order = [](const Entry<T>& x, const Entry<T>& y) { return std::tie(x.i, x.j) < std::tie(y.i, y.j); };
    std::sort(entries.begin(), entries.end(), order);
    std::sort(weights.begin(), weights.end(), order);
    auto it = weights.begin();
    for (auto& e : entries) {
      while (it != weights.end() && order(*it, e)) ++it;
      e.w = it != weights.end() && it->i == e.i && it->j == e.j ? it->w : T(0);
    }
  }
  std::vector<Entry<T>> kept;
  kept.reserve(entries.size());
  for (auto& e : entries) {
    if (missing.nan_missing && std::isnan(e.a)) e.w = T(0);
    if (!(e.w > 0)) continue;
    check_observed(a.name, e.i, e.j, e.a);
    const double xd = static_cast<double>(e.a), wd = static_cast<double>(e.w);
    p.weighted_squared_norm += wd * xd * xd;
    p.weighted_sum += wd * xd;
    p.observed_sum += xd;
    kept.push_back(e);
  }
  p.observed = static_cast<index_t>(kept.size());
  require_observed(p, a.name);
  p.h_half = sparse_half<T>(m, n, kept, false);
  p.w_half = sparse_half<T>(n, m, kept, true);
  mark_unobserved(p);
  return p;
}

}  // namespace

template <class T>
MaskedProblem<T> build_masked_problem(const StoredMatrix<T>& a, const StoredMatrix<T>& mask,
                                      const MissingValues& missing) {
  const auto [m, n] = shape_of(a);
  if (mask.matrix != nullptr) {
    const auto [mr, mc] = shape_of(mask);
    if (mr != m || mc != n)
      throw DataError(mask.name + ": the mask is " + shape_text(mr, mc) + " but " + a.name + " is " + shape_text(m, n) +
                      " (a mask must have A's shape)");
  }
  if (missing.unstored == Unstored::missing && !is_sparse(*a.matrix))
    throw UsageError(a.name +
                     ": --unstored missing applies to a sparse matrix; this one is dense (use --mask or "
                     "--missing nan)");
  if (is_sparse(*a.matrix) && missing.unstored == Unstored::missing) return build_sparse(a, mask, missing, m, n);
  return build_dense(a, mask, missing, m, n);
}

template MaskedProblem<float> build_masked_problem<float>(const StoredMatrix<float>&, const StoredMatrix<float>&,
                                                          const MissingValues&);
template MaskedProblem<double> build_masked_problem<double>(const StoredMatrix<double>&, const StoredMatrix<double>&,
                                                            const MissingValues&);

}  // namespace dnmf::solvers
