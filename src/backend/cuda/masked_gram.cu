// The masked HALS and BPP kernels (masked_launch.hpp), term for term as the host implementation in
// backend/masked_device_host.cpp writes them (double arithmetic on values read in T; the HALS step itself is
// backend/masked_steps.hpp, shared by both).
#include "backend/cuda/check.hpp"
#include "backend/cuda/masked_launch.hpp"
#include "backend/cuda/reduce.cuh"
#include "backend/masked_steps.hpp"

namespace dnmf::backend::cuda {
namespace {

template <class T>
__global__ void square_kernel(const T* x, T* out, index_t count) {
  for (index_t e = grid_first(); e < count; e += grid_stride())
    out[e] = static_cast<T>(static_cast<double>(x[e]) * static_cast<double>(x[e]));
}

template <class T>
__global__ void weighted_residual_kernel(const T* wa, const T* w, T* q, index_t count) {
  for (index_t e = grid_first(); e < count; e += grid_stride())
    q[e] = static_cast<T>(static_cast<double>(wa[e]) - static_cast<double>(w[e]) * static_cast<double>(q[e]));
}

template <class T>
__global__ void hals_coordinate_kernel(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta,
                                       index_t count, double l1, double l2, double eps) {
  for (index_t c = grid_first(); c < count; c += grid_stride())
    delta[c] = hals_step(x[c * ldx], num[c], den[c * ldden], l1, l2, eps);
}

template <class T>
__global__ void weighted_rank_one_kernel(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                                         index_t sv) {
  const index_t total = m * n;
  for (index_t at = grid_first(); at < total; at += grid_stride()) {
    const index_t i = at % m, j = at / m;
    const double vj = static_cast<double>(v[j * sv]);
    if (vj == 0) continue;  // as the host: an entry whose column did not move is left untouched
    e[at] =
        static_cast<T>(static_cast<double>(e[at]) - static_cast<double>(w[at]) * static_cast<double>(u[i * su]) * vj);
  }
}

// One thread per (pair, column): the pair index t of (p, q), p <= q, is q(q+1)/2 + p.
template <class T>
__global__ void pair_products_kernel(const T* y, index_t k, index_t count, T* out) {
  const index_t pairs = k * (k + 1) / 2, total = pairs * count;
  for (index_t at = grid_first(); at < total; at += grid_stride()) {
    const index_t i = at / pairs, t = at % pairs;
    index_t q = 0;
    while ((q + 1) * (q + 2) / 2 <= t) ++q;  // k is small: a short scan, no square root rounding
    const index_t p = t - q * (q + 1) / 2;
    out[at] = static_cast<T>(static_cast<double>(y[i * k + p]) * static_cast<double>(y[i * k + q]));
  }
}

}  // namespace

template <class T>
void launch_masked_square(const T* x, T* out, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  square_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, out, count);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_weighted_residual(const T* wa, const T* w, T* q, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  weighted_residual_kernel<<<blocks_for(count), kThreads, 0, stream>>>(wa, w, q, count);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_hals_coordinate(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta,
                                   index_t count, double l1, double l2, double eps, cudaStream_t stream) {
  if (count == 0) return;
  hals_coordinate_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, ldx, num, den, ldden, delta, count, l1, l2,
                                                                     eps);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_weighted_rank_one(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                                     index_t sv, cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  weighted_rank_one_kernel<<<blocks_for(m * n), kThreads, 0, stream>>>(e, w, m, n, u, su, v, sv);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_pair_products(const T* y, index_t k, index_t count, T* out, cudaStream_t stream) {
  const index_t total = k * (k + 1) / 2 * count;
  if (total == 0) return;
  pair_products_kernel<<<blocks_for(total), kThreads, 0, stream>>>(y, k, count, out);
  DNMF_CUDA_CHECK_LAUNCH();
}

#define DNMF_INSTANTIATE(T)                                                                                     \
  template void launch_masked_square<T>(const T*, T*, index_t, cudaStream_t);                                   \
  template void launch_masked_weighted_residual<T>(const T*, const T*, T*, index_t, cudaStream_t);              \
  template void launch_masked_hals_coordinate<T>(T*, index_t, const T*, const T*, index_t, T*, index_t, double, \
                                                 double, double, cudaStream_t);                                 \
  template void launch_masked_weighted_rank_one<T>(T*, const T*, index_t, index_t, const T*, index_t, const T*, \
                                                   index_t, cudaStream_t);                                      \
  template void launch_masked_pair_products<T>(const T*, index_t, index_t, T*, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
