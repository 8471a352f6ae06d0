// See masked_transform.hpp. The Gram matrices are formed in float64 whatever T is: each column has its own, and
// k is small, so the exactness costs little.

#include "solvers/masked_transform.hpp"

#include <exception>
#include <vector>

#include "dnmf/nnls.hpp"
#include "solvers/masked_iterate.hpp"

namespace dnmf::solvers {

template <class T>
TransformResult<T> masked_transform(const MaskedProblem<T>& problem, const DenseMatrix<T>& wt,
                                    const TransformPenalty& penalty) {
  const MaskedHalf<T>& h = problem.h_half;  // A (m x n): columns are the new samples
  const index_t k = wt.rows();
  // YᵀY over every row of W: the start of G_j when the lists only correct it.
  std::vector<double> full(to_size(k * k), 0.0);
  for (index_t i = 0; i < h.rows; ++i)
    for (index_t q = 0; q < k; ++q)
      for (index_t l = 0; l < k; ++l)
        full[to_size(q * k + l)] += static_cast<double>(wt(q, i)) * static_cast<double>(wt(l, i));

  TransformResult<T> result;
  result.H = DenseMatrix<T>(k, h.cols, T(0));
  long long cap_hits = 0;
  std::exception_ptr failure;
  // A team only where the columns' Grams and NNLS solves outweigh its start: without a condition every transform
  // woke the second thread, and a 96 x 21 masked transform took 31 ms on 2 threads against 1 ms on one while
  // another process ran.
  const double work = static_cast<double>(h.gram_ptr.empty() ? 0 : h.gram_ptr.back()) * static_cast<double>(k * k) +
                      static_cast<double>(h.cols) * static_cast<double>(k * k * k);
  const bool parallel = h.cols > 1 && work >= 2e5;
#pragma omp parallel reduction(+ : cap_hits) if (parallel)
  {
    DenseMatrix<double> g(k, k), b(k, 1), x(k, 1);
#pragma omp for schedule(dynamic, 16)
    for (index_t j = 0; j < h.cols; ++j) {
      if (h.unobserved[to_size(j)] != 0) continue;  // no observed entry: h_j stays zero
      for (index_t e = 0; e < k * k; ++e) g.data()[e] = h.direct_gram ? 0.0 : full[to_size(e)];
      for (index_t p = h.gram_ptr[to_size(j)]; p < h.gram_ptr[to_size(j) + 1]; ++p) {
        const index_t i = h.gram_row[to_size(p)];
        const double c = h.gram_coef[to_size(p)];
        for (index_t q = 0; q < k; ++q) {
          const double cy = c * static_cast<double>(wt(q, i));
          for (index_t l = 0; l < k; ++l) g(l, q) += cy * static_cast<double>(wt(l, i));
        }
      }
      for (index_t l = 0; l < k; ++l) b(l, 0) = 0.0;
      const auto add = [&](index_t i, double weighted) {
        for (index_t l = 0; l < k; ++l) b(l, 0) += weighted * static_cast<double>(wt(l, i));
      };
      if (h.dense) {
        for (index_t i = 0; i < h.rows; ++i)
          if (h.weights(i, j) > T(0)) add(i, static_cast<double>(h.weighted(i, j)));
      } else {
        for (index_t e = h.ptr[to_size(j)]; e < h.ptr[to_size(j) + 1]; ++e)
          add(h.row[to_size(e)], static_cast<double>(h.weighted_value[to_size(e)]));
      }
      for (index_t l = 0; l < k; ++l) {
        g(l, l) += penalty.l2;
        b(l, 0) -= penalty.l1;
        x(l, 0) = 0.0;
      }
      try {
        cap_hits += static_cast<long long>(nnls_bpp<double>(g.view(), b.view(), x.view()).rounds_cap_hits);
      } catch (...) {
#pragma omp critical(dnmf_masked_transform_failure)
        if (!failure) failure = std::current_exception();
      }
      for (index_t l = 0; l < k; ++l) result.H(l, j) = static_cast<T>(x(l, 0));
    }
  }
  if (failure) std::rethrow_exception(failure);
  result.nnls_cap_hits = cap_hits;
  result.rel_error = masked_relative_error(problem, wt, result.H);
  result.unobserved_cols = problem.unobserved_cols;
  result.observed = problem.observed;
  return result;
}

template TransformResult<float> masked_transform<float>(const MaskedProblem<float>&, const DenseMatrix<float>&,
                                                        const TransformPenalty&);
template TransformResult<double> masked_transform<double>(const MaskedProblem<double>&, const DenseMatrix<double>&,
                                                          const TransformPenalty&);

}  // namespace dnmf::solvers
