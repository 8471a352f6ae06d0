// The register-blocked kernels behind skinny_products.hpp, written once over a vector width and compiled once per
// instruction set (skinny_avx2.cpp, skinny_avx512.cpp). Each including file first defines
// DNMF_SKINNY_NAMESPACE; everything here has internal linkage or lives in that namespace, and nothing uses the
// standard library: an inline function or template instantiated with AVX-512 code in one object file could be
// the copy the linker keeps for the whole program, and would crash on a CPU without AVX-512.
//
// Both products keep k (<= 64) on the vector lanes, as BLIS/libxsmm-style micro-kernels keep their short
// dimension in registers: an accumulator block of RV vectors (up to 4·VL rows of k) by NC columns (RV·NC = 12
// registers, so FMA latency is hidden with registers to spare), fed per step by RV loads of the k-wide factor
// and NC broadcasts of A. Every entry of A is read once per 4·VL rows of k, every sum runs in a fixed order.
#pragma once

#include "backend/cpu/skinny_products.hpp"

#ifndef DNMF_SKINNY_NAMESPACE
#error "define DNMF_SKINNY_NAMESPACE before including skinny_kernels_impl.hpp"
#endif

namespace dnmf::backend::cpu::DNMF_SKINNY_NAMESPACE {
namespace {

// GCC's vector types take no template-dependent size, so each (element, width) pair is spelled out.
template <class T, int Bytes>
struct VectorOf;
template <>
struct VectorOf<double, 32> {
  typedef double type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<float, 32> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<double, 64> {
  typedef double type __attribute__((vector_size(64)));
};
template <>
struct VectorOf<float, 64> {
  typedef float type __attribute__((vector_size(64)));
};

template <class T, int VL>
struct Lanes {
  using Vec = typename VectorOf<T, VL* static_cast<int>(sizeof(T))>::type;
  static Vec load(const T* p) {
    Vec v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(T* p, Vec v) { __builtin_memcpy(p, &v, sizeof v); }
  // s - 0 is s for every s (unlike s + 0 for -0), so the compiler emits a bare broadcast.
  static Vec splat(T s) { return s - Vec{}; }
};

// dst[0..rows) = (first ? beta·dst : dst) + acc's lanes, rows <= VL. beta == 0 overwrites (dst may hold NaN).
template <class T, int VL>
inline void add_lanes(T* dst, typename Lanes<T, VL>::Vec acc, int rows, bool first, T beta) {
  if (rows == VL) {
    typename Lanes<T, VL>::Vec d = Lanes<T, VL>::load(dst);
    if (first)
      d = beta == T(0) ? acc : d * beta + acc;
    else
      d += acc;
    Lanes<T, VL>::store(dst, d);
    return;
  }
  for (int l = 0; l < rows; ++l) {
    const T v = acc[l];
    if (first)
      dst[l] = beta == T(0) ? v : dst[l] * beta + v;
    else
      dst[l] += v;
  }
}

// An accumulator block into its NC columns of dst (column stride ld), the rows below rows_left only.
template <class T, int VL, int RV, int NC>
inline void add_block(const typename Lanes<T, VL>::Vec (&acc)[RV][NC], T* dst, index_t ld, index_t rows_left,
                      bool first, T beta) {
  for (int q = 0; q < NC; ++q)
    for (int r = 0; r < RV; ++r) {
      const index_t rows = rows_left - r * VL;
      if (rows > 0)
        add_lanes<T, VL>(dst + q * ld + r * VL, acc[r][q], rows < VL ? static_cast<int>(rows) : VL, first, beta);
    }
}

// C(r0 .. r0+RV·VL, j0 .. j0+NC) over i in [i0, i1): acc += P(:, i) · A(i, j). P is k padded to a multiple of VL,
// column stride ldp. `rows_left` = k - r0 bounds the rows written. With ahead_bytes > 0 the rows go in steps of one
// cache line of A's columns, each step requesting the line ahead_bytes on in every column (column_ahead_bytes says
// why); the sums run in the same order either way.
template <class T, int VL, int RV, int NC>
void ya_block(const T* p, index_t ldp, const T* a, index_t lda, index_t i0, index_t i1, T* c, index_t ldc,
              index_t rows_left, bool first, T beta, index_t ahead_bytes) {
  using L = Lanes<T, VL>;
  typename L::Vec acc[RV][NC];
  for (int r = 0; r < RV; ++r)
    for (int q = 0; q < NC; ++q) acc[r][q] = typename L::Vec{};
  const T* col[NC];
  for (int q = 0; q < NC; ++q) col[q] = a + q * lda;
  const auto row = [&](index_t i) __attribute__((always_inline)) {
    typename L::Vec y[RV];
    for (int r = 0; r < RV; ++r) y[r] = L::load(p + i * ldp + r * VL);
    for (int q = 0; q < NC; ++q) {
      const typename L::Vec b = L::splat(col[q][i]);
      for (int r = 0; r < RV; ++r) acc[r][q] += y[r] * b;
    }
  };
  constexpr index_t kLineRows = kLineBytes / static_cast<index_t>(sizeof(T));
  const index_t ahead_rows = ahead_bytes / static_cast<index_t>(sizeof(T));
  index_t i = i0;
  // Requests only for rows this block reads: past them lie other rows of A (a stripe's or a grid block's
  // neighbours), which would be fetched for nothing.
  if (ahead_rows > 0)
    for (; i + kLineRows + ahead_rows <= i1; i += kLineRows) {
      for (int q = 0; q < NC; ++q) __builtin_prefetch(col[q] + i + ahead_rows, 0, 3);
      for (index_t step = 0; step < kLineRows; ++step) row(i + step);
    }
  for (; i < i1; ++i) row(i);
  add_block<T, VL, RV, NC>(acc, c, ldc, rows_left, first, beta);
}

// The register block of both AHᵀ kernels, from zero: acc[r][q] = Σ_j V(rVL.., j) · S(q, j) over j in [j0, j1), RV
// vectors loaded from column j of V and NC broadcasts from column j of S. xat_block keeps k on the lanes (V = X,
// S = A's rows); xatt_block rows of A (V = A, S = X's components).
template <class T, int VL, int RV, int NC>
[[gnu::always_inline]] inline void outer_block(const T* v, index_t ldv, const T* s, index_t lds, index_t j0, index_t j1,
                                               typename Lanes<T, VL>::Vec (&acc)[RV][NC]) {
  using L = Lanes<T, VL>;
  for (int r = 0; r < RV; ++r)
    for (int q = 0; q < NC; ++q) acc[r][q] = typename L::Vec{};
  for (index_t j = j0; j < j1; ++j) {
    typename L::Vec y[RV];
    for (int r = 0; r < RV; ++r) y[r] = L::load(v + j * ldv + r * VL);
    const T* sj = s + j * lds;
    for (int q = 0; q < NC; ++q) {
      const typename L::Vec b = L::splat(sj[q]);
      for (int r = 0; r < RV; ++r) acc[r][q] += y[r] * b;
    }
  }
}

// D(r0 .., i0 .. i0+NC) over j in [j0, j1): acc += X(:, j) · A(i, j).
template <class T, int VL, int RV, int NC>
void xat_block(const T* x, index_t ldx, const T* a, index_t lda, index_t j0, index_t j1, T* d, index_t ldd,
               index_t rows_left, bool first, T beta) {
  typename Lanes<T, VL>::Vec acc[RV][NC];
  outer_block<T, VL, RV, NC>(x, ldx, a, lda, j0, j1, acc);
  add_block<T, VL, RV, NC>(acc, d, ldd, rows_left, first, beta);
}

template <int N>
struct Count {
  static constexpr int value = N;
};

// Calls f(Count<count>{}) for a count in [1, N].
template <int N, class F>
inline void with_count(int count, F&& f) {
  if constexpr (N > 1) {
    if (count < N) {
      with_count<N - 1>(count, f);
      return;
    }
  }
  f(Count<N>{});
}

// The accumulator shapes: RV vectors of k by NC columns, RV·NC = kAccumulators, and one block as wide as the columns
// left over. Those ran one column at a time before: with RV chains of dependent FMAs only, the last 8 of a 32-column
// tile took twice as long as the 24 before them (f32, AVX-512, k = 16). Each entry's sum runs in the same order at
// any block width.
template <class T, int VL, int RV>
void ya_panel(const T* p, index_t ldp, const T* a, index_t lda, index_t n, index_t i0, index_t i1, T* c, index_t ldc,
              index_t rows_left, bool first, T beta, index_t ahead_bytes) {
  constexpr int NC = kAccumulators / RV;
  index_t j = 0;
  for (; j + NC <= n; j += NC)
    ya_block<T, VL, RV, NC>(p, ldp, a + j * lda, lda, i0, i1, c + j * ldc, ldc, rows_left, first, beta, ahead_bytes);
  if (j < n)
    with_count<NC>(static_cast<int>(n - j), [&](auto cols) {
      ya_block<T, VL, RV, decltype(cols)::value>(p, ldp, a + j * lda, lda, i0, i1, c + j * ldc, ldc, rows_left, first,
                                                 beta, ahead_bytes);
    });
}

// Requests the cache lines [line0, line1) of `ahead` (the caller's next operand).
inline void fetch_lines(const char* ahead, index_t line0, index_t line1) {
  for (index_t l = line0; l < line1; ++l) __builtin_prefetch(ahead + l * kLineBytes, 0, 1);
}

template <class T, int VL, int RV>
void xat_panel(const T* x, index_t ldx, const T* a, index_t lda, index_t m, index_t j0, index_t j1, T* d, index_t ldd,
               index_t rows_left, bool first, T beta, Ahead ahead) {
  constexpr int NC = kAccumulators / RV;
  const index_t lines = (ahead.bytes + kLineBytes - 1) / kLineBytes;
  // A share of the next operand after each block, so that its fetch from memory overlaps this product's arithmetic.
  const index_t share = (lines * NC + m - 1) / m;
  index_t fetched = 0;
  index_t i = 0;
  for (; i + NC <= m; i += NC) {
    xat_block<T, VL, RV, NC>(x, ldx, a + i, lda, j0, j1, d + i * ldd, ldd, rows_left, first, beta);
    if (fetched < lines) {
      const index_t upto = fetched + share < lines ? fetched + share : lines;
      fetch_lines(ahead.data, fetched, upto);
      fetched = upto;
    }
  }
  if (i < m)
    with_count<NC>(static_cast<int>(m - i), [&](auto rows) {
      xat_block<T, VL, RV, decltype(rows)::value>(x, ldx, a + i, lda, j0, j1, d + i * ldd, ldd, rows_left, first, beta);
    });
  fetch_lines(ahead.data, fetched, lines);
}

// The XAᵀ product written transposed, Dt (rows x L) (+)= A · Xᵀ over n columns of A, with rows of A on the lanes
// (IV vectors) and one broadcast of X per component. Per column IV loads and L broadcasts feed IV·L multiply-adds;
// xat_block needs a broadcast per NC multiply-adds instead, and with k = 16 f32 (one AVX-512 vector of k) that is
// one load per multiply-add, more than the load ports give. Each entry sums its columns in the same order as
// xat_block, from zero, and is then added to Dt (stored, when `overwrite`): the same bits as xat with beta = 1
// (beta = 0). Rows past `rows` are not written (the caller pads a short last vector).
template <class T, int VL, int IV, int L>
void xatt_block(const T* x, index_t ldx, const T* a, index_t lda, index_t n, T* dt, index_t lddt, index_t rows,
                bool overwrite) {
  typename Lanes<T, VL>::Vec acc[IV][L];
  outer_block<T, VL, IV, L>(a, lda, x, ldx, 0, n, acc);
  for (int l = 0; l < L; ++l)
    for (int v = 0; v < IV; ++v)
      add_lanes<T, VL>(dt + l * lddt + v * VL, acc[v][l], static_cast<int>(rows - v * VL < VL ? rows - v * VL : VL),
                       overwrite, T(0));
}

// Rows of A per block of the transposed product (kTransposedVectors vectors) and components per accumulator panel
// (L): IV·L accumulators, 24 of AVX-512's 32 registers, 12 of AVX2's 16.
constexpr int kTransposedComponents = kBytes == 64 ? 8 : 4;

// One block of rows (IV vectors, the last `rows` of them valid) over every component panel of k.
template <class T, int VL, int IV>
void xatt_rows(index_t k, const T* x, index_t ldx, const T* a, index_t lda, index_t n, T* dt, index_t lddt,
               index_t rows, bool overwrite) {
  constexpr int L = kTransposedComponents;
  for (index_t l0 = 0; l0 < k; l0 += L) {
    const int comps = k - l0 < L ? static_cast<int>(k - l0) : L;
    with_count<L>(comps, [&](auto count) {
      xatt_block<T, VL, IV, decltype(count)::value>(x + l0, ldx, a, lda, n, dt + l0 * lddt, lddt, rows, overwrite);
    });
  }
}

// Dt is kept in panels of IV·VL rows, each panel's k columns of IV·VL entries adjacent (entry (i, l) at
// (i / P)·P·k + l·P + i % P, P = IV·VL): a block then writes one contiguous stretch. Column-major, each block wrote
// into k streams a column apart, and with Dt out of L2 that made the f64 pass slower than xat's (same kernel).
template <class T, int VL>
void xatt_impl(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T* dt, bool overwrite,
               Ahead ahead) {
  constexpr int IV = kTransposedVectors;
  constexpr index_t panel = IV * VL;
  const index_t lines = (ahead.bytes + kLineBytes - 1) / kLineBytes;
  const index_t share = (lines * panel + m - 1) / m;
  index_t fetched = 0;
  T tail[kColBlock * VL];  // the last rows when m is not a multiple of VL, zero-padded to a whole vector
  for (index_t j0 = 0; j0 < n; j0 += kColBlock) {
    const index_t cols = n - j0 < kColBlock ? n - j0 : kColBlock;
    const T* xb = x + j0 * ldx;
    const T* ab = a + j0 * lda;
    const bool fresh = overwrite && j0 == 0;
    index_t i = 0;
    for (; i + panel <= m; i += panel) {
      xatt_rows<T, VL, IV>(k, xb, ldx, ab + i, lda, cols, dt + i * k, panel, panel, fresh);
      if (fetched < lines) {
        const index_t upto = fetched + share < lines ? fetched + share : lines;
        fetch_lines(ahead.data, fetched, upto);
        fetched = upto;
      }
    }
    T* last_panel = dt + i * k;
    const index_t full = (m - i) / VL;
    if (full > 0) {
      with_count<IV - 1>(static_cast<int>(full), [&](auto vectors) {
        xatt_rows<T, VL, decltype(vectors)::value>(k, xb, ldx, ab + i, lda, cols, last_panel, panel, full * VL, fresh);
      });
    }
    if (i + full * VL < m) {
      const index_t first = i + full * VL;
      const index_t rows = m - first;
      for (index_t j = 0; j < cols; ++j)
        for (index_t r = 0; r < VL; ++r) tail[j * VL + r] = r < rows ? ab[j * lda + first + r] : T(0);
      xatt_rows<T, VL, 1>(k, xb, ldx, tail, VL, cols, last_panel + full * VL, panel, rows, fresh);
    }
  }
  fetch_lines(ahead.data, fetched, lines);
}

// C (k x NC columns) over `pairs` pairs of rows, f32 with k <= VL/2: P2 holds two rows of Y per vector, interleaved
// (lane 2p + r = Y(p, 2q + r)), so one 64-bit broadcast of the adjacent A(2q, j), A(2q+1, j) feeds all lanes. With
// k = 8 on AVX-512 the plain kernel leaves half of every vector empty (47-63 GFLOP/s in cache against ~195 this
// way). Lane 2p sums the even rows, lane 2p+1 the odd ones; C(p, j) = even + odd.
template <int VL, int NC>
void ya_pairs_block(index_t k, const float* p2, const float* a, index_t lda, index_t pairs, float* c, index_t ldc,
                    float beta) {
  using L = Lanes<float, VL>;
  typedef double Pairs __attribute__((vector_size(VL * 4)));
  typename L::Vec acc[NC];
  for (int q = 0; q < NC; ++q) acc[q] = typename L::Vec{};
  for (index_t i = 0; i < pairs; ++i) {
    const typename L::Vec y = L::load(p2 + i * VL);
    for (int q = 0; q < NC; ++q) {
      double pair;
      __builtin_memcpy(&pair, a + q * lda + 2 * i, sizeof pair);
      const Pairs both = pair - Pairs{};
      typename L::Vec b;
      __builtin_memcpy(&b, &both, sizeof b);
      acc[q] += y * b;
    }
  }
  for (int q = 0; q < NC; ++q)
    for (index_t l = 0; l < k; ++l) {
      const float v = acc[q][2 * l] + acc[q][2 * l + 1];
      float& out = c[l + q * ldc];
      out = beta == 0.0f ? v : out * beta + v;
    }
}

template <int VL>
void ya_pairs_impl(index_t k, index_t pairs, index_t n, const float* p2, const float* a, index_t lda, float beta,
                   float* c, index_t ldc) {
  index_t j = 0;
  for (; j + kAccumulators <= n; j += kAccumulators)
    ya_pairs_block<VL, kAccumulators>(k, p2, a + j * lda, lda, pairs, c + j * ldc, ldc, beta);
  if (j < n)
    with_count<kAccumulators>(static_cast<int>(n - j), [&](auto cols) {
      ya_pairs_block<VL, decltype(cols)::value>(k, p2, a + j * lda, lda, pairs, c + j * ldc, ldc, beta);
    });
}

template <int N>
struct Vectors {
  static constexpr int value = N;
};

// Calls f(Vectors<RV>{}) with RV = the vectors (of VL lanes, at most 4) that `rows` rows of k fill.
template <int VL, class F>
inline void with_vectors(index_t rows, F&& f) {
  const index_t vectors = (rows + VL - 1) / VL;
  if (vectors >= 4)
    f(Vectors<4>{});
  else if (vectors == 3)
    f(Vectors<3>{});
  else if (vectors == 2)
    f(Vectors<2>{});
  else
    f(Vectors<1>{});
}

template <class T, int VL>
void ya_impl(index_t k, index_t m, index_t n, const T* p, index_t ldp, const T* a, index_t lda, T beta, T* c,
             index_t ldc, index_t ahead_bytes) {
  const index_t row_block = k <= 4 * VL ? m : kRowBlock;
  for (index_t i0 = 0; i0 < m; i0 += row_block) {
    const index_t i1 = i0 + row_block < m ? i0 + row_block : m;
    const bool first = i0 == 0;
    for (index_t r0 = 0; r0 < k; r0 += 4 * VL) {
      const index_t rows = k - r0;
      with_vectors<VL>(rows, [&](auto rv) {
        ya_panel<T, VL, decltype(rv)::value>(p + r0, ldp, a, lda, n, i0, i1, c + r0, ldc, rows, first, beta,
                                             ahead_bytes);
      });
    }
  }
}

template <class T, int VL>
void xat_impl(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T beta, T* d,
              index_t ldd, Ahead ahead) {
  for (index_t j0 = 0; j0 < n; j0 += kColBlock) {
    const index_t j1 = j0 + kColBlock < n ? j0 + kColBlock : n;
    const bool first = j0 == 0;
    for (index_t r0 = 0; r0 < k; r0 += 4 * VL) {
      const index_t rows = k - r0;
      with_vectors<VL>(rows, [&](auto rv) {
        xat_panel<T, VL, decltype(rv)::value>(x + r0, ldx, a, lda, m, j0, j1, d + r0, ldd, rows, first, beta, ahead);
      });
      ahead = Ahead{};  // all of it requested during the first panel
    }
  }
}

}  // namespace

// The entry points of this instruction set. The k-wide operand (P or X) is packed by the caller: k padded to a
// multiple of lanes<T>() with zeros, so every vector load is whole; C and D are written only in their k rows.
void ya(index_t k, index_t m, index_t n, const double* p, index_t ldp, const double* a, index_t lda, double beta,
        double* c, index_t ldc, index_t ahead_bytes) {
  ya_impl<double, kBytes / 8>(k, m, n, p, ldp, a, lda, beta, c, ldc, ahead_bytes);
}
void ya(index_t k, index_t m, index_t n, const float* p, index_t ldp, const float* a, index_t lda, float beta, float* c,
        index_t ldc, index_t ahead_bytes) {
  ya_impl<float, kBytes / 4>(k, m, n, p, ldp, a, lda, beta, c, ldc, ahead_bytes);
}
void ya_pairs(index_t k, index_t pairs, index_t n, const float* p2, const float* a, index_t lda, float beta, float* c,
              index_t ldc) {
  ya_pairs_impl<kBytes / 4>(k, pairs, n, p2, a, lda, beta, c, ldc);
}
void xat(index_t k, index_t m, index_t n, const double* x, index_t ldx, const double* a, index_t lda, double beta,
         double* d, index_t ldd, Ahead ahead) {
  xat_impl<double, kBytes / 8>(k, m, n, x, ldx, a, lda, beta, d, ldd, ahead);
}
void xat(index_t k, index_t m, index_t n, const float* x, index_t ldx, const float* a, index_t lda, float beta,
         float* d, index_t ldd, Ahead ahead) {
  xat_impl<float, kBytes / 4>(k, m, n, x, ldx, a, lda, beta, d, ldd, ahead);
}
void xat_transposed(index_t k, index_t m, index_t n, const double* x, index_t ldx, const double* a, index_t lda,
                    double* dt, bool overwrite, Ahead ahead) {
  xatt_impl<double, kBytes / 8>(k, m, n, x, ldx, a, lda, dt, overwrite, ahead);
}
void xat_transposed(index_t k, index_t m, index_t n, const float* x, index_t ldx, const float* a, index_t lda,
                    float* dt, bool overwrite, Ahead ahead) {
  xatt_impl<float, kBytes / 4>(k, m, n, x, ldx, a, lda, dt, overwrite, ahead);
}

}  // namespace dnmf::backend::cpu::DNMF_SKINNY_NAMESPACE
