// See masked_iterate.hpp. Per column j of the half being updated, with y_i the other factor's columns:
//   Frobenius (mu, hals, bpp): G_j = Σ_i w_ij y_i y_iᵀ, b_j = Σ_i w_ij a_ij y_i, then the algorithm's column rule;
//   KL: s_j = Σ_i w_ij y_i replaces the row sums and b_j = Σ_i w_ij a_ij / (y_iᵀx_j) y_i the ratio product.
// b_j of a dense half is one product Yᵀ(W∘A); G_j is YᵀY corrected by the few entries whose weight is not 1.

#include "solvers/masked_iterate.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.hpp"
#include "backend/update_rules.hpp"
#include "dnmf/error.hpp"
#include "solvers/update_rule.hpp"

namespace dnmf::solvers {
namespace {

/// What one half-step leaves for the figures.
struct HalfSums {
  double cross = 0;        ///< Σ_j x_jᵀ b_j with the new x (Frobenius)
  double quad = 0;         ///< Σ_j x_jᵀ G_j x_j with the new x (Frobenius)
  double kl_log = 0;       ///< KL: Σ w a log(a / q) at the old x
  double kl_model = 0;     ///< KL: Σ w q at the old x
  double kl_squared = 0;   ///< KL: Σ w (a - q)² at the old x
  long long cap_hits = 0;  ///< bpp
};

template <class T>
double dot_column(const T* y, const T* x, index_t k) {
  double s = 0;
  for (index_t l = 0; l < k; ++l) s += static_cast<double>(y[l]) * static_cast<double>(x[l]);
  return s;
}

/// Column j's weighted Gram matrix into g (k x k).
template <class T>
void column_gram(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, const DenseMatrix<T>& full, index_t j,
                 std::vector<double>& g) {
  const index_t k = yt.rows();
  if (h.direct_gram) {
    std::fill(g.begin(), g.end(), 0.0);
  } else {
    std::copy(full.storage().begin(), full.storage().end(), g.begin());
  }
  for (index_t p = h.gram_ptr[to_size(j)]; p < h.gram_ptr[to_size(j) + 1]; ++p) {
    const T* y = yt.data() + h.gram_row[to_size(p)] * k;
    const double c = h.gram_coef[to_size(p)];
    for (index_t q = 0; q < k; ++q) {
      const double cy = c * static_cast<double>(y[q]);
      double* gq = g.data() + q * k;
      for (index_t l = 0; l < k; ++l) gq[l] += cy * static_cast<double>(y[l]);
    }
  }
}

/// out = G_j v without forming G_j: YᵀY v plus c (y_iᵀv) y_i per listed entry (2k flops each instead of k²).
template <class T>
void column_gram_times(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, const DenseMatrix<T>& full, index_t j,
                       const T* v, std::vector<double>& out) {
  const index_t k = yt.rows();
  std::fill(out.begin(), out.end(), 0.0);
  if (!h.direct_gram)
    for (index_t q = 0; q < k; ++q) {
      const double vq = static_cast<double>(v[q]);
      const T* gq = full.data() + q * k;
      for (index_t l = 0; l < k; ++l) out[to_size(l)] += static_cast<double>(gq[l]) * vq;
    }
  for (index_t p = h.gram_ptr[to_size(j)]; p < h.gram_ptr[to_size(j) + 1]; ++p) {
    const T* y = yt.data() + h.gram_row[to_size(p)] * k;
    const double c = h.gram_coef[to_size(p)] * dot_column(y, v, k);
    for (index_t l = 0; l < k; ++l) out[to_size(l)] += c * static_cast<double>(y[l]);
  }
}

/// One half-step: every column of x (k x h.cols) against yt (k x h.rows).
template <class T>
HalfSums update_half(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, DenseMatrix<T>& x,
                     const backend::UpdateRule& rule) {
  const index_t k = yt.rows();
  const bool kl = rule.algorithm == Algorithm::kl;
  const int ik = static_cast<int>(k);
  DenseMatrix<T> full(k, k);
  std::vector<double> sums(to_size(k), 0.0);
  if (kl) {
    for (index_t i = 0; i < h.rows; ++i)
      for (index_t l = 0; l < k; ++l) sums[to_size(l)] += static_cast<double>(yt(l, i));
  } else if (!h.direct_gram) {
    backend::blas::gemm(false, true, ik, ik, static_cast<int>(h.rows), T(1), yt.data(), ik, yt.data(), ik, T(0),
                        full.data(), ik);
  }
  DenseMatrix<T> numer;
  if (h.dense && !kl) {
    numer = DenseMatrix<T>(k, h.cols);
    backend::blas::gemm(false, false, ik, static_cast<int>(h.cols), static_cast<int>(h.rows), T(1), yt.data(), ik,
                        h.weighted.data(), static_cast<int>(h.rows), T(0), numer.data(), ik);
  }
  // Per-column sums added up in column order afterwards: the figures do not depend on the thread schedule.
  std::vector<HalfSums> per_column(to_size(h.cols));
#pragma omp parallel
  {
    std::vector<double> g(to_size(k * k));
    std::vector<T> gt(to_size(k * k)), b(to_size(k)), s(to_size(k));
    std::vector<double> bd(to_size(k)), sd(to_size(k)), gd(to_size(k));
    std::vector<T> nx(to_size(k));
#pragma omp for schedule(dynamic, 16)
    for (index_t j = 0; j < h.cols; ++j) {
      T* xj = x.data() + j * k;
      HalfSums& out = per_column[to_size(j)];
      if (h.unobserved[to_size(j)] != 0) {
        std::fill(xj, xj + k, T(0));
        continue;
      }
      const backend::View<T> xv(xj, k, 1, k);
      if (kl) {
        // s_j: the weighted column sums of Y over the observed entries.
        if (h.direct_gram) {
          std::fill(sd.begin(), sd.end(), 0.0);
        } else {
          std::copy(sums.begin(), sums.end(), sd.begin());
        }
        for (index_t p = h.gram_ptr[to_size(j)]; p < h.gram_ptr[to_size(j) + 1]; ++p) {
          const T* y = yt.data() + h.gram_row[to_size(p)] * k;
          for (index_t l = 0; l < k; ++l) sd[to_size(l)] += h.gram_coef[to_size(p)] * static_cast<double>(y[l]);
        }
        std::fill(bd.begin(), bd.end(), 0.0);
        const auto visit = [&](index_t i, double wa, double w) {
          const T* y = yt.data() + i * k;
          const double q = dot_column(y, xj, k);
          const double a = wa / w;
          out.kl_squared += w * (a - q) * (a - q);
          if (wa == 0) return;
          const double qf = std::max(q, backend::kl_model_floor);
          out.kl_log += wa * std::log(a / qf);
          const double r = wa / qf;
          for (index_t l = 0; l < k; ++l) bd[to_size(l)] += r * static_cast<double>(y[l]);
        };
        if (h.dense) {
          for (index_t i = 0; i < h.rows; ++i) {
            const double w = static_cast<double>(h.weights(i, j));
            if (w > 0) visit(i, static_cast<double>(h.weighted(i, j)), w);
          }
        } else {
          for (index_t p = h.ptr[to_size(j)]; p < h.ptr[to_size(j) + 1]; ++p)
            visit(h.row[to_size(p)], static_cast<double>(h.weighted_value[to_size(p)]),
                  static_cast<double>(h.weight[to_size(p)]));
        }
        for (index_t l = 0; l < k; ++l) {
          out.kl_model += sd[to_size(l)] * static_cast<double>(xj[l]);
          b[to_size(l)] = static_cast<T>(bd[to_size(l)]);
          s[to_size(l)] = static_cast<T>(sd[to_size(l)]);
        }
        const backend::CView<T> bv(b.data(), k, 1, k);
        out.cap_hits += backend::update_columns<T>(rule, xv, bv, bv, s.data(), 0, 1);
        continue;
      }
      if (h.dense) {
        std::copy(numer.data() + j * k, numer.data() + (j + 1) * k, b.begin());
      } else {
        std::fill(bd.begin(), bd.end(), 0.0);
        for (index_t p = h.ptr[to_size(j)]; p < h.ptr[to_size(j) + 1]; ++p) {
          const T* y = yt.data() + h.row[to_size(p)] * k;
          const double wa = static_cast<double>(h.weighted_value[to_size(p)]);
          for (index_t l = 0; l < k; ++l) bd[to_size(l)] += wa * static_cast<double>(y[l]);
        }
        for (index_t l = 0; l < k; ++l) b[to_size(l)] = static_cast<T>(bd[to_size(l)]);
      }
      if (rule.algorithm == Algorithm::mu) {
        // MU reads G_j only through G_j x: the rule of mu_frobenius.hpp with that product formed directly.
        column_gram_times(h, yt, full, j, xj, gd);
        for (index_t l = 0; l < k; ++l) {
          const double denom = rule.l1 + rule.l2 * static_cast<double>(xj[l]) + rule.eps + gd[to_size(l)];
          nx[to_size(l)] = static_cast<T>(static_cast<double>(xj[l]) * static_cast<double>(b[to_size(l)]) / denom);
        }
        std::copy(nx.begin(), nx.end(), xj);
        column_gram_times(h, yt, full, j, xj, gd);
        for (index_t l = 0; l < k; ++l) {
          out.cross += static_cast<double>(xj[l]) * static_cast<double>(b[to_size(l)]);
          out.quad += static_cast<double>(xj[l]) * gd[to_size(l)];
        }
        continue;
      }
      column_gram(h, yt, full, j, g);
      for (std::size_t e = 0; e < g.size(); ++e) gt[e] = static_cast<T>(g[e]);
      const backend::CView<T> bv(b.data(), k, 1, k);
      const backend::CView<T> gv(gt.data(), k, k, k);
      out.cap_hits += backend::update_columns<T>(rule, xv, bv, gv, nullptr, 0, 1);
      for (index_t q = 0; q < k; ++q) {
        const double xq = static_cast<double>(xj[q]);
        out.cross += xq * static_cast<double>(b[to_size(q)]);
        double gx = 0;
        for (index_t l = 0; l < k; ++l) gx += g[to_size(l + q * k)] * static_cast<double>(xj[l]);
        out.quad += xq * gx;
      }
    }
  }
  HalfSums total;
  for (const HalfSums& c : per_column) {
    total.cross += c.cross;
    total.quad += c.quad;
    total.kl_log += c.kl_log;
    total.kl_model += c.kl_model;
    total.kl_squared += c.kl_squared;
    total.cap_hits += c.cap_hits;
  }
  return total;
}

/// l1 Σx + 0.5 l2 ||x||².
template <class T>
double penalty(const DenseMatrix<T>& x, double l1, double l2) {
  if (l1 == 0 && l2 == 0) return 0;
  double s = 0, q = 0;
  for (const T v : x.storage()) {
    s += static_cast<double>(v);
    q += static_cast<double>(v) * static_cast<double>(v);
  }
  return l1 * s + 0.5 * l2 * q;
}

/// Rows of Wt (columns of W) sum to 1; H's rows absorb the scale.
template <class T>
void normalise(Factors<T>& f) {
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
void zero_unobserved(const MaskedHalf<T>& h, DenseMatrix<T>& x) {
  for (index_t j = 0; j < h.cols; ++j)
    if (h.unobserved[to_size(j)] != 0)
      for (index_t l = 0; l < x.rows(); ++l) x(l, j) = T(0);
}

}  // namespace

template <class T>
double masked_relative_error(const MaskedProblem<T>& p, const DenseMatrix<T>& wt, const DenseMatrix<T>& h) {
  const MaskedHalf<T>& half = p.h_half;
  const index_t k = wt.rows();
  std::vector<double> per_column(to_size(half.cols), 0.0);  // summed in order: independent of the schedule
#pragma omp parallel for schedule(static)
  for (index_t j = 0; j < half.cols; ++j) {
    const T* hj = h.data() + j * k;
    double& num = per_column[to_size(j)];
    const auto add = [&](index_t i, double wa, double w) {
      const double r = wa / w - dot_column(wt.data() + i * k, hj, k);
      num += w * r * r;
    };
    if (half.dense) {
      for (index_t i = 0; i < half.rows; ++i) {
        const double w = static_cast<double>(half.weights(i, j));
        if (w > 0) add(i, static_cast<double>(half.weighted(i, j)), w);
      }
    } else {
      for (index_t e = half.ptr[to_size(j)]; e < half.ptr[to_size(j) + 1]; ++e)
        add(half.row[to_size(e)], static_cast<double>(half.weighted_value[to_size(e)]),
            static_cast<double>(half.weight[to_size(e)]));
    }
  }
  double num = 0;
  for (const double v : per_column) num += v;
  return std::sqrt(num / p.weighted_squared_norm);
}

template <class T>
FactorResult<T> iterate_masked(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f) {
  constexpr double eps = std::is_same_v<T, float> ? 1e-12 : 1e-16;  // as the unmasked iteration
  const auto& pen = options.penalties;
  const backend::UpdateRule rule_h = update_rule(options.algorithm, eps, pen.l1_h, pen.l2_h);
  const backend::UpdateRule rule_w = update_rule(options.algorithm, eps, pen.l1_w, pen.l2_w);
  const bool kl = options.algorithm == Algorithm::kl;
  FactorResult<T> result;
  result.masked = true;
  result.observed = p.observed;
  result.unobserved_rows = p.unobserved_rows;
  result.unobserved_cols = p.unobserved_cols;
  result.backend = "cpu";
  result.threads = omp_get_max_threads();
  zero_unobserved(p.h_half, f.h);
  zero_unobserved(p.w_half, f.wt);
  const auto start = std::chrono::steady_clock::now();
  double previous = std::numeric_limits<double>::quiet_NaN();
  for (int it = 1; it <= options.max_iterations; ++it) {
    // The halves in the order asked for (FactorOptions::w_first); the figures come from the second one.
    const HalfSums first =
        options.w_first ? update_half(p.w_half, f.h, f.wt, rule_w) : update_half(p.h_half, f.wt, f.h, rule_h);
    const HalfSums last =
        options.w_first ? update_half(p.h_half, f.wt, f.h, rule_h) : update_half(p.w_half, f.h, f.wt, rule_w);
    result.nnls_cap_hits += first.cap_hits + last.cap_hits;
    double squared = 0, objective = 0;
    if (kl) {
      // At the state where the second half formed its ratios, (W_{t-1}, H_t) in H-first order, as the unmasked
      // iteration reports.
      squared = last.kl_squared;
      objective = last.kl_log - p.weighted_sum + last.kl_model;
    } else {
      squared = p.weighted_squared_norm - 2 * last.cross + last.quad;
      objective = 0.5 * std::max(squared, 0.0) + penalty(f.wt, pen.l1_w, pen.l2_w) + penalty(f.h, pen.l1_h, pen.l2_h);
    }
    const double rel = std::sqrt(std::max(squared, 0.0) / p.weighted_squared_norm);
    if (!std::isfinite(objective) || !std::isfinite(rel))
      throw NumericalError("numerical breakdown at iteration " + std::to_string(it) + " (" +
                           to_string(options.algorithm) + ", masked): the objective is not finite");
    result.rel_error_history.push_back(rel);
    result.objective_history.push_back(objective);
    result.iterations = it;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.progress) options.progress({it, options.max_iterations, rel, objective, seconds});
    const bool stop = it > 1 && options.tol > 0 && std::abs(previous - objective) <= options.tol * std::abs(previous);
    if (options.cancel && options.cancel()) throw Cancelled("cancelled at iteration " + std::to_string(it));
    if (stop) {
      result.converged = true;
      break;
    }
    previous = objective;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.normalize) normalise(f);
  result.rel_error = masked_relative_error(p, f.wt, f.h);
  result.norm_a = std::sqrt(p.weighted_squared_norm);
  result.objective = result.objective_history.empty() ? 0.0 : result.objective_history.back();
  return result;
}

template FactorResult<float> iterate_masked<float>(const MaskedProblem<float>&, const FactorOptions&, Factors<float>&);
template FactorResult<double> iterate_masked<double>(const MaskedProblem<double>&, const FactorOptions&,
                                                     Factors<double>&);
template double masked_relative_error<float>(const MaskedProblem<float>&, const DenseMatrix<float>&,
                                             const DenseMatrix<float>&);
template double masked_relative_error<double>(const MaskedProblem<double>&, const DenseMatrix<double>&,
                                              const DenseMatrix<double>&);

}  // namespace dnmf::solvers
