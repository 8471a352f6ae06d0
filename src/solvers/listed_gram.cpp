// listed_gram (listed_products.hpp): the 4-wide blocks, or the 8-wide ones of listed_gram_avx512.cpp where the
// CPU has AVX-512F, chosen once per process with the product kernels.
#include <cstring>

#include "backend/cpu/skinny_products.hpp"
#include "solvers/lanes.hpp"
#include "solvers/listed_gram_impl.hpp"
#include "solvers/listed_products.hpp"

namespace dnmf::solvers {
namespace {

void mirror_upper(index_t k, double* g) {
  for (index_t q = 0; q < k; ++q)
    for (index_t l = q + 1; l < k; ++l) g[l + q * k] = g[q + l * k];
}

}  // namespace

bool listed_gram_wide() {
  // The skinny products' choice: AVX-512 where the CPU has it, unless DNMF_SKINNY keeps AVX2 (or BLAS).
  static const bool wide = std::strcmp(backend::cpu::skinny_isa(), "avx512") == 0;
  return wide;
}

void listed_gram(const double* const* rows, const double* coef, index_t count, index_t k, double* g) {
  if (k % 8 == 0 && listed_gram_wide()) {
    avx512::listed_gram_upper(rows, coef, count, k, g);
  } else {
    gram_impl::upper<Lanes, 4>(rows, coef, count, k, g);
  }
  mirror_upper(k, g);
}

void listed_gram_four_wide(const double* const* rows, const double* coef, index_t count, index_t k, double* g) {
  gram_impl::upper<Lanes, 4>(rows, coef, count, k, g);
  mirror_upper(k, g);
}

}  // namespace dnmf::solvers
