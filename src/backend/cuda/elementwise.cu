// Elementwise kernels on factor-sized views: fill, scale, mirror, row sums, offset rebasing.
#include <cstdint>

#include "backend/cuda/check.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/reduce.cuh"

namespace dnmf::backend::cuda {
namespace {

template <class T>
__global__ void fill_kernel(T* x, index_t rows, index_t total, index_t ld, T value) {
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) x[strided_offset(idx, rows, ld)] = value;
}

template <class T>
__global__ void scale_kernel(T* x, index_t rows, index_t total, index_t ld, T beta) {
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) {
    T& v = x[strided_offset(idx, rows, ld)];
    v = beta == T(0) ? T(0) : beta * v;
  }
}

// Entry (p, q) with p < q takes the value of (q, p): reads touch the lower triangle only, writes the
// upper one only, so threads never race.
template <class T>
__global__ void mirror_kernel(T* g, index_t k, index_t ld) {
  for (index_t idx = grid_first(); idx < k * k; idx += grid_stride()) {
    const index_t p = idx % k;
    const index_t q = idx / k;
    if (p < q) g[p + q * ld] = g[q + p * ld];
  }
}

// One block per row: threads stride over the columns, then a block reduction (fixed order).
template <class T>
__global__ void row_sums_kernel(const T* x, index_t cols, index_t ld, T* out) {
  const index_t l = blockIdx.x;
  double s = 0;
  for (index_t c = threadIdx.x; c < cols; c += blockDim.x) s += static_cast<double>(x[l + c * ld]);
  const double2 total = block_sum(make_double2(s, 0.0));
  if (threadIdx.x == 0) out[l] = static_cast<T>(total.x);
}

template <class S, class D>
__global__ void rebase_kernel(const S* src, index_t count, index_t base, D* dst) {
  for (index_t i = grid_first(); i < count; i += grid_stride())
    dst[i] = static_cast<D>(static_cast<index_t>(src[i]) - base);
}

}  // namespace

template <class T>
void launch_fill(View<T> x, T value, cudaStream_t stream) {
  if (x.empty()) return;
  fill_kernel<<<blocks_for(x.size()), kThreads, 0, stream>>>(x.data, x.rows, x.size(), x.ld, value);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_scale(View<T> x, T beta, cudaStream_t stream) {
  if (x.empty() || beta == T(1)) return;
  scale_kernel<<<blocks_for(x.size()), kThreads, 0, stream>>>(x.data, x.rows, x.size(), x.ld, beta);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_mirror_lower(View<T> g, cudaStream_t stream) {
  if (g.rows < 2) return;
  mirror_kernel<<<blocks_for(g.rows * g.rows), kThreads, 0, stream>>>(g.data, g.rows, g.ld);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_row_sums(CView<T> x, T* out, cudaStream_t stream) {
  if (x.rows == 0) return;
  row_sums_kernel<<<static_cast<unsigned>(x.rows), kThreads, 0, stream>>>(x.data, x.cols, x.ld, out);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class S, class D>
void launch_rebase_offsets(const S* src, index_t count, index_t base, D* dst, cudaStream_t stream) {
  if (count == 0) return;
  rebase_kernel<<<blocks_for(count), kThreads, 0, stream>>>(src, count, base, dst);
  DNMF_CUDA_CHECK_LAUNCH();
}

#define DNMF_INSTANTIATE(T)                                    \
  template void launch_fill<T>(View<T>, T, cudaStream_t);      \
  template void launch_scale<T>(View<T>, T, cudaStream_t);     \
  template void launch_mirror_lower<T>(View<T>, cudaStream_t); \
  template void launch_row_sums<T>(CView<T>, T*, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

template void launch_rebase_offsets<std::int32_t, std::int32_t>(const std::int32_t*, index_t, index_t, std::int32_t*,
                                                                cudaStream_t);
template void launch_rebase_offsets<std::int64_t, std::int64_t>(const std::int64_t*, index_t, index_t, std::int64_t*,
                                                                cudaStream_t);
template void launch_rebase_offsets<std::int64_t, std::int32_t>(const std::int64_t*, index_t, index_t, std::int32_t*,
                                                                cudaStream_t);
template void launch_rebase_offsets<std::int32_t, std::int64_t>(const std::int32_t*, index_t, index_t, std::int64_t*,
                                                                cudaStream_t);

}  // namespace dnmf::backend::cuda
