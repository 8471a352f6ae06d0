// Per-entry steps of the masked iteration that the host implementation of MaskedDevice and the CUDA kernels
// both call, so that the two compute the same expression in the same order.
#pragma once

#ifdef __CUDACC__
#define DNMF_MASKED_STEP __host__ __device__ inline
#else
#define DNMF_MASKED_STEP inline
#endif

namespace dnmf::backend {

/// HALS's exact coordinate step (solvers/hals.hpp) with num = b_l - (G x)_l and den = G_ll: x becomes
/// max(0, x + (num - l1 - l2 x) / (den + l2)) unless den + l2 is not above eps (a dead component: left alone, or 0
/// under an L1 penalty, as in solvers/hals.hpp).
/// Returns new - old.
template <class T>
DNMF_MASKED_STEP T hals_step(T& x, T num, T den, double l1, double l2, double eps) {
  const double diag = static_cast<double>(den) + l2;
  const bool dead = !(diag > eps);
  if (dead && !(l1 > 0)) return T(0);
  const double old = static_cast<double>(x);
  const double next = dead ? 0.0 : old + (static_cast<double>(num) - l1 - l2 * old) / diag;
  x = static_cast<T>(next > 0.0 ? next : 0.0);
  return static_cast<T>(static_cast<double>(x) - old);
}

}  // namespace dnmf::backend

#undef DNMF_MASKED_STEP
