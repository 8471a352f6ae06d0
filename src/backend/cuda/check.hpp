// Error checking for CUDA runtime, cuBLAS and cuSPARSE calls: every call is checked, and a failure
// becomes a dnmf::Error naming the call, the library's own error string and the place in our source.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

namespace dnmf::backend::cuda {

/// Throws dnmf::Error("<call> failed: <what> (<file>:<line>)").
[[noreturn]] void fail(const char* call, const char* what, const char* file, int line);

/// Throws when `status` is not success; the overloads make DNMF_CUDA_CHECK work for all three libraries.
inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // clear a non-sticky error so that later calls are not blamed for it
    fail(call, cudaGetErrorString(status), file, line);
  }
}
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(call, cublasGetStatusString(status), file, line);
}
inline void check(cusparseStatus_t status, const char* call, const char* file, int line) {
  if (status != CUSPARSE_STATUS_SUCCESS) fail(call, cusparseGetErrorString(status), file, line);
}

}  // namespace dnmf::backend::cuda

/// Checks a CUDA, cuBLAS or cuSPARSE call; throws dnmf::Error on failure.
#define DNMF_CUDA_CHECK(call) ::dnmf::backend::cuda::check((call), #call, __FILE__, __LINE__)

/// Checks the launch of the kernel just issued (bad configuration, missing device code).
#define DNMF_CUDA_CHECK_LAUNCH() ::dnmf::backend::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
