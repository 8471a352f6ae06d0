// dnmf::transform of new data with missing values: A and its mask held whole, the masked problem built as for
// factor(), then each column's NNLS on its observed entries (solvers/masked_transform).

#include <cmath>
#include <optional>
#include <string>

#include "api/held_matrix.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_transform.hpp"
#include "solvers/transform_basis.hpp"
#include "util/thread_count.hpp"

namespace dnmf {

template <class T>
TransformResult<T> transform(const Source& source, DenseView<const T> w, const MissingValues& missing,
                             BackendKind backend, const TransformPenalty& penalty, int threads) {
  if (threads < 0) throw UsageError("transform: threads must be >= 0, got " + std::to_string(threads));
  const util::ThreadCountScope thread_count(threads);
  (void)backend;  // every backend's transform runs on the host, as the unmasked one's does (one NNLS per column)
  solvers::check_transform_penalty(penalty);
  detail::check_view("transform: W", MatrixRef<T>{w});  // its shape and its array (a null W was a crash)
  const api::Held<T> a = api::hold<T>(source);
  std::optional<api::Held<T>> mask;
  if (missing.mask) mask = api::hold<T>(*missing.mask);
  const solvers::StoredMatrix<T> stored_a{&a.ref, source.transposed(), source.name()};
  const solvers::StoredMatrix<T> stored_mask{mask ? &mask->ref : nullptr, mask && missing.mask->transposed(),
                                             mask ? missing.mask->name() : std::string()};
  // New data with nothing observed (a user without ratings) gets zeros, as its rows would one by one.
  const solvers::MaskedProblem<T> problem =
      solvers::build_masked_problem<T>(stored_a, stored_mask, missing, /*to_fit=*/false);
  const index_t k = w.cols;
  if (w.rows != problem.m)
    throw UsageError("transform: W has " + std::to_string(w.rows) + " rows but " + source.name() + " has " +
                     std::to_string(problem.m));
  if (k < 1) throw UsageError("transform: W has no columns");
  // Solved for hs_l = 2^-e_l·h_l with column l of W scaled by 2^e_l (transform_basis.hpp): the Gram matrices
  // stay in range, and no component is lost beside a much larger one.
  const solvers::ScaledBasis<T> scaled = solvers::scaled_basis_transpose(w, penalty);
  // Data whose squares leave double's range are refused, as factor() refuses them (their error read NaN or 0).
  const bool weighted = problem.weight_sum != static_cast<double>(problem.observed);  // Σw is the count for 0/1
  solvers::check_transform_data_scale(problem.weighted_squared_norm, problem.observed_sum,
                                      static_cast<double>(problem.observed), source.name(), weighted);
  TransformResult<T> result = solvers::masked_transform<T>(problem, scaled.wt, scaled.penalty);
  solvers::unscale_coefficients(result.H, scaled.exponents);
  return result;
}

template TransformResult<float> transform<float>(const Source&, DenseView<const float>, const MissingValues&,
                                                 BackendKind, const TransformPenalty&, int);
template TransformResult<double> transform<double>(const Source&, DenseView<const double>, const MissingValues&,
                                                   BackendKind, const TransformPenalty&, int);

}  // namespace dnmf
