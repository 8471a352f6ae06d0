// With DNMF_BLAS=mkl: mkl_rt would thread on Intel's OpenMP runtime by default, a second runtime beside the GNU
// one our kernels use (two thread pools, each sized to the machine). Selecting MKL's GNU layer before the first
// BLAS call keeps one runtime, and MKL then runs single-threaded inside our parallel regions as OpenBLAS does.
#if defined(DNMF_BLAS_MKL)
#include <mkl_service.h>

namespace {
const int gnu_threading_layer = mkl_set_threading_layer(MKL_THREADING_GNU);
}  // namespace
#endif
