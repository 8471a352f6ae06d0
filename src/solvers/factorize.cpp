#include "dnmf/factorize.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "solvers/alternating.hpp"
#include "solvers/init.hpp"

namespace dnmf {
namespace {

void check_options(const FactorOptions& o, index_t m, index_t n) {
  const index_t limit = std::min(m, n);
  if (m < 1 || n < 1) throw Error("the matrix is empty (" + std::to_string(m) + "x" + std::to_string(n) + ")");
  if (o.rank < 1 || o.rank > limit)
    throw Error("rank k=" + std::to_string(o.rank) + " does not fit a " + std::to_string(m) + "x" + std::to_string(n) +
                " matrix: need 1 <= k <= " + std::to_string(limit));
  if (o.max_iterations < 0) throw Error("iterations must be >= 0, got " + std::to_string(o.max_iterations));
  if (!(o.tol >= 0) || !std::isfinite(o.tol)) throw Error("tol must be a finite number >= 0");
  const auto& p = o.penalties;
  for (double v : {p.l1_w, p.l2_w, p.l1_h, p.l2_h})
    if (!(v >= 0) || !std::isfinite(v)) throw Error("penalties must be finite and >= 0");
  if (o.threads < 0) throw Error("threads must be >= 0");
}

// W's columns sum to one; H's rows absorb the scale, so W·H is unchanged.
template <class T>
void normalise(solvers::Factors<T>& f) {
  const index_t k = f.wt.rows();
  for (index_t l = 0; l < k; ++l) {
    double s = 0;
    for (index_t i = 0; i < f.wt.cols(); ++i) s += static_cast<double>(f.wt(l, i));
    if (!(s > 0)) continue;
    for (index_t i = 0; i < f.wt.cols(); ++i) f.wt(l, i) = static_cast<T>(static_cast<double>(f.wt(l, i)) / s);
    for (index_t j = 0; j < f.h.cols(); ++j) f.h(l, j) = static_cast<T>(static_cast<double>(f.h(l, j)) * s);
  }
}

template <class T>
DenseMatrix<T> transpose(const DenseMatrix<T>& x) {
  DenseMatrix<T> t(x.cols(), x.rows());
  for (index_t j = 0; j < x.cols(); ++j)
    for (index_t i = 0; i < x.rows(); ++i) t(j, i) = x(i, j);
  return t;
}

// ||A - WH|| / ||A|| of the final factors via one product and the Gram identity. Near a perfect fit the
// identity cancels to rounding noise (it can even report 0), so small values are recomputed directly where
// that costs no more than a few products.
template <class T>
double final_relative_error(backend::Kernels<T>& host, const MatrixRef<T>& a, const solvers::Factors<T>& f,
                            double squared_norm_a) {
  const index_t k = f.wt.rows();
  const index_t m = rows_of(a), n = cols_of(a);
  DenseMatrix<T> p(k, n), gw(k, k), gh(k, k);
  host.multiply(a, backend::Side::H, f.wt.view(), p.view(), T(0));
  host.gram(f.wt.view(), gw.view(), T(0));
  host.gram(f.h.view(), gh.view(), T(0));
  const double sq = squared_norm_a - 2 * host.dot(p.view(), f.h.view()) + host.dot(gw.view(), gh.view());
  const double identity = std::sqrt(std::max(sq, 0.0) / squared_norm_a);
  const double noise_floor = std::is_same_v<T, float> ? 1e-2 : 1e-6;
  const bool affordable = !is_sparse(a) || static_cast<double>(m) * static_cast<double>(n) <= 5e7;
  if (identity >= noise_floor || !affordable) return identity;
  const DenseMatrix<T> w = transpose(f.wt);
  return relative_error_direct<T>(a, w.view(), f.h.view());
}

}  // namespace

template <class T>
FactorResult<T> factorize(const MatrixRef<T>& a, const FactorOptions& options, const DenseMatrix<T>* W0,
                          const DenseMatrix<T>* H0) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  check_options(options, m, n);
  if (options.threads > 0) omp_set_num_threads(options.threads);
  auto kernels = backend::make_kernels<T>(options.backend);
  kernels->set_tf32(options.tf32);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  const auto init_start = std::chrono::steady_clock::now();
  const backend::MatrixStats stats = host->stats(a);
  if (!(stats.squared_norm > 0)) throw Error("the matrix is all zeros: there is nothing to factorise");
  solvers::Factors<T> factors = solvers::initialise(*host, a, options, stats, W0, H0);
  const MatrixRef<T> resident = kernels->make_resident(a);
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();

  FactorResult<T> result = solvers::iterate(*kernels, resident, options, stats, factors);
  result.init_seconds = init_seconds;
  if (options.normalize) normalise(factors);
  result.rel_error = final_relative_error(*host, a, factors, stats.squared_norm);
  result.objective = result.objective_history.empty() ? 0.0 : result.objective_history.back();
  result.W = transpose(factors.wt);
  result.H = std::move(factors.h);
  return result;
}

template <class T>
double relative_error_direct(const MatrixRef<T>& a, DenseView<const T> W, DenseView<const T> H) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const index_t k = W.cols;
  double num = 0;
  double den = 0;
  auto model = [&](index_t i, index_t j) {
    double s = 0;
    for (index_t l = 0; l < k; ++l) s += static_cast<double>(W(i, l)) * static_cast<double>(H(l, j));
    return s;
  };
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) {
        const double v = static_cast<double>((*d)(i, j));
        const double r = v - model(i, j);
        num += r * r;
        den += v * v;
      }
  } else {
    // Sparse: Σ over stored entries of (a - wh)² plus Σ over absent entries of wh².
    const auto& s = std::get<CsrView<T>>(a);
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (index_t i = 0; i < m; ++i) {
      index_t p = s.indptr[i];
      for (index_t j = 0; j < n; ++j) {
        double v = 0;
        if (p < s.indptr[i + 1] && s.indices[p] == j) v = static_cast<double>(s.values[p++]);
        const double r = v - model(i, j);
        num += r * r;
        den += v * v;
      }
    }
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

template FactorResult<float> factorize<float>(const MatrixRef<float>&, const FactorOptions&, const DenseMatrix<float>*,
                                              const DenseMatrix<float>*);
template FactorResult<double> factorize<double>(const MatrixRef<double>&, const FactorOptions&,
                                                const DenseMatrix<double>*, const DenseMatrix<double>*);
template double relative_error_direct<float>(const MatrixRef<float>&, DenseView<const float>, DenseView<const float>);
template double relative_error_direct<double>(const MatrixRef<double>&, DenseView<const double>,
                                              DenseView<const double>);

}  // namespace dnmf
