// The stored-pattern kernels of the masked iteration (--unstored missing; masked_launch.hpp): the model on the
// pattern (a sampled dense-dense product) and the products with the pattern's values. Our own kernels rather
// than cuSPARSE's SDDMM and SpMM: a warp per column sums each output in entry order, exactly as the host
// implementation (backend/masked_device_host.cpp) does, so the two agree to the last bits and the result never
// depends on the library's choice of algorithm.
#include "backend/cuda/check.hpp"
#include "backend/cuda/masked_launch.hpp"
#include "backend/cuda/reduce.cuh"

namespace dnmf::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

// A warp per column j; its lanes take the column's entries in turn.
template <class T>
__global__ void sampled_product_kernel(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x,
                                       index_t k, T* q) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const index_t warps = static_cast<index_t>(gridDim.x) * kWarpsPerBlock;
  for (index_t j = static_cast<index_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); j < cols; j += warps) {
    const T* xj = x + j * k;
    for (index_t e = ptr[j] + lane; e < ptr[j + 1]; e += 32) {
      const T* yi = y + row[e] * k;
      double s = 0;
      for (index_t l = 0; l < k; ++l) s += static_cast<double>(yi[l]) * static_cast<double>(xj[l]);
      q[e] = static_cast<T>(s);
    }
  }
}

// A warp per column j; its lanes take the k outputs (neighbouring entries of y_i: coalesced reads).
template <class T>
__global__ void sparse_product_kernel(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y,
                                      index_t k, T* out) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const index_t warps = static_cast<index_t>(gridDim.x) * kWarpsPerBlock;
  for (index_t j = static_cast<index_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); j < cols; j += warps) {
    const index_t first = ptr[j], last = ptr[j + 1];
    for (index_t l = lane; l < k; l += 32) {
      double s = 0;
      for (index_t e = first; e < last; ++e)
        s += static_cast<double>(value[e]) * static_cast<double>(y[row[e] * k + l]);
      out[j * k + l] = static_cast<T>(s);
    }
  }
}

int blocks_for_columns(index_t cols) {
  const index_t b = (cols + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

}  // namespace

template <class T>
void launch_masked_sampled_product(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x,
                                   index_t k, T* q, cudaStream_t stream) {
  if (cols == 0) return;
  sampled_product_kernel<<<blocks_for_columns(cols), kThreads, 0, stream>>>(cols, ptr, row, y, x, k, q);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_masked_sparse_product(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y,
                                  index_t k, T* out, cudaStream_t stream) {
  if (cols == 0 || k == 0) return;
  sparse_product_kernel<<<blocks_for_columns(cols), kThreads, 0, stream>>>(cols, ptr, row, value, y, k, out);
  DNMF_CUDA_CHECK_LAUNCH();
}

#define DNMF_INSTANTIATE(T)                                                                                            \
  template void launch_masked_sampled_product<T>(index_t, const index_t*, const index_t*, const T*, const T*, index_t, \
                                                 T*, cudaStream_t);                                                    \
  template void launch_masked_sparse_product<T>(index_t, const index_t*, const index_t*, const T*, const T*, index_t,  \
                                                T*, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
