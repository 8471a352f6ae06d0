// The masked iteration's kernels (masked_launch.hpp), term for term as the host implementation in
// backend/masked_device_host.cpp writes them (double arithmetic on values read in T).
#include "backend/cuda/check.hpp"
#include "backend/cuda/masked_launch.hpp"
#include "backend/cuda/reduce.cuh"
#include "backend/update_rules.hpp"

namespace dnmf::backend::cuda {
namespace {

template <class T>
__global__ void weight_kernel(const T* w, T* q, index_t count) {
  for (index_t e = grid_first(); e < count; e += grid_stride())
    q[e] = static_cast<T>(static_cast<double>(w[e]) * static_cast<double>(q[e]));
}

template <class T>
__global__ void kl_ratio_kernel(const T* wa, const T* w, T* q, index_t count, double2* partials) {
  double2 s = make_double2(0.0, 0.0);
  for (index_t e = grid_first(); e < count; e += grid_stride()) {
    const double we = static_cast<double>(w[e]), wae = static_cast<double>(wa[e]), qe = static_cast<double>(q[e]);
    if (we > 0) {
      const double a = wae / we;
      s.x += we * (a - qe) * (a - qe);
      s.y += we * qe;
    }
    if (wae == 0) {
      q[e] = T(0);
      continue;
    }
    const double qf = fmax(qe, kl_model_floor);
    s.y += wae * log(wae / we / qf);
    q[e] = static_cast<T>(wae / qf);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <class T>
__global__ void residual_kernel(const T* wa, const T* w, const T* q, index_t count, double2* partials) {
  double2 s = make_double2(0.0, 0.0);
  for (index_t e = grid_first(); e < count; e += grid_stride()) {
    const double we = static_cast<double>(w[e]);
    if (!(we > 0)) continue;
    const double r = static_cast<double>(wa[e]) / we - static_cast<double>(q[e]);
    s.x += we * r * r;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <class T>
__global__ void multiplicative_kernel(T* x, const T* b, const T* d, index_t count, double l1, double l2, double eps) {
  for (index_t e = grid_first(); e < count; e += grid_stride()) {
    const double xe = static_cast<double>(x[e]);
    x[e] = static_cast<T>(xe * static_cast<double>(b[e]) / (static_cast<double>(d[e]) + l1 + l2 * xe + eps));
  }
}

double2* as_pairs(double* partials) { return reinterpret_cast<double2*>(partials); }

}  // namespace

template <class T>
void launch_masked_weight(const T* w, T* q, index_t count, cudaStream_t stream) {
  if (count == 0) return;
  weight_kernel<<<blocks_for(count), kThreads, 0, stream>>>(w, q, count);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_kl_ratio(const T* wa, const T* w, T* q, index_t count, double* partials, double* acc,
                            cudaStream_t stream) {
  const int blocks = blocks_for(count, kReduceBlocks);
  kl_ratio_kernel<<<blocks, kThreads, 0, stream>>>(wa, w, q, count, as_pairs(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, false, stream);
}

template <class T>
void launch_masked_residual(const T* wa, const T* w, const T* q, index_t count, double* partials, double* acc,
                            cudaStream_t stream) {
  const int blocks = blocks_for(count, kReduceBlocks);
  residual_kernel<<<blocks, kThreads, 0, stream>>>(wa, w, q, count, as_pairs(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, false, stream);
}

template <class T>
void launch_masked_multiplicative(T* x, const T* b, const T* d, index_t count, double l1, double l2, double eps,
                                  cudaStream_t stream) {
  if (count == 0) return;
  multiplicative_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, b, d, count, l1, l2, eps);
  DNMF_CUDA_CHECK_LAUNCH();
}

#define DNMF_INSTANTIATE(T)                                                                                       \
  template void launch_masked_weight<T>(const T*, T*, index_t, cudaStream_t);                                     \
  template void launch_masked_kl_ratio<T>(const T*, const T*, T*, index_t, double*, double*, cudaStream_t);       \
  template void launch_masked_residual<T>(const T*, const T*, const T*, index_t, double*, double*, cudaStream_t); \
  template void launch_masked_multiplicative<T>(T*, const T*, const T*, index_t, double, double, double, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
