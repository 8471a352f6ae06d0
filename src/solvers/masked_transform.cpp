// See masked_transform.hpp. The Gram matrices are formed in float64 whatever T is: each column has its own, and
// k is small, so the exactness costs little.

#include "solvers/masked_transform.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "dnmf/nnls.hpp"
#include "solvers/masked_iterate.hpp"
#include "solvers/masked_loop.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::solvers {

template <class T>
TransformResult<T> masked_transform(const MaskedProblem<T>& problem, const DenseMatrix<T>& wt,
                                    const ComponentPenalties& penalty) {
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
  // A team only where the columns' Grams and NNLS solves outweigh its start: without a condition every transform
  // woke the second thread, and a 96 x 21 masked transform took 31 ms on 2 threads against 1 ms on one while
  // another process ran.
  const double work = static_cast<double>(h.gram_ptr.empty() ? 0 : h.gram_ptr.back()) * static_cast<double>(k * k) +
                      static_cast<double>(h.cols) * static_cast<double>(k * k * k);
  const bool parallel = h.cols > 1 && work >= 2 * util::kMinParallelMultiplyAdds;  // the value measured for this loop
  // Per column: the shared loop's body is a lambda, which an OpenMP reduction clause cannot reach into.
  std::vector<index_t> cap_hits(to_size(h.cols), 0);
  struct ColumnSystem {
    DenseMatrix<double> g, b, x;
  };
  const auto column_system = [k] {
    return ColumnSystem{DenseMatrix<double>(k, k), DenseMatrix<double>(k, 1), DenseMatrix<double>(k, 1)};
  };
  util::for_each_index_dynamic_with(
      h.cols, parallel, column_system,
      [&](index_t j, ColumnSystem& sys) {
        if (h.unobserved[to_size(j)] != 0) return;  // no observed entry: h_j stays zero
        DenseMatrix<double>& g = sys.g;
        DenseMatrix<double>& b = sys.b;
        DenseMatrix<double>& x = sys.x;
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
          if (!penalty.l2.empty()) g(l, l) += penalty.l2[to_size(l)];
          // Not positive: the coefficient is zero at the optimum whatever b is (transform.cpp says why 0).
          if (!penalty.l1.empty()) b(l, 0) = std::max(b(l, 0) - penalty.l1[to_size(l)], 0.0);
          x(l, 0) = 0.0;
        }
        cap_hits[to_size(j)] = nnls_bpp<double>(g.view(), b.view(), x.view()).rounds_cap_hits;
        for (index_t l = 0; l < k; ++l) result.H(l, j) = static_cast<T>(x(l, 0));
      },
      kColumnsPerHandout);
  result.nnls_cap_hits = std::accumulate(cap_hits.begin(), cap_hits.end(), index_t{0});
  result.rel_error = masked_relative_error(problem, wt, result.H);
  result.unobserved_cols = problem.unobserved_cols;
  result.observed = problem.observed;
  return result;
}

template TransformResult<float> masked_transform<float>(const MaskedProblem<float>&, const DenseMatrix<float>&,
                                                        const ComponentPenalties&);
template TransformResult<double> masked_transform<double>(const MaskedProblem<double>&, const DenseMatrix<double>&,
                                                          const ComponentPenalties&);

}  // namespace dnmf::solvers
