#include <algorithm>
#include <array>
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
#include "util/ordered_sums.hpp"
#include "util/parallel_loops.hpp"
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
  // Solved for hs_l = 2^-e_l·h_l with column l of W scaled by 2^e_l (transform_basis.hpp): the Gram matrices
  // stay in range, and no component is lost beside a much larger one.
  const solvers::ScaledBasis<T> scaled = solvers::scaled_basis_transpose(w, given_penalty);
  const DenseMatrix<T>& wt = scaled.wt;
  const solvers::ComponentPenalties& penalty = scaled.penalty;
  // NNLS runs on the host; the products with A run where the backend says (host kernels here).
  auto kernels =
      backend::make_kernels<T>(backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  // Data whose squares leave double's range are refused first, as factor() refuses them: their error was
  // reported as NaN (1e250) or 0 (1e-250) beside correct coefficients.
  const auto stats = kernels->stats(a);
  solvers::check_transform_data_scale(stats.squared_norm, stats.sum, static_cast<double>(m) * static_cast<double>(n),
                                      "A",
                                      /*weighted=*/false);
  DenseMatrix<T> p(k, n), g(k, k);
  kernels->multiply(a, backend::Side::H, wt.view(), p.view(), T(0));
  kernels->gram(wt.view(), g.view(), T(0));
  TransformResult<T> result;
  result.H = DenseMatrix<T>(k, n);
  // A scaled penalty that underflowed to 0 leaves the same problem as the unpenalised path (P >= 0).
  if (given_penalty.l1 > 0 || given_penalty.l2 > 0) {
    // The penalised normal equations: (G + diag(l2)) h = p − l1. Copies: the error below needs the plain G and P.
    // A coefficient whose right-hand side p − l1 is not positive is zero at the optimum (G ≥ 0 entry by entry, as
    // W ≥ 0), whatever its value: it is set to 0 rather than left at −l1. A small component's scaled l1 (up to
    // 1e300) made the NNLS's tolerances, relative to the largest |b|, swamp the others: H = 0, exit 0.
    DenseMatrix<T> gp = g, pp = p;
    for (index_t l = 0; l < k; ++l) {
      gp(l, l) = solvers::saturated<T>(static_cast<double>(gp(l, l)) + penalty.l2[to_size(l)]);
      for (index_t j = 0; j < n; ++j)
        pp(l, j) = static_cast<T>(std::max(static_cast<double>(pp(l, j)) - penalty.l1[to_size(l)], 0.0));
    }
    result.nnls_cap_hits = static_cast<long long>(nnls_bpp<T>(gp.view(), pp.view(), result.H.view()).rounds_cap_hits);
  } else {
    result.nnls_cap_hits = static_cast<long long>(nnls_bpp<T>(g.view(), p.view(), result.H.view()).rounds_cap_hits);
  }
  // ‖A − WH‖² = ‖A‖² − 2⟨P, H⟩ + Σ_j h_jᵀ G h_j, the last in double: HHᵀ in float32 overflowed for data of 1e20
  // (an error of inf beside correct coefficients). Summed in fixed blocks of columns: the same bits on any thread
  // count.
  const double quad_work = static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(k);
  const double quad =
      util::ordered_sums<1>(n, quad_work >= util::kMinParallelMultiplyAdds, [&](index_t j, std::array<double, 1>& acc) {
        for (index_t l = 0; l < k; ++l) {
          double gh = 0;
          for (index_t q = 0; q < k; ++q) gh += static_cast<double>(g(l, q)) * static_cast<double>(result.H(q, j));
          acc[0] += static_cast<double>(result.H(l, j)) * gh;
        }
      })[0];
  const double sq = stats.squared_norm - 2 * kernels->dot(p.view(), result.H.view()) + quad;
  result.rel_error = stats.squared_norm > 0 ? std::sqrt(std::max(sq, 0.0) / stats.squared_norm) : 0.0;
  solvers::unscale_coefficients(result.H, scaled.exponents);
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
