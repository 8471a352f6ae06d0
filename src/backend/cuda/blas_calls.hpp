// cuBLAS calls by value type (float: S, double: D), with 64-bit sizes, so templates can call one name.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

namespace dnmf::backend::cuda::blas {

inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                           std::int64_t k, const float* alpha, const float* a, std::int64_t lda, const float* b,
                           std::int64_t ldb, const float* beta, float* c, std::int64_t ldc) {
  return cublasSgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n,
                           std::int64_t k, const double* alpha, const double* a, std::int64_t lda, const double* b,
                           std::int64_t ldb, const double* beta, double* c, std::int64_t ldc) {
  return cublasDgemm_64(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline cublasStatus_t syrk(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t t, std::int64_t n, std::int64_t k,
                           const float* alpha, const float* a, std::int64_t lda, const float* beta, float* c,
                           std::int64_t ldc) {
  return cublasSsyrk_64(h, uplo, t, n, k, alpha, a, lda, beta, c, ldc);
}
inline cublasStatus_t syrk(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t t, std::int64_t n, std::int64_t k,
                           const double* alpha, const double* a, std::int64_t lda, const double* beta, double* c,
                           std::int64_t ldc) {
  return cublasDsyrk_64(h, uplo, t, n, k, alpha, a, lda, beta, c, ldc);
}

}  // namespace dnmf::backend::cuda::blas
