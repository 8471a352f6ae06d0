// See masked_device_cuda.hpp.
#include "backend/cuda/masked_device_cuda.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "backend/cuda/blas_calls.hpp"
#include "backend/cuda/check.hpp"
#include "backend/cuda/context.hpp"
#include "backend/cuda/launch.hpp"
#include "backend/cuda/masked_launch.hpp"

namespace dnmf::backend::cuda {
namespace {

template <class T>
class CudaMaskedDevice final : public MaskedDevice<T> {
 public:
  CudaMaskedDevice() : context_(std::make_unique<Context>()) {}

  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] T* allocate(std::size_t count) override {
    void* p = nullptr;
    DNMF_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
    return static_cast<T*>(p);
  }
  void deallocate(T* ptr) noexcept override {
    if (ptr) (void)cudaFree(ptr);  // waits for the device: queued work on ptr completes first
  }
  void upload(const T* host, T* device, std::size_t count) override {
    if (count == 0) return;
    DNMF_CUDA_CHECK(cudaMemcpyAsync(device, host, count * sizeof(T), cudaMemcpyHostToDevice, context_->stream()));
    context_->synchronize();  // the caller may reuse `host` as soon as we return
  }
  void download(const T* device, T* host, std::size_t count) override {
    if (count == 0) return;
    DNMF_CUDA_CHECK(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, context_->stream()));
    context_->synchronize();
  }
  void gemm(bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb, T* c,
            index_t ldc) override {
    if (m == 0 || n == 0) return;
    const T one(1), zero(0);
    DNMF_CUDA_CHECK(blas::gemm(context_->blas(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                               k, &one, a, std::max<index_t>(lda, 1), b, std::max<index_t>(ldb, 1), &zero, c,
                               std::max<index_t>(ldc, 1)));
  }
  void weight(const T* w, T* q, std::size_t count) override {
    launch_masked_weight(w, q, static_cast<index_t>(count), context_->stream());
  }
  MaskedSums kl_ratio(const T* wa, const T* w, T* q, std::size_t count) override {
    launch_masked_kl_ratio(wa, w, q, static_cast<index_t>(count), context_->partials(), context_->accumulator(),
                           context_->stream());
    return fetch();
  }
  double residual(const T* wa, const T* w, const T* q, std::size_t count) override {
    launch_masked_residual(wa, w, q, static_cast<index_t>(count), context_->partials(), context_->accumulator(),
                           context_->stream());
    return fetch().first;
  }
  void multiplicative(T* x, const T* b, const T* d, std::size_t count, double l1, double l2, double eps) override {
    launch_masked_multiplicative(x, b, d, static_cast<index_t>(count), l1, l2, eps, context_->stream());
  }
  MaskedSums sum_squares(const T* x, std::size_t count) override {
    const auto n = static_cast<index_t>(count);
    launch_sum_squares(CView<T>{x, n, 1, std::max<index_t>(n, 1)}, context_->partials(), context_->accumulator(),
                       context_->stream());
    return fetch();
  }
  double dot(const T* x, const T* y, std::size_t count) override {
    const auto n = static_cast<index_t>(count);
    launch_dot(CView<T>{x, n, 1, std::max<index_t>(n, 1)}, CView<T>{y, n, 1, std::max<index_t>(n, 1)},
               context_->partials(), context_->accumulator(), context_->stream());
    return fetch().first;
  }
  void square(const T* x, T* out, std::size_t count) override {
    launch_masked_square(x, out, static_cast<index_t>(count), context_->stream());
  }
  void weighted_residual(const T* wa, const T* w, T* q, std::size_t count) override {
    launch_masked_weighted_residual(wa, w, q, static_cast<index_t>(count), context_->stream());
  }
  void hals_coordinate(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta, index_t count, double l1,
                       double l2, double eps) override {
    launch_masked_hals_coordinate(x, ldx, num, den, ldden, delta, count, l1, l2, eps, context_->stream());
  }
  void weighted_rank_one(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                         index_t sv) override {
    launch_masked_weighted_rank_one(e, w, m, n, u, su, v, sv, context_->stream());
  }
  void pair_products(const T* y, index_t k, index_t count, T* out) override {
    launch_masked_pair_products(y, k, count, out, context_->stream());
  }
  [[nodiscard]] index_t* allocate_indices(std::size_t count) override {
    void* p = nullptr;
    DNMF_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(index_t)));
    return static_cast<index_t*>(p);
  }
  void deallocate_indices(index_t* ptr) noexcept override {
    if (ptr) (void)cudaFree(ptr);
  }
  void upload_indices(const index_t* host, index_t* device, std::size_t count) override {
    if (count == 0) return;
    DNMF_CUDA_CHECK(cudaMemcpyAsync(device, host, count * sizeof(index_t), cudaMemcpyHostToDevice, context_->stream()));
    context_->synchronize();
  }
  void sampled_product(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x, index_t k,
                       T* q) override {
    launch_masked_sampled_product(cols, ptr, row, y, x, k, q, context_->stream());
  }
  void sparse_product(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y, index_t k,
                      T* out) override {
    launch_masked_sparse_product(cols, ptr, row, value, y, k, out, context_->stream());
  }

 private:
  MaskedSums fetch() {
    const auto acc = context_->fetch_accumulator();
    return {acc[0], acc[1]};
  }
  std::unique_ptr<Context> context_;
};

}  // namespace

template <class T>
MaskedDevice<T>* new_cuda_masked_device() {
  return new CudaMaskedDevice<T>();  // owned by the caller; throws without a device
}

template MaskedDevice<float>* new_cuda_masked_device<float>();
template MaskedDevice<double>* new_cuda_masked_device<double>();

}  // namespace dnmf::backend::cuda
