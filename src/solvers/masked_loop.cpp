// See masked_loop.hpp.

#include "solvers/masked_loop.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dnmf/error.hpp"
#include "solvers/breakdown_hint.hpp"

namespace dnmf::solvers {

MaskedSums& MaskedSums::operator+=(const MaskedSums& o) {
  cross += o.cross;
  quad += o.quad;
  cross_before += o.cross_before;
  quad_before += o.quad_before;
  residual += o.residual;
  kl_log += o.kl_log;
  kl_model += o.kl_model;
  kl_squared += o.kl_squared;
  kl_formed_model += o.kl_formed_model;
  kl_formed += o.kl_formed;
  cap_hits += o.cap_hits;
  return *this;
}

template <class T>
FactorResult<T> masked_result(index_t observed, index_t unobserved_rows, index_t unobserved_cols) {
  FactorResult<T> result;
  result.masked = true;
  result.observed = observed;
  result.unobserved_rows = unobserved_rows;
  result.unobserved_cols = unobserved_cols;
  result.backend = "cpu";
  result.threads = omp_get_max_threads();
  return result;
}

template <class T>
MaskedRecorder<T>::MaskedRecorder(const FactorOptions& options, double weighted_squared_norm, FactorResult<T>& result)
    : options_(options),
      norm_(weighted_squared_norm),
      result_(result),
      start_(std::chrono::steady_clock::now()),
      previous_(std::numeric_limits<double>::quiet_NaN()),
      previous_penalties_(std::numeric_limits<double>::quiet_NaN()) {}

template <class T>
typename MaskedRecorder<T>::Verdict MaskedRecorder<T>::note(int it, double squared, double objective, bool ask_cancel,
                                                            double frobenius_fall) {
  Verdict v;
  const double rel = std::sqrt(std::max(squared, 0.0) / norm_);
  v.broken = !std::isfinite(objective) || !std::isfinite(rel);
  if (v.broken) return v;
  result_.rel_error_history.push_back(rel);
  result_.objective_history.push_back(objective);
  result_.iterations = it;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (options_.progress) options_.progress({it, options_.max_iterations, rel, objective, seconds});
  // float32's figures carry their float sums' rounding, as large as the change per iteration below about 1%
  // error: where the iteration gives its fall half by half, the rule reads that (and the penalties' change, which
  // are summed from the factors in double).
  const double penalties = objective - 0.5 * std::max(squared, 0.0);
  const double change = std::is_same_v<T, float> && std::isfinite(frobenius_fall)
                            ? frobenius_fall - (penalties - previous_penalties_)
                            : previous_ - objective;
  v.stop = it > 1 && options_.tol > 0 && std::abs(change) <= options_.tol * std::abs(previous_);
  v.cancel = ask_cancel && options_.cancel && options_.cancel();
  previous_ = objective;
  previous_penalties_ = penalties;
  return v;
}

template <class T>
bool MaskedRecorder<T>::act(int it, const Verdict& v, bool collective) const {
  if (v.broken) {
    const NumericalError e("numerical breakdown at iteration " + std::to_string(it) + " (" +
                           to_string(options_.algorithm) + ", masked): the objective is not finite" +
                           breakdown_hint<T>(options_.penalties));
    if (collective) throw CollectiveError(e);
    throw e;
  }
  if (v.cancel) throw Cancelled("cancelled at iteration " + std::to_string(it));
  if (v.stop) result_.converged = true;
  return v.stop;
}

template <class T>
void MaskedRecorder<T>::finish() const {
  result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

template <class T>
FactorResult<T> run_masked_loop(const MaskedProblem<T>& p, const FactorOptions& options,
                                const std::function<MaskedStep(int)>& step) {
  FactorResult<T> result = masked_result<T>(p.observed, p.unobserved_rows, p.unobserved_cols);
  MaskedRecorder<T> recorder(options, p.weighted_squared_norm, result);
  for (int it = 1; it <= options.max_iterations; ++it) {
    const MaskedStep s = step(it);
    result.nnls_cap_hits += s.cap_hits;
    if (recorder.record(it, s.squared, s.objective, s.frobenius_fall)) break;
  }
  recorder.finish();
  return result;
}

template <class T>
void set_final_figures(FactorResult<T>& result, double rel_error, double weighted_squared_norm,
                       double returned_penalties) {
  result.rel_error = rel_error;
  result.norm_a = std::sqrt(weighted_squared_norm);
  result.objective = result.objective_history.empty() ? 0.0 : result.objective_history.back();
  if (returned_penalties >= 0)
    result.objective = 0.5 * rel_error * rel_error * weighted_squared_norm + returned_penalties;
}

bool normalising_changes_penalties(const FactorOptions& options) {
  const Penalties& pen = options.penalties;
  return pen.any() && options.normalize && options.algorithm != Algorithm::kl;
}

template <class T>
double returned_penalty_terms(const Factors<T>& f, const FactorOptions& options) {
  const Penalties& pen = options.penalties;
  return penalty(f.wt, pen.l1_w, pen.l2_w) + penalty(f.h, pen.l1_h, pen.l2_h);
}

template <class T>
PenaltySums penalty_sums(const DenseMatrix<T>& x) {
  PenaltySums s;
  for (const T v : x.storage()) {
    s.sum += static_cast<double>(v);
    s.squares += static_cast<double>(v) * static_cast<double>(v);
  }
  return s;
}

double penalty_terms(double l1, double l2, const PenaltySums& sums) {
  return (l1 != 0 ? l1 * sums.sum : 0.0) + (l2 != 0 ? 0.5 * l2 * sums.squares : 0.0);
}

template <class T>
double penalty(const DenseMatrix<T>& x, double l1, double l2) {
  if (l1 == 0 && l2 == 0) return 0;
  return penalty_terms(l1, l2, penalty_sums(x));
}

template <class T>
double frobenius_objective(double squared, const Factors<T>& f, const Penalties& pen) {
  return 0.5 * std::max(squared, 0.0) + penalty(f.wt, pen.l1_w, pen.l2_w) + penalty(f.h, pen.l1_h, pen.l2_h);
}

template <class T>
std::vector<double> factor_scales(const DenseMatrix<T>& wt) {
  std::vector<double> s(to_size(wt.rows()), 0.0);
  for (index_t i = 0; i < wt.cols(); ++i)
    for (index_t l = 0; l < wt.rows(); ++l) s[to_size(l)] += static_cast<double>(wt(l, i));
  return s;
}

template <class T>
bool apply_scales(DenseMatrix<T>& wt, DenseMatrix<T>& h, const std::vector<double>& scale) {
  // A column of Wt (H) at a time: a pass per component strode through both factors (1 ms of a 1-iteration
  // 20000 x 10000 sparse fit).
  const index_t k = wt.rows();
  for (index_t i = 0; i < wt.cols(); ++i)
    for (index_t l = 0; l < k; ++l)
      if (scale[to_size(l)] > 0) wt(l, i) = static_cast<T>(static_cast<double>(wt(l, i)) / scale[to_size(l)]);
  bool overflowed = false;
  for (index_t j = 0; j < h.cols(); ++j)
    for (index_t l = 0; l < k; ++l) {
      if (!(scale[to_size(l)] > 0)) continue;
      const double scaled = static_cast<double>(h(l, j)) * scale[to_size(l)];
      overflowed = overflowed || !(scaled <= static_cast<double>(std::numeric_limits<T>::max()));
      h(l, j) = static_cast<T>(scaled);
    }
  return overflowed;
}

template <class T>
void refuse_overflowed_scale(bool agreed) {
  // In float, KL fits of entries whose column sums pass 3.4e38 got here: the iterations' factors are balanced
  // (about the square root of the scale each), the normalised H is not, and an inf was written with exit 0.
  const std::string text =
      std::string("the factors overflow ") + (std::is_same_v<T, float> ? "float32" : "double") +
      " once W's columns are scaled to sum to 1 (H's rows take the scale, about the matrix's column sums): " +
      (std::is_same_v<T, float> ? "run in float64 (--precision f64) or " : "") +
      "divide the matrix by a large constant first";
  if (agreed) throw CollectiveError(text, ErrorKind::data);
  throw DataError(text);
}

template <class T>
void normalise(Factors<T>& f) {
  if (apply_scales(f.wt, f.h, factor_scales(f.wt))) refuse_overflowed_scale<T>(false);
}

#define DNMF_MASKED_LOOP(T)                                                                    \
  template FactorResult<T> masked_result<T>(index_t, index_t, index_t);                        \
  template class MaskedRecorder<T>;                                                            \
  template FactorResult<T> run_masked_loop<T>(const MaskedProblem<T>&, const FactorOptions&,   \
                                              const std::function<MaskedStep(int)>&);          \
  template void set_final_figures<T>(FactorResult<T>&, double, double, double);                \
  template double returned_penalty_terms<T>(const Factors<T>&, const FactorOptions&);          \
  template PenaltySums penalty_sums<T>(const DenseMatrix<T>&);                                 \
  template double penalty<T>(const DenseMatrix<T>&, double, double);                           \
  template double frobenius_objective<T>(double, const Factors<T>&, const Penalties&);         \
  template std::vector<double> factor_scales<T>(const DenseMatrix<T>&);                        \
  template bool apply_scales<T>(DenseMatrix<T>&, DenseMatrix<T>&, const std::vector<double>&); \
  template void refuse_overflowed_scale<T>(bool);                                              \
  template void normalise<T>(Factors<T>&);
DNMF_MASKED_LOOP(float)
DNMF_MASKED_LOOP(double)
#undef DNMF_MASKED_LOOP

}  // namespace dnmf::solvers
