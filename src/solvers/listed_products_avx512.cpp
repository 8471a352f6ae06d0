// listed_products in 8-wide double lanes for k = 8, 16, 24 or 32 (listed_products.hpp), built with -mavx512f and
// called only where the CPU has AVX-512F. The 4-wide kernel loads and stores its k outputs for every four rows
// and sums each row's dot across its own lanes; here eight rows' dots come out of one transposing reduction and
// the outputs (G_j x, and b for a sparse column) stay in registers over the whole list (docs/masked.md, "Cost").
// Every sum keeps an order fixed by k and the list, so the result never depends on the thread count.
#include <cstring>

#include "solvers/lanes.hpp"
#include "solvers/listed_products.hpp"

namespace dnmf::solvers::avx512 {
namespace {

/// Eight doubles in one AVX-512 register.
using Wide = double __attribute__((vector_size(64)));

/// Eight doubles of a row: loaded, or widened from eight floats.
template <class T>
[[gnu::always_inline]] inline Wide load8(const T* p) {
  return load_vector<Wide>(p);
}

[[gnu::always_inline]] inline Wide splat(double v) { return Wide{v, v, v, v, v, v, v, v}; }

/// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)).
[[gnu::always_inline]] inline double wide_sum(Wide v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/// Lane r of the result is the sum of a[r]'s eight lanes, for eight vectors a[0..7]: three rounds of
/// shuffles and additions instead of eight horizontal sums.
[[gnu::always_inline]] inline Wide transpose_sum(const Wide (&a)[8]) {
  Wide pair[4];  // 128-bit lane t of pair[q]: (a[2q], a[2q+1]) summed over that lane's two entries
  for (index_t q = 0; q < 4; ++q)
    pair[q] = __builtin_shufflevector(a[2 * q], a[2 * q + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
              __builtin_shufflevector(a[2 * q], a[2 * q + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  // Lanes 0-1 and 2-3 of u, then of v, summed: the 128-bit lanes L0+L1 and L2+L3 of each, side by side.
  const auto halves = [](Wide u, Wide v) {
    return __builtin_shufflevector(u, v, 0, 1, 4, 5, 8, 9, 12, 13) +
           __builtin_shufflevector(u, v, 2, 3, 6, 7, 10, 11, 14, 15);
  };
  return halves(halves(pair[0], pair[1]), halves(pair[2], pair[3]));
}

/// out[v] += Σ_r s[r] y_r[8v..8v+8) over eight rows, as a tree: one addition per block on out's chains, where
/// eight multiply-adds in a row made every block wait eight FMA latencies. The form for b (a sparse column's
/// weighted numerator) and G_j x together: with both, partial sums (add_rows below) leave too few registers.
template <int KV, class T>
[[gnu::always_inline]] inline void add_rows_tree(Wide (&out)[KV], Wide s, const T* const (&y)[8]) {
  Wide sr[8];
  for (index_t r = 0; r < 8; ++r) sr[r] = splat(s[r]);
  for (index_t v = 0; v < KV; ++v) {
    Wide t[4];
    for (index_t q = 0; q < 4; ++q)
      t[q] = sr[2 * q] * load8(y[2 * q] + 8 * v) + sr[2 * q + 1] * load8(y[2 * q + 1] + 8 * v);
    out[v] += (t[0] + t[1]) + (t[2] + t[3]);
  }
}

/// out[q][v] += s[2q]·y_2q[8v..8v+8) + s[2q+1]·y_2q+1[8v..) over eight rows, Q = 4 or 2 partial sums per vector:
/// multiply-adds only, each partial a chain of 8/Q per block. s is read from memory, so that its broadcasts ride
/// on the multiply-adds' loads instead of taking the shuffle port the transposing reduction needs (a tree of
/// additions over s splatted from a register took 11 more operations per block on the two vector ports).
template <int KV, int Q, class T>
[[gnu::always_inline]] inline void add_rows(Wide (&out)[Q][KV], const double* s, const T* const (&y)[8]) {
  for (index_t v = 0; v < KV; ++v)
    for (index_t r = 0; r < 8; ++r) out[r % Q][v] += splat(s[r]) * load8(y[r] + 8 * v);
}

/// The kernel for k = 8·KV; WithG: gx is summed, WithB: b is (fixed at compile time: fewer live registers).
template <class T, int KV, bool WithG, bool WithB>
double products(const T* yt, const index_t* row, const double* coef, index_t p0, index_t p1, const T* x, double* gx,
                const T* weighted, double* b) {
  constexpr index_t k = 8 * index_t{KV};
  constexpr int Q = KV <= 2 ? 4 : 2;  // partial sums per output vector, within the 32 registers
  Wide xv[KV], g[KV] = {}, bv[KV] = {};
  Wide gq[Q][KV] = {};
  for (index_t v = 0; v < KV; ++v) {
    xv[v] = load8(x + 8 * v);
    if constexpr (WithG) g[v] = load8(gx + 8 * v);
    if constexpr (WithB) bv[v] = load8(b + 8 * v);
  }
  Wide quad8 = {};
  index_t p = p0;
  for (; p + 8 <= p1; p += 8) {
    const T* y[8];
    for (index_t r = 0; r < 8; ++r) y[r] = yt + row[p + r] * k;
    Wide acc[8];
    for (index_t r = 0; r < 8; ++r) {
      acc[r] = load8(y[r]) * xv[0];
      for (index_t v = 1; v < KV; ++v) acc[r] += load8(y[r] + 8 * v) * xv[v];
    }
    const Wide d = transpose_sum(acc);
    const Wide c = load8(coef + p) * d;
    quad8 += c * d;
    if constexpr (WithB) {
      add_rows_tree<KV>(bv, load8(weighted + p), y);
      if constexpr (WithG) add_rows_tree<KV>(g, c, y);
    } else if constexpr (WithG) {
      alignas(64) double cs[8];
      std::memcpy(cs, &c, sizeof c);
      asm volatile("" : : "r"(cs) : "memory");  // keeps cs in memory: the compiler would splat c's lanes by shuffles
      add_rows<KV, Q>(gq, cs, y);
    }
  }
  if constexpr (WithG && !WithB) {
    for (index_t v = 0; v < KV; ++v)
      g[v] += (gq[0][v] + gq[1 % Q][v]) + (Q == 4 ? gq[2 % Q][v] + gq[3 % Q][v] : Wide{});
  }
  double quad = 0;
  for (; p < p1; ++p) {
    const T* y = yt + row[p] * k;
    Wide acc = load8(y) * xv[0];
    for (index_t v = 1; v < KV; ++v) acc += load8(y + 8 * v) * xv[v];
    const double d = wide_sum(acc), c = coef[p] * d;
    quad += c * d;
    if constexpr (WithB)
      for (index_t v = 0; v < KV; ++v) bv[v] += splat(static_cast<double>(weighted[p])) * load8(y + 8 * v);
    if constexpr (WithG)
      for (index_t v = 0; v < KV; ++v) g[v] += splat(c) * load8(y + 8 * v);
  }
  for (index_t v = 0; v < KV; ++v) {
    if constexpr (WithG) std::memcpy(gx + 8 * v, &g[v], sizeof(Wide));
    if constexpr (WithB) std::memcpy(b + 8 * v, &bv[v], sizeof(Wide));
  }
  return wide_sum(quad8) + quad;
}

template <class T, int KV>
double with_outputs(const T* yt, const index_t* row, const double* coef, index_t p0, index_t p1, const T* x, double* gx,
                    const T* weighted, double* b) {
  if (weighted != nullptr)
    return gx != nullptr ? products<T, KV, true, true>(yt, row, coef, p0, p1, x, gx, weighted, b)
                         : products<T, KV, false, true>(yt, row, coef, p0, p1, x, gx, weighted, b);
  return gx != nullptr ? products<T, KV, true, false>(yt, row, coef, p0, p1, x, gx, weighted, b)
                       : products<T, KV, false, false>(yt, row, coef, p0, p1, x, gx, weighted, b);
}

template <class T>
double dispatch(const T* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1, const T* x,
                double* gx, const T* weighted, double* b) {
  switch (k) {
    case 8:
      return with_outputs<T, 1>(yt, row, coef, p0, p1, x, gx, weighted, b);
    case 16:
      return with_outputs<T, 2>(yt, row, coef, p0, p1, x, gx, weighted, b);
    case 24:
      return with_outputs<T, 3>(yt, row, coef, p0, p1, x, gx, weighted, b);
    default:
      return with_outputs<T, 4>(yt, row, coef, p0, p1, x, gx, weighted, b);
  }
}

}  // namespace

double listed_products_wide(const double* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                            const double* x, double* gx, const double* weighted, double* b) {
  return dispatch(yt, k, row, coef, p0, p1, x, gx, weighted, b);
}

double listed_products_wide(const float* yt, index_t k, const index_t* row, const double* coef, index_t p0, index_t p1,
                            const float* x, double* gx, const float* weighted, double* b) {
  return dispatch(yt, k, row, coef, p0, p1, x, gx, weighted, b);
}

}  // namespace dnmf::solvers::avx512
