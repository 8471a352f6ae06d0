// The per-column update rules on the GPU, term for term as the host versions in solvers/ (mu_frobenius.hpp,
// mu_kl.hpp, hals.hpp) write them (double arithmetic on values read in T), so the cuda backend follows the
// reference to rounding.
#include "backend/cuda/check.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/reduce.cuh"

namespace dnmf::backend::cuda {
namespace {

// HALS keeps the Gram matrix in shared memory up to this k (64² doubles = 32 KiB); larger k reads it
// from global memory (cached: every thread of a block walks the same entries).
constexpr index_t kHalsSharedK = 64;

// One thread per entry (l, c). The denominator needs the whole old column, so the result goes to `next`
// and is copied over x afterwards: threads never see a half-updated column.
template <class T>
__global__ void mu_kernel(UpdateRule rule, const T* x, index_t ldx, const T* numer, index_t ldn, const T* g,
                          index_t ldg, index_t k, index_t total, T* next) {
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) {
    const index_t l = idx % k;
    const index_t c = idx / k;
    const T* xc = x + c * ldx;
    double s = 0;
    for (index_t p = 0; p < k; ++p) s += static_cast<double>(g[l + p * ldg]) * static_cast<double>(xc[p]);
    const double xl = static_cast<double>(xc[l]);
    const double denom = s + rule.l1 + rule.l2 * xl + rule.eps;
    next[idx] = static_cast<T>(xl * static_cast<double>(numer[l + c * ldn]) / denom);
  }
}

template <class T>
__global__ void kl_kernel(UpdateRule rule, T* x, index_t ldx, const T* numer, index_t ldn, const T* y_row_sums,
                          index_t k, index_t total) {
  for (index_t idx = grid_first(); idx < total; idx += grid_stride()) {
    const index_t l = idx % k;
    const index_t c = idx / k;
    T& xv = x[l + c * ldx];
    const double xl = static_cast<double>(xv);
    const double denom = static_cast<double>(y_row_sums[l]) + rule.l1 + rule.l2 * xl + rule.eps;
    xv = static_cast<T>(xl * static_cast<double>(numer[l + c * ldn]) / denom);
  }
}

template <class T, bool kShared>
__device__ inline double gram_at(const double* shared, const T* g, index_t ldg, index_t k, index_t p, index_t q) {
  if constexpr (kShared) {
    return shared[p + q * k];
  } else {
    return static_cast<double>(g[p + q * ldg]);
  }
}

// One thread per column: the k coordinates are updated in order, each using those already updated
// (Gauss-Seidel), which is why a column cannot be split between threads.
template <class T, bool kShared>
__global__ void hals_kernel(UpdateRule rule, T* x, index_t ldx, const T* numer, index_t ldn, const T* g, index_t ldg,
                            index_t k, index_t cols) {
  extern __shared__ double gram_shared[];
  if constexpr (kShared) {
    for (index_t i = threadIdx.x; i < k * k; i += blockDim.x)
      gram_shared[i] = static_cast<double>(g[(i % k) + (i / k) * ldg]);
    __syncthreads();
  }
  for (index_t c = grid_first(); c < cols; c += grid_stride()) {
    T* xc = x + c * ldx;
    const T* nc = numer + c * ldn;
    for (index_t l = 0; l < k; ++l) {
      const double diag = gram_at<T, kShared>(gram_shared, g, ldg, k, l, l) + rule.l2;
      if (!(diag > rule.eps)) {  // a dead component: left alone, or 0 under an L1 penalty (hals.hpp)
        if (rule.l1 > 0) xc[l] = T(0);
        continue;
      }
      double grad = static_cast<double>(nc[l]) - rule.l1 - rule.l2 * static_cast<double>(xc[l]);
      for (index_t p = 0; p < k; ++p)
        grad -= gram_at<T, kShared>(gram_shared, g, ldg, k, l, p) * static_cast<double>(xc[p]);
      xc[l] = static_cast<T>(fmax(0.0, static_cast<double>(xc[l]) + grad / diag));
    }
  }
}

}  // namespace

template <class T>
void launch_mu_update(const UpdateRule& rule, CView<T> x, CView<T> numer, CView<T> g, T* next, cudaStream_t stream) {
  if (x.empty()) return;
  mu_kernel<<<blocks_for(x.size()), kThreads, 0, stream>>>(rule, x.data, x.ld, numer.data, numer.ld, g.data, g.ld,
                                                           x.rows, x.size(), next);
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_kl_update(const UpdateRule& rule, View<T> x, CView<T> numer, const T* y_row_sums, cudaStream_t stream) {
  if (x.empty()) return;
  kl_kernel<<<blocks_for(x.size()), kThreads, 0, stream>>>(rule, x.data, x.ld, numer.data, numer.ld, y_row_sums, x.rows,
                                                           x.size());
  DNMF_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_hals_update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, cudaStream_t stream) {
  if (x.empty()) return;
  // Few threads per block: one thread per column, so small blocks spread the columns over more SMs.
  constexpr int threads = 128;
  const index_t want = (x.cols + threads - 1) / threads;
  const int blocks = static_cast<int>(want > 65535 ? 65535 : want);
  if (x.rows <= kHalsSharedK) {
    const std::size_t shared = static_cast<std::size_t>(x.rows * x.rows) * sizeof(double);
    hals_kernel<T, true>
        <<<blocks, threads, shared, stream>>>(rule, x.data, x.ld, numer.data, numer.ld, g.data, g.ld, x.rows, x.cols);
  } else {
    hals_kernel<T, false>
        <<<blocks, threads, 0, stream>>>(rule, x.data, x.ld, numer.data, numer.ld, g.data, g.ld, x.rows, x.cols);
  }
  DNMF_CUDA_CHECK_LAUNCH();
}

#define DNMF_INSTANTIATE(T)                                                                             \
  template void launch_mu_update<T>(const UpdateRule&, CView<T>, CView<T>, CView<T>, T*, cudaStream_t); \
  template void launch_kl_update<T>(const UpdateRule&, View<T>, CView<T>, const T*, cudaStream_t);      \
  template void launch_hals_update<T>(const UpdateRule&, View<T>, CView<T>, CView<T>, cudaStream_t);
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
