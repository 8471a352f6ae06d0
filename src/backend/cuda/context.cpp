#include "backend/cuda/context.hpp"

#include <string>

#include "backend/cuda/check.hpp"
#include "backend/cuda/device_query.hpp"
#include "backend/cuda/launch.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend::cuda {

Context::Context() {
  std::string why;
  if (!device_present(&why)) throw Error("--backend cuda: no CUDA device is visible (" + why + ")");
  try {
    int device = 0;
    DNMF_CUDA_CHECK(cudaGetDevice(&device));
    DNMF_CUDA_CHECK(cudaSetDevice(device));
    DNMF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    DNMF_CUDA_CHECK(cublasCreate(&blas_));
    DNMF_CUDA_CHECK(cublasSetStream(blas_, stream_));
    DNMF_CUDA_CHECK(cusparseCreate(&sparse_));
    DNMF_CUDA_CHECK(cusparseSetStream(sparse_, stream_));
    reduction_.reserve((2 * to_size(kReduceBlocks) + 2) * sizeof(double));
    void* pinned = nullptr;
    DNMF_CUDA_CHECK(cudaMallocHost(&pinned, 2 * sizeof(double)));
    host_result_ = static_cast<double*>(pinned);
  } catch (...) {
    release();
    throw;
  }
}

Context::~Context() {
  if (stream_) (void)cudaStreamSynchronize(stream_);
  residents_.clear();
  release();
}

void Context::release() noexcept {
  if (sparse_) (void)cusparseDestroy(sparse_);
  if (blas_) (void)cublasDestroy(blas_);
  if (host_result_) (void)cudaFreeHost(host_result_);
  if (stream_) (void)cudaStreamDestroy(stream_);
  sparse_ = nullptr;
  blas_ = nullptr;
  host_result_ = nullptr;
  stream_ = nullptr;
}

void* Context::scratch(Slot slot, std::size_t bytes) { return scratch_[static_cast<std::size_t>(slot)].reserve(bytes); }

double* Context::partials() const { return static_cast<double*>(reduction_.get()); }

double* Context::accumulator() const { return partials() + 2 * to_size(kReduceBlocks); }

std::array<double, 2> Context::fetch_accumulator() {
  DNMF_CUDA_CHECK(cudaMemcpyAsync(host_result_, accumulator(), 2 * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return {host_result_[0], host_result_[1]};
}

void Context::synchronize() { DNMF_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace dnmf::backend::cuda
