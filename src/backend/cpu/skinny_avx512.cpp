// The skinny kernels with 512-bit vectors; this file alone is compiled with AVX-512F and runs only where
// skinny_products.cpp found it in the CPU.
namespace dnmf::backend::cpu::avx512 {
constexpr int kBytes = 64;
}  // namespace dnmf::backend::cpu::avx512
#define DNMF_SKINNY_NAMESPACE avx512
#include "backend/cpu/skinny_kernels_impl.hpp"
