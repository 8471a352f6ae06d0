// Explicit 4-wide double lanes for the solvers' small per-column kernels (GCC/Clang vector types: AVX2 registers
// on the library's x86-64-v3 baseline, plain code elsewhere), and the sums they form in a fixed order: a result
// depends on k and its inputs, never on the thread count.
//
// The out-of-line kernels here and in the column rules are hidden: a program that instantiates them itself (the
// tests, built for another instruction set) would otherwise take over the library's calls at load time, and the
// library would run code compiled without its FMA contractions (other bits than its own). Since dnmf_core is
// linked with -Bsymbolic-functions (CMakeLists.txt) that holds for every function of the library; hidden also
// keeps these out of its exported symbols.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "dnmf/index.hpp"

namespace dnmf::solvers {

/// Four doubles in one vector register.
using Lanes = double __attribute__((vector_size(32)));

/// The next sizeof(V) / 8 values at y as a vector V of doubles (an unaligned load; floats are widened), for any
/// width: Lanes here, eight doubles in the AVX-512 kernels (each width is its own instantiation, so an AVX-512
/// copy never stands in for the baseline's).
template <class V, class T>
[[gnu::always_inline]] inline V load_vector(const T* y) {
  if constexpr (std::is_same_v<T, double>) {
    V v;
    std::memcpy(&v, y, sizeof v);
    return v;
  } else {
    // A typedef: GCC drops the vector_size of an alias declaration whose size depends on V.
    typedef float Floats __attribute__((vector_size(sizeof(V) / 2)));  // NOLINT(modernize-use-using)
    Floats f;
    std::memcpy(&f, y, sizeof f);
    return __builtin_convertvector(f, V);
  }
}

/// y[0..3] as doubles (an unaligned load; floats are widened).
template <class T>
[[gnu::always_inline]] inline Lanes load_lanes(const T* y) {
  return load_vector<Lanes>(y);
}

/// Stores v at to[0..3] (an unaligned store).
[[gnu::always_inline]] inline void store_lanes(double* to, Lanes v) { std::memcpy(to, &v, sizeof v); }

/// v in all four lanes.
[[gnu::always_inline]] inline Lanes splat(double v) { return Lanes{v, v, v, v}; }

/// (v0 + v1) + (v2 + v3): the lanes' fixed summation order.
[[gnu::always_inline]] inline double lane_sum(Lanes v) { return (v[0] + v[1]) + (v[2] + v[3]); }

/// {lane_sum(a0), lane_sum(a1), lane_sum(a2), lane_sum(a3)} in one vector, the same bits: pairs first, then the
/// pairs' sums (two lane shuffles and three adds for four sums, where four lane_sums take twelve operations).
[[gnu::always_inline]] inline Lanes lane_sums(Lanes a0, Lanes a1, Lanes a2, Lanes a3) {
  const Lanes p01 = __builtin_shufflevector(a0, a1, 0, 4, 2, 6) + __builtin_shufflevector(a0, a1, 1, 5, 3, 7);
  const Lanes p23 = __builtin_shufflevector(a2, a3, 0, 4, 2, 6) + __builtin_shufflevector(a2, a3, 1, 5, 3, 7);
  return __builtin_shufflevector(p01, p23, 0, 1, 4, 5) + __builtin_shufflevector(p01, p23, 2, 3, 6, 7);
}

/// yᵀx in double: lane t sums the entries l ≡ t (mod 4), the tail goes to lane 0.
template <class T, class U>
[[gnu::always_inline]] inline double lane_dot(const T* y, const U* x, index_t k) {
  Lanes acc = {0, 0, 0, 0};
  index_t l = 0;
  for (; l + 4 <= k; l += 4) acc += load_lanes(y + l) * load_lanes(x + l);
  for (; l < k; ++l) acc[0] += static_cast<double>(y[l]) * static_cast<double>(x[l]);
  return lane_sum(acc);
}

namespace detail {

/// Rows [l0, l0 + 4·NV) of gram_times, held in NV registers over the whole sum.
template <int NV, class T, class U>
[[gnu::always_inline]] inline void gram_times_rows(const T* g, index_t ldg, const U* x, index_t k, index_t l0,
                                                   double* out) {
  Lanes acc[NV];
  for (int r = 0; r < NV; ++r) std::memcpy(&acc[r], out + l0 + 4 * r, sizeof(Lanes));
  for (index_t p = 0; p < k; ++p) {
    const auto xp = static_cast<double>(x[p]);
    const Lanes xv = {xp, xp, xp, xp};
    for (int r = 0; r < NV; ++r) acc[r] += load_lanes(g + p * ldg + l0 + 4 * r) * xv;
  }
  for (int r = 0; r < NV; ++r) std::memcpy(out + l0 + 4 * r, &acc[r], sizeof(Lanes));
}

/// Rows [l0, l0 + 4·NV) of gram_times for two vectors at once: each g load serves both, and the 2·NV chains
/// hide the FMA latency one vector's NV chains leave exposed. Every sum is the one gram_times_rows forms.
template <int NV, class T, class U>
[[gnu::always_inline]] inline void gram_times_rows_pair(const T* g, index_t ldg, const U* x0, const U* x1, index_t k,
                                                        index_t l0, double* out0, double* out1) {
  Lanes acc0[NV], acc1[NV];
  for (int r = 0; r < NV; ++r) {
    std::memcpy(&acc0[r], out0 + l0 + 4 * r, sizeof(Lanes));
    std::memcpy(&acc1[r], out1 + l0 + 4 * r, sizeof(Lanes));
  }
  for (index_t p = 0; p < k; ++p) {
    const auto a = static_cast<double>(x0[p]);
    const auto b = static_cast<double>(x1[p]);
    const Lanes av = {a, a, a, a};
    const Lanes bv = {b, b, b, b};
    for (int r = 0; r < NV; ++r) {
      const Lanes gv = load_lanes(g + p * ldg + l0 + 4 * r);
      acc0[r] += gv * av;
      acc1[r] += gv * bv;
    }
  }
  for (int r = 0; r < NV; ++r) {
    std::memcpy(out0 + l0 + 4 * r, &acc0[r], sizeof(Lanes));
    std::memcpy(out1 + l0 + 4 * r, &acc1[r], sizeof(Lanes));
  }
}

}  // namespace detail

/// out[l] += Σ_p g[l + p·ldg] x[p] for l < k (a k x k matrix, column-major, times a vector): each out[l] summed
/// over p in order, as the plain loop `for p: for l: out[l] += g(l, p) x[p]` sums it, but with up to 16 rows held
/// in registers (summed through memory, every p waits on the previous p's stores of the same k values).
template <class T, class U>
[[gnu::visibility("hidden")]] void gram_times(const T* g, index_t ldg, const U* x, index_t k, double* out) {
  const index_t body = k / 4 * 4;
  index_t l0 = 0;
  for (; l0 + 16 <= body; l0 += 16) detail::gram_times_rows<4>(g, ldg, x, k, l0, out);
  switch ((body - l0) / 4) {
    case 3:
      detail::gram_times_rows<3>(g, ldg, x, k, l0, out);
      break;
    case 2:
      detail::gram_times_rows<2>(g, ldg, x, k, l0, out);
      break;
    case 1:
      detail::gram_times_rows<1>(g, ldg, x, k, l0, out);
      break;
    default:
      break;
  }
  for (index_t p = 0; p < k; ++p) {
    const auto xp = static_cast<double>(x[p]);
    for (index_t l = body; l < k; ++l) out[l] += static_cast<double>(g[p * ldg + l]) * xp;
  }
}

/// gram_times for two vectors, x0 into out0 and x1 into out1, with the same sums to the bit as two calls.
template <class T, class U>
[[gnu::visibility("hidden")]] void gram_times_pair(const T* g, index_t ldg, const U* x0, const U* x1, index_t k,
                                                   double* out0, double* out1) {
  const index_t body = k / 4 * 4;
  index_t l0 = 0;
  for (; l0 + 16 <= body; l0 += 16) detail::gram_times_rows_pair<4>(g, ldg, x0, x1, k, l0, out0, out1);
  switch ((body - l0) / 4) {
    case 3:
      detail::gram_times_rows_pair<3>(g, ldg, x0, x1, k, l0, out0, out1);
      break;
    case 2:
      detail::gram_times_rows_pair<2>(g, ldg, x0, x1, k, l0, out0, out1);
      break;
    case 1:
      detail::gram_times_rows_pair<1>(g, ldg, x0, x1, k, l0, out0, out1);
      break;
    default:
      break;
  }
  for (index_t p = 0; p < k; ++p) {
    const auto a = static_cast<double>(x0[p]);
    const auto b = static_cast<double>(x1[p]);
    for (index_t l = body; l < k; ++l) {
      out0[l] += static_cast<double>(g[p * ldg + l]) * a;
      out1[l] += static_cast<double>(g[p * ldg + l]) * b;
    }
  }
}

}  // namespace dnmf::solvers
