// The KL ratio at the stored entries of a CSR matrix: one warp per row, its lanes over the row's entries.
// The product with the ratio is left to cuSPARSE (same structure, new values).
#include <cstdint>

#include "backend/cuda/check.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/reduce.cuh"
#include "backend/update_rules.hpp"

namespace dnmf::backend::cuda {
namespace {

template <class T, class I>
__global__ void kl_ratio_csr_kernel(index_t rows, const I* offsets, const I* indices, const T* values, const T* wt,
                                    index_t ldw, const T* h, index_t ldh, index_t k, T* ratio, double2* partials) {
  const int lane = threadIdx.x & 31;
  const index_t warps = static_cast<index_t>(gridDim.x) * (blockDim.x / 32);
  double2 s = make_double2(0.0, 0.0);  // x: Σ a·log(a/m), y: Σ a·m
  for (index_t i = grid_first() / 32; i < rows; i += warps) {
    const T* wc = wt + i * ldw;  // the same column for the whole warp: served by broadcast
    const index_t end = static_cast<index_t>(offsets[i + 1]);
    for (index_t p = static_cast<index_t>(offsets[i]) + lane; p < end; p += 32) {
      const T* hc = h + static_cast<index_t>(indices[p]) * ldh;
      double md = 0;
      for (index_t l = 0; l < k; ++l) md += static_cast<double>(wc[l]) * static_cast<double>(hc[l]);
      const double av = static_cast<double>(values[p]);
      const double guarded = fmax(md, kl_model_floor);
      s.y += av * md;
      if (av > 0) s.x += av * log(av / guarded);
      ratio[p] = static_cast<T>(av == 0 ? 0.0 : av / guarded);
    }
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

}  // namespace

template <class T, class I>
void launch_kl_ratio_csr(index_t rows, const I* offsets, const I* indices, const T* values, CView<T> wt, CView<T> h,
                         T* ratio, double* partials, double* acc, cudaStream_t stream) {
  const int blocks = blocks_for(rows * 32, kReduceBlocks);  // a warp per row
  kl_ratio_csr_kernel<<<blocks, kThreads, 0, stream>>>(rows, offsets, indices, values, wt.data, wt.ld, h.data, h.ld,
                                                       wt.rows, ratio, reinterpret_cast<double2*>(partials));
  DNMF_CUDA_CHECK_LAUNCH();
  finish_reduction(partials, blocks, acc, false, stream);
}

#define DNMF_INSTANTIATE(T, I)                                                                                    \
  template void launch_kl_ratio_csr<T, I>(index_t, const I*, const I*, const T*, CView<T>, CView<T>, T*, double*, \
                                          double*, cudaStream_t);
DNMF_INSTANTIATE(float, std::int32_t)
DNMF_INSTANTIATE(float, std::int64_t)
DNMF_INSTANTIATE(double, std::int32_t)
DNMF_INSTANTIATE(double, std::int64_t)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
