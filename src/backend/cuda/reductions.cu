// Reductions over dense views: sum and squared norm, dot product, and the dense KL ratio with its sums.
// Two stages (block partials, then one finishing block) rather than atomics, so a sum does not depend on
// the order blocks happen to finish in.
#include "backend/cuda/check.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/reduce.cuh"
#include "backend/update_rules.hpp"

namespace dnmf::backend::cuda {
namespace {

template <class T>
__global__ void sum_squares_kernel(const T* a, index_t rows, index_t total, index_t ld, double2* partials) {
  double2 s = make_double2(0.0, 0.0);
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) {
    const double v = static_cast<double>(a[strided_offset(idx, rows, ld)]);
    s.x += v;
    s.y += v * v;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <class T>
__global__ void dot_kernel(const T* x, index_t ldx, const T* y, index_t ldy, index_t rows, index_t total,
                           double2* partials) {
  double2 s = make_double2(0.0, 0.0);
  for (index_t idx = grid_first(); idx < total; idx += grid_stride())
    s.x +=
        static_cast<double>(x[strided_offset(idx, rows, ldx)]) * static_cast<double>(y[strided_offset(idx, rows, ldy)]);
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// The model tile m becomes the ratio in place; the sums are those of ReferenceKernels::kl_multiply.
template <class T>
__global__ void kl_ratio_dense_kernel(const T* a, index_t lda, T* m, index_t ldm, index_t rows, index_t total,
                                      double2* partials) {
  double2 s = make_double2(0.0, 0.0);  // x: Σ a·log(a/m), y: Σ a·m
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) {
    const double av = static_cast<double>(a[strided_offset(idx, rows, lda)]);
    T& mv = m[strided_offset(idx, rows, ldm)];
    const double md = static_cast<double>(mv);
    const double guarded = fmax(md, kl_model_floor);
    s.y += av * md;
    if (av > 0) s.x += av * log(av / guarded);
    mv = static_cast<T>(av == 0 ? 0.0 : av / guarded);
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void finish_kernel(const double2* partials, int blocks, double* acc, bool accumulate) {
  double2 s = make_double2(0.0, 0.0);
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    s.x += partials[b].x;
    s.y += partials[b].y;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) {
    acc[0] = (accumulate ? acc[0] : 0.0) + s.x;
    acc[1] = (accumulate ? acc[1] : 0.0) + s.y;
  }
}

double2* as_pairs(double* partials) { return reinterpret_cast<double2*>(partials); }

}  // namespace

void finish_reduction(const double* partials, int blocks, double* acc, bool accumulate, cudaStream_t stream) {
  finish_kernel<<<1, kThreads, 0, stream>>>(reinterpret_cast<const double2*>(partials), blocks, acc, accumulate);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_sum_squares(CView<T> a, double* partials, double* acc, cudaStream_t stream) {
  const int blocks = blocks_for(a.size(), kReduceBlocks);
  sum_squares_kernel<<<blocks, kThreads, 0, stream>>>(a.data, a.rows, a.size(), a.ld, as_pairs(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, false, stream);
}

template <class T>
void launch_dot(CView<T> x, CView<T> y, double* partials, double* acc, cudaStream_t stream) {
  const int blocks = blocks_for(x.size(), kReduceBlocks);
  dot_kernel<<<blocks, kThreads, 0, stream>>>(x.data, x.ld, y.data, y.ld, x.rows, x.size(), as_pairs(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, false, stream);
}

template <class T>
void launch_kl_ratio_dense(CView<T> a, View<T> m, double* partials, double* acc, bool accumulate, cudaStream_t stream) {
  const int blocks = blocks_for(a.size(), kReduceBlocks);
  kl_ratio_dense_kernel<<<blocks, kThreads, 0, stream>>>(a.data, a.ld, m.data, m.ld, a.rows, a.size(),
                                                         as_pairs(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, accumulate, stream);
}

#define DNMF_INSTANTIATE(T)                                                        \
  template void launch_sum_squares<T>(CView<T>, double*, double*, cudaStream_t);   \
  template void launch_dot<T>(CView<T>, CView<T>, double*, double*, cudaStream_t); \
  template void launch_kl_ratio_dense<T>(CView<T>, View<T>, double*, double*, bool, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
