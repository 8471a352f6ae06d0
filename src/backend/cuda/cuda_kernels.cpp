#include "backend/cuda/cuda_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/cuda/blas_calls.hpp"
#include "backend/cuda/check.hpp"
#include "backend/cuda/context.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/resident.hpp"
#include "backend/cuda/sparse_mm.hpp"
#include "backend/update_rules.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend {
namespace {

using cuda::Context;
using cuda::Slot;

template <class T>
void gemm(Context& c, bool ta, bool tb, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b,
          index_t ldb, T beta, T* out, index_t ldc) {
  DNMF_CUDA_CHECK(cuda::blas::gemm(c.blas(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                                   &alpha, a, std::max<index_t>(lda, 1), b, std::max<index_t>(ldb, 1), &beta, out,
                                   std::max<index_t>(ldc, 1)));
}

// Copies a (possibly strided) device view to a contiguous host array, or back; queued, not waited for.
template <class T>
void view_to_host(Context& c, CView<T> v, T* host) {
  if (v.empty()) return;
  DNMF_CUDA_CHECK(cudaMemcpy2DAsync(host, to_size(v.rows) * sizeof(T), v.data, to_size(v.ld) * sizeof(T),
                                    to_size(v.rows) * sizeof(T), to_size(v.cols), cudaMemcpyDeviceToHost, c.stream()));
}
template <class T>
void host_to_view(Context& c, const T* host, View<T> v) {
  if (v.empty()) return;
  DNMF_CUDA_CHECK(cudaMemcpy2DAsync(v.data, to_size(v.ld) * sizeof(T), host, to_size(v.rows) * sizeof(T),
                                    to_size(v.rows) * sizeof(T), to_size(v.cols), cudaMemcpyHostToDevice, c.stream()));
}

// ANLS-BPP on the host for now: the active-set pivoting is branchy per column and dnmf::nnls_bpp already
// groups columns by passive set. X, the numerator and G go down, X comes back.
template <class T>
int bpp_on_host(Context& c, const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g) {
  const index_t k = x.rows;
  std::vector<T> xh(to_size(k * x.cols)), nh(xh.size()), gh(to_size(k * k));
  view_to_host<T>(c, x, xh.data());
  view_to_host(c, numer, nh.data());
  view_to_host(c, g, gh.data());
  c.synchronize();
  const View<T> xv{xh.data(), k, x.cols, k};
  const int hits =
      update_columns<T>(rule, xv, CView<T>{nh.data(), k, x.cols, k}, CView<T>{gh.data(), k, k, k}, nullptr, 0, x.cols);
  host_to_view(c, xh.data(), x);
  c.synchronize();
  return hits;
}

// KL ratio product on a dense A: per column tile, M = Wtᵀ·H_tile (cuBLAS), R = A ⊘ M with its sums (our
// kernel, in place), then the product with R (cuBLAS). Tiles of about `tile_bytes` bound the scratch while
// keeping each product large enough to run at full rate.
template <class T>
KlSums dense_kl(Context& c, const DenseView<const T>& d, Side side, CView<T> wt, CView<T> h, View<T> out, T beta,
                double tile_bytes) {
  const index_t m = d.rows;
  const index_t n = d.cols;
  const index_t k = wt.rows;
  if (m == 0 || n == 0) {
    cuda::launch_scale(out, beta, c.stream());
    return {};
  }
  const auto budget = static_cast<index_t>(tile_bytes / sizeof(T)) / m;
  const index_t width = std::clamp<index_t>(budget, 1, n);
  T* tile = static_cast<T*>(c.scratch(Slot::tile, to_size(m * width) * sizeof(T)));
  for (index_t first = 0; first < n; first += width) {
    const index_t last = std::min(n, first + width);
    const index_t w = last - first;
    const T* h_tile = h.data + first * h.ld;
    gemm(c, true, false, m, w, k, T(1), wt.data, wt.ld, h_tile, h.ld, T(0), tile, m);
    cuda::launch_kl_ratio_dense(d.columns(first, last), View<T>{tile, m, w, m}, c.partials(), c.accumulator(),
                                first > 0, c.stream());
    if (side == Side::H) {
      gemm(c, false, false, k, w, m, T(1), wt.data, wt.ld, tile, m, beta, out.data + first * out.ld, out.ld);
    } else {
      gemm(c, false, true, k, m, w, T(1), h_tile, h.ld, tile, m, first == 0 ? beta : T(1), out.data, out.ld);
    }
  }
  const auto acc = c.fetch_accumulator();
  return {acc[0], acc[1]};
}

// KL ratio product on a CSR A: the ratio at the stored entries (our kernel), then SpMM with a matrix of the
// same structure holding the ratio.
template <class T>
KlSums csr_kl(Context& c, const CsrView<T>& s, Side side, CView<T> y, CView<T> wt, CView<T> h, View<T> out, T beta) {
  cuda::DeviceCsr a = cuda::resolve(c, s);
  if (a.nnz == 0) {
    cuda::launch_scale(out, beta, c.stream());
    return {};
  }
  T* ratio = static_cast<T*>(c.scratch(Slot::ratio, to_size(a.nnz) * sizeof(T)));
  const auto* values = static_cast<const T*>(a.values);
  if (a.wide) {
    cuda::launch_kl_ratio_csr(a.rows, static_cast<const std::int64_t*>(a.offsets),
                              static_cast<const std::int64_t*>(a.indices), values, wt, h, ratio, c.partials(),
                              c.accumulator(), c.stream());
  } else {
    cuda::launch_kl_ratio_csr(a.rows, static_cast<const std::int32_t*>(a.offsets),
                              static_cast<const std::int32_t*>(a.indices), values, wt, h, ratio, c.partials(),
                              c.accumulator(), c.stream());
  }
  a.values = ratio;
  cuda::spmm(c, a, side, y, out, beta);
  const auto acc = c.fetch_accumulator();
  return {acc[0], acc[1]};
}

}  // namespace

template <class T>
CudaKernels<T>::CudaKernels() : context_(std::make_unique<cuda::Context>()) {}

template <class T>
CudaKernels<T>::~CudaKernels() = default;

template <class T>
T* CudaKernels<T>::allocate(std::size_t count) {
  const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
  void* p = nullptr;
  DNMF_CUDA_CHECK(cudaMalloc(&p, bytes));
  const cudaError_t status = cudaMemsetAsync(p, 0, bytes, context_->stream());
  if (status != cudaSuccess) {
    (void)cudaFree(p);
    cuda::check(status, "cudaMemsetAsync", __FILE__, __LINE__);
  }
  return static_cast<T*>(p);
}

template <class T>
void CudaKernels<T>::deallocate(T* ptr) noexcept {
  if (ptr) (void)cudaFree(ptr);  // cudaFree waits for the device, so queued work on ptr completes first
}

template <class T>
void CudaKernels<T>::copy_to_backend(const T* host, T* dst, std::size_t count) {
  if (count == 0) return;
  DNMF_CUDA_CHECK(cudaMemcpyAsync(dst, host, count * sizeof(T), cudaMemcpyHostToDevice, context_->stream()));
  context_->synchronize();  // the caller may reuse `host` as soon as we return
}

template <class T>
void CudaKernels<T>::copy_to_host(const T* src, T* host, std::size_t count) {
  if (count == 0) return;
  DNMF_CUDA_CHECK(cudaMemcpyAsync(host, src, count * sizeof(T), cudaMemcpyDeviceToHost, context_->stream()));
  context_->synchronize();
}

template <class T>
MatrixRef<T> CudaKernels<T>::make_resident(const MatrixRef<T>& host) {
  auto& store = context_->residents();
  if (const auto* d = std::get_if<DenseView<const T>>(&host)) {
    if (cuda::is_device_pointer(d->data)) return host;  // already on the device
    return store.upload(*d, context_->stream());
  }
  const auto& s = std::get<CsrView<T>>(host);
  if (store.owner_of(s.indptr) != nullptr) return host;  // already resident here
  return store.upload(s, context_->stream());
}

template <class T>
void CudaKernels<T>::multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) {
  const index_t k = y.rows;
  if (k == 0 || out.cols == 0) return;
  auto& c = *context_;
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    const index_t inner = side == Side::H ? d->rows : d->cols;
    if (inner == 0) {
      cuda::launch_scale(out, beta, c.stream());
    } else if (side == Side::H) {
      gemm(c, false, false, k, d->cols, d->rows, T(1), y.data, y.ld, d->data, d->ld, beta, out.data, out.ld);
    } else {
      gemm(c, false, true, k, d->rows, d->cols, T(1), y.data, y.ld, d->data, d->ld, beta, out.data, out.ld);
    }
    return;
  }
  cuda::spmm(c, cuda::resolve(c, std::get<CsrView<T>>(a)), side, y, out, beta);
}

template <class T>
KlSums CudaKernels<T>::kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) {
  const CView<T> wt = side == Side::H ? y : x;
  const CView<T> h = side == Side::H ? x : y;
  if (y.rows == 0) return {};
  if (const auto* d = std::get_if<DenseView<const T>>(&a))
    return dense_kl(*context_, *d, side, wt, h, out, beta, kl_tile_bytes_);
  return csr_kl(*context_, std::get<CsrView<T>>(a), side, y, wt, h, out, beta);
}

template <class T>
MatrixStats CudaKernels<T>::stats(const MatrixRef<T>& a) {
  auto& c = *context_;
  CView<T> values;
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    values = *d;
  } else {
    const cuda::DeviceCsr s = cuda::resolve(c, std::get<CsrView<T>>(a));
    values = CView<T>{static_cast<const T*>(s.values), s.nnz, 1, std::max<index_t>(s.nnz, 1)};
  }
  if (values.empty()) return {};
  cuda::launch_sum_squares(values, c.partials(), c.accumulator(), c.stream());
  const auto acc = c.fetch_accumulator();
  return {acc[0], acc[1]};
}

template <class T>
void CudaKernels<T>::gram(CView<T> x, View<T> g, T beta) {
  const index_t k = x.rows;
  if (k == 0) return;
  auto& c = *context_;
  if (x.cols == 0) {
    cuda::launch_scale(g, beta, c.stream());
    return;
  }
  // A gemm rather than syrk: with a k x k output and a long inner dimension, cuBLAS's syrk runs on very few
  // blocks (it measured slower than the two products with A in float on an H200), while gemm splits the
  // inner dimension. The mirror then makes g exactly symmetric, which BPP's Cholesky wants.
  gemm(c, false, true, k, k, x.cols, T(1), x.data, std::max<index_t>(x.ld, 1), x.data, std::max<index_t>(x.ld, 1), beta,
       g.data, std::max<index_t>(g.ld, 1));
  cuda::launch_mirror_lower(g, c.stream());
}

template <class T>
void CudaKernels<T>::fill(View<T> x, T value) {
  cuda::launch_fill(x, value, context_->stream());
}

template <class T>
double CudaKernels<T>::dot(CView<T> x, CView<T> y) {
  if (x.empty()) return 0;
  auto& c = *context_;
  cuda::launch_dot(x, y, c.partials(), c.accumulator(), c.stream());
  return c.fetch_accumulator()[0];
}

template <class T>
void CudaKernels<T>::row_sums(CView<T> x, T* out) {
  cuda::launch_row_sums(x, out, context_->stream());
}

template <class T>
int CudaKernels<T>::update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) {
  if (x.empty()) return 0;
  auto& c = *context_;
  switch (rule.algorithm) {
    case Algorithm::mu: {
      const index_t k = x.rows;
      T* next = static_cast<T*>(c.scratch(Slot::tile, to_size(x.size()) * sizeof(T)));
      cuda::launch_mu_update<T>(rule, x, numer, g, next, c.stream());
      DNMF_CUDA_CHECK(cudaMemcpy2DAsync(x.data, to_size(x.ld) * sizeof(T), next, to_size(k) * sizeof(T),
                                        to_size(k) * sizeof(T), to_size(x.cols), cudaMemcpyDeviceToDevice, c.stream()));
      return 0;
    }
    case Algorithm::kl:
      cuda::launch_kl_update(rule, x, numer, y_row_sums, c.stream());
      return 0;
    case Algorithm::hals:
      cuda::launch_hals_update(rule, x, numer, g, c.stream());
      return 0;
    case Algorithm::bpp:
      return bpp_on_host(c, rule, x, numer, g);
  }
  return 0;
}

template <class T>
FusedSums CudaKernels<T>::fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y,
                                     CView<T> gy, const T* y_row_sums, View<T> other_numer, View<T> gx,
                                     bool accumulate) {
  FusedSums sums;
  const bool kl = rule.algorithm == Algorithm::kl;
  const index_t k = x.rows;
  T* buffer = static_cast<T*>(context_->scratch(Slot::numer, to_size(x.size()) * sizeof(T)));
  const View<T> numer{buffer, k, x.cols, std::max<index_t>(k, 1)};
  if (kl) {
    sums.kl_numer = kl_multiply(a, side, y, x, numer, T(0));
  } else {
    multiply(a, side, y, numer, T(0));
  }
  if (!kl) sums.cross_before = dot(x, numer);
  sums.nnls_cap_hits = update(rule, x, numer, gy, y_row_sums);
  sums.cross = dot(x, numer);
  if (kl) {
    sums.kl_accum = kl_multiply(a, other(side), x, y, other_numer, accumulate ? T(1) : T(0));
  } else {
    multiply(a, other(side), x, other_numer, accumulate ? T(1) : T(0));
  }
  gram(x, gx, accumulate ? T(1) : T(0));
  return sums;
}

template <class T>
void CudaKernels<T>::set_tf32(bool on) {
  if constexpr (std::is_same_v<T, float>) {
    DNMF_CUDA_CHECK(cublasSetMathMode(context_->blas(), on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  } else {
    (void)on;
  }
}

template <class T>
void* CudaKernels<T>::stream() const {
  return context_->stream();
}

template <class T>
void CudaKernels<T>::synchronize() {
  context_->synchronize();
}

template class CudaKernels<float>;
template class CudaKernels<double>;

}  // namespace dnmf::backend
