#include <cmath>
#include <string>
#include <type_traits>
#include <variant>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/io.hpp"
#include "dnmf/nnls.hpp"
#include "dnmf/source.hpp"
#include "solvers/bpp.hpp"
#include "solvers/solve.hpp"
#include "solvers/transform_basis.hpp"
#include "util/thread_count.hpp"

namespace dnmf {

template <class T>
TransformResult<T> transform(const MatrixRef<T>& a, DenseView<const T> w, BackendKind backend,
                             const TransformPenalty& given_penalty, int threads) {
  if (threads < 0) throw UsageError("transform: threads must be >= 0, got " + std::to_string(threads));
  const util::ThreadCountScope thread_count(threads);  // Python's n_threads=1 ran the transform on every core
  solvers::check_transform_penalty(given_penalty);
  detail::check_view("transform: A", a);
  detail::check_view("transform: W", MatrixRef<T>{w});  // its shape and its array (a null W was a crash)
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const index_t k = w.cols;
  if (w.rows != m)
    throw UsageError("transform: W has " + std::to_string(w.rows) + " rows but A has " + std::to_string(m));
  if (k < 1) throw UsageError("transform: W has no columns");
  // A is the caller's data: a negative or non-finite entry is refused where it is, as factor() refuses it.
  std::visit([](const auto& view) { io::check_nonnegative(view, "transform: A"); }, a);
  // Solved for hs = 2^-e·H with the basis 2^e·W (transform_basis.hpp): the Gram matrices stay in range.
  const solvers::ScaledBasis<T> scaled = solvers::scaled_basis_transpose(w, given_penalty);
  const DenseMatrix<T>& wt = scaled.wt;
  const TransformPenalty& penalty = scaled.penalty;
  // NNLS runs on the host; the products with A run where the backend says (host kernels here).
  auto kernels =
      backend::make_kernels<T>(backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  DenseMatrix<T> p(k, n), g(k, k), gh(k, k);
  kernels->multiply(a, backend::Side::H, wt.view(), p.view(), T(0));
  kernels->gram(wt.view(), g.view(), T(0));
  TransformResult<T> result;
  result.H = DenseMatrix<T>(k, n);
  if (penalty.l1 > 0 || penalty.l2 > 0) {
    // The penalised normal equations: (G + l2 I) h = p − l1. Copies: the error below needs the plain G and P.
    DenseMatrix<T> gp = g, pp = p;
    for (index_t l = 0; l < k; ++l) gp(l, l) = solvers::saturated<T>(static_cast<double>(gp(l, l)) + penalty.l2);
    for (T& v : pp.storage()) v = solvers::saturated<T>(static_cast<double>(v) - penalty.l1);
    result.nnls_cap_hits = static_cast<long long>(nnls_bpp<T>(gp.view(), pp.view(), result.H.view()).rounds_cap_hits);
  } else {
    result.nnls_cap_hits = static_cast<long long>(nnls_bpp<T>(g.view(), p.view(), result.H.view()).rounds_cap_hits);
  }
  kernels->gram(result.H.view(), gh.view(), T(0));
  const auto stats = kernels->stats(a);
  const double sq =
      stats.squared_norm - 2 * kernels->dot(p.view(), result.H.view()) + kernels->dot(g.view(), gh.view());
  result.rel_error = stats.squared_norm > 0 ? std::sqrt(std::max(sq, 0.0) / stats.squared_norm) : 0.0;
  solvers::unscale_coefficients(result.H, scaled.exponent);
  // Below the identity's noise floor its cancellation leaves rounding only (float32 reported 0 for an error of
  // 1.7e-4): recomputed from the entries, as a fit's final error is.
  if (result.rel_error < solvers::kIdentityNoiseFloor<T> && stats.squared_norm > 0)
    result.rel_error = relative_error_direct<T>(a, w, result.H.view());
  return result;
}

template TransformResult<float> transform<float>(const MatrixRef<float>&, DenseView<const float>, BackendKind,
                                                 const TransformPenalty&, int);
template TransformResult<double> transform<double>(const MatrixRef<double>&, DenseView<const double>, BackendKind,
                                                   const TransformPenalty&, int);

}  // namespace dnmf
