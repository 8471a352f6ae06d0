// The skinny kernels with 256-bit vectors (AVX2 + FMA, the library's x86-64-v3 baseline).
namespace dnmf::backend::cpu::avx2 {
constexpr int kBytes = 32;
}  // namespace dnmf::backend::cpu::avx2
#define DNMF_SKINNY_NAMESPACE avx2
#include "backend/cpu/skinny_kernels_impl.hpp"
