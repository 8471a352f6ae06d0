// Thin typed wrappers over CBLAS so that kernels are written once for float and double.
#pragma once

#if defined(DNMF_BLAS_MKL)
#include <mkl_cblas.h>
#else
#include <cblas.h>
#endif

namespace dnmf::backend::blas {

inline void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}
inline void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b,
                 int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}
/// Upper triangle of C = alpha·A·Aᵀ + beta·C (A is n x k).
inline void syrk(int n, int k, float alpha, const float* a, int lda, float beta, float* c, int ldc) {
  cblas_ssyrk(CblasColMajor, CblasUpper, CblasNoTrans, n, k, alpha, a, lda, beta, c, ldc);
}
inline void syrk(int n, int k, double alpha, const double* a, int lda, double beta, double* c, int ldc) {
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, n, k, alpha, a, lda, beta, c, ldc);
}

}  // namespace dnmf::backend::blas
