// listed_gram's blocks in 8-wide double lanes: the only file of the solvers compiled with -mavx512f, called where
// the CPU has AVX-512F (listed_gram.cpp). Twice the lanes halve the instructions per multiply-add (1.7x at k = 16
// on Zen 5, docs/masked.md), with the same bits as the 4-wide blocks (listed_gram_impl.hpp).
#include "solvers/listed_gram_impl.hpp"
#include "solvers/listed_products.hpp"

namespace dnmf::solvers::avx512 {

void listed_gram_upper(const double* const* rows, const double* coef, index_t count, index_t k, double* g) {
  using Wide = double __attribute__((vector_size(64)));
  gram_impl::upper<Wide, 8>(rows, coef, count, k, g);
}

}  // namespace dnmf::solvers::avx512
