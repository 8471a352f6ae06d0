// Columns of a k x n column-major block in the lanes of a vector V (one column per lane): the column rules'
// (hals.hpp, mu_frobenius.hpp) lane-parallel kernels read and write their groups of columns through these.
//
// Everything here is a template of V and uses no inline function or instantiation shared with other files:
// column_rules_avx512.cpp instantiates it at its own 8-wide type with -mavx512f, and no AVX-512 copy of a function
// may stand in for the baseline's at link time (src/solvers/CMakeLists.txt).
#pragma once

#include <cstring>
#include <type_traits>

#include "dnmf/index.hpp"
#include "solvers/lanes.hpp"

namespace dnmf::solvers::lane_rows {

/// Doubles in one V.
template <class V>
constexpr index_t kWidth = static_cast<index_t>(sizeof(V) / sizeof(double));

/// The group's columns of row l of x (or of numer) in lanes, zeros past the group's `nc` columns.
template <class V, class T>
[[gnu::always_inline]] inline V row_lanes(const T* row, index_t ld, index_t nc) {
  double lanes[kWidth<V>] = {};
  if (nc == kWidth<V>) {
    for (index_t c = 0; c < kWidth<V>; ++c) lanes[c] = static_cast<double>(row[c * ld]);
  } else {
    for (index_t c = 0; c < nc; ++c) lanes[c] = static_cast<double>(row[c * ld]);
  }
  V v;
  std::memcpy(&v, lanes, sizeof v);
  return v;
}

/// max(0, v) in each lane as std::max(0.0, v) gives it (a NaN gives 0), rounded to T and back.
template <class T, class V>
[[gnu::always_inline]] inline V clamp_rounded(V v) {
  const V zero = {};
  const V clamped = zero < v ? v : zero;
  if constexpr (std::is_same_v<T, double>) {
    return clamped;
  } else {
    // A typedef: GCC drops the vector_size of an alias declaration whose size depends on V.
    typedef float Narrow __attribute__((vector_size(sizeof(V) / 2)));  // NOLINT(modernize-use-using)
    return __builtin_convertvector(__builtin_convertvector(clamped, Narrow), V);
  }
}

/// Transposes the 8 x 8 block r (r[c][p]) in place: three rounds of two-register shuffles, no scalar moves.
template <class V>
[[gnu::always_inline]] inline void transpose8(V (&r)[8]) {
  static_assert(kWidth<V> == 8);
  V a[8], b[8];
  for (int q = 0; q < 8; q += 2) {
    a[q] = __builtin_shufflevector(r[q], r[q + 1], 0, 8, 2, 10, 4, 12, 6, 14);
    a[q + 1] = __builtin_shufflevector(r[q], r[q + 1], 1, 9, 3, 11, 5, 13, 7, 15);
  }
  for (int q = 0; q < 8; q += 4) {
    b[q] = __builtin_shufflevector(a[q], a[q + 2], 0, 1, 8, 9, 4, 5, 12, 13);            // entries 0 and 4
    b[q + 1] = __builtin_shufflevector(a[q], a[q + 2], 2, 3, 10, 11, 6, 7, 14, 15);      // 2 and 6
    b[q + 2] = __builtin_shufflevector(a[q + 1], a[q + 3], 0, 1, 8, 9, 4, 5, 12, 13);    // 1 and 5
    b[q + 3] = __builtin_shufflevector(a[q + 1], a[q + 3], 2, 3, 10, 11, 6, 7, 14, 15);  // 3 and 7
  }
  constexpr int kFrom[4] = {0, 2, 1, 3};  // b[kFrom[e]] holds entries e and e + 4
  for (int e = 0; e < 4; ++e) {
    r[e] = __builtin_shufflevector(b[kFrom[e]], b[kFrom[e] + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[e + 4] = __builtin_shufflevector(b[kFrom[e]], b[kFrom[e] + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

/// Lane rows out[p] = (column c0 + c's entry p, c = 0..7) of a k x n column-major block, p < K (K a multiple
/// of 8): whole columns loaded and transposed in registers where all eight columns exist, else gathered.
template <class V, index_t K, class T>
[[gnu::always_inline]] inline void load_rows(const T* col0, index_t ld, index_t nc, V (&out)[K]) {
  if (nc == 8) {
    for (index_t p0 = 0; p0 < K; p0 += 8) {
      V r[8];
      for (index_t c = 0; c < 8; ++c) r[c] = load_vector<V>(col0 + c * ld + p0);
      transpose8(r);
      for (index_t p = 0; p < 8; ++p) out[p0 + p] = r[p];
    }
  } else {
    for (index_t p = 0; p < K; ++p) out[p] = row_lanes<V>(col0 + p, ld, nc);
  }
}

/// Writes lane rows xs[p] (p < K) back as columns c0.. of the block (the inverse of load_rows), rounded to T.
template <class V, index_t K, class T>
[[gnu::always_inline]] inline void store_rows(const V (&xs)[K], T* col0, index_t ld, index_t nc) {
  if (nc == 8) {
    for (index_t p0 = 0; p0 < K; p0 += 8) {
      V r[8];
      for (index_t p = 0; p < 8; ++p) r[p] = xs[p0 + p];
      transpose8(r);
      for (index_t c = 0; c < 8; ++c) {
        T* to = col0 + c * ld + p0;
        if constexpr (std::is_same_v<T, double>) {
          std::memcpy(to, &r[c], sizeof(V));
        } else {
          typedef float Narrow __attribute__((vector_size(sizeof(V) / 2)));  // NOLINT(modernize-use-using)
          const Narrow f = __builtin_convertvector(r[c], Narrow);
          std::memcpy(to, &f, sizeof f);
        }
      }
    }
  } else {
    for (index_t p = 0; p < K; ++p)
      for (index_t c = 0; c < nc; ++c) col0[c * ld + p] = static_cast<T>(xs[p][c]);
  }
}

}  // namespace dnmf::solvers::lane_rows
