// See update_rule.hpp.

#include "solvers/update_rule.hpp"

#include <cmath>
#include <limits>

#include "solvers/bpp.hpp"
#include "solvers/hals.hpp"
#include "solvers/listed_products.hpp"
#include "solvers/mu_frobenius.hpp"
#include "solvers/mu_kl.hpp"

namespace dnmf::solvers {
namespace {

/// Columns [first, last) of x by the rule's algorithm; NNLS round-cap hits for bpp, else 0.
template <class T>
int host_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                const T* y_row_sums, index_t first, index_t last) {
  switch (rule.algorithm) {
    case Algorithm::mu:
      if (mu_frobenius_wide_for(x.rows) && listed_gram_wide()) {  // AVX-512F: eight columns per register
        avx512::mu_frobenius_update_wide(rule, x, numer, g, first, last);
      } else {
        mu_frobenius_update(rule, x, numer, g, first, last);
      }
      return 0;
    case Algorithm::kl:
      mu_kl_update(rule, x, numer, y_row_sums, first, last);
      return 0;
    case Algorithm::hals:
      if (listed_gram_wide()) {  // AVX-512F: eight columns per register, the same bits
        avx512::hals_update_wide(rule, x, numer, g, first, last);
      } else {
        hals_update(rule, x, numer, g, first, last);
      }
      return 0;
    case Algorithm::bpp: {
      // An iteration solves the same shapes in every half-step: kept per thread, the NNLS arrays are allocated
      // once instead of per call (fresh pages and zeroed workspaces were ~5% of a 4000 x 3000 f32 BPP
      // iteration). Larger calls allocate their own, so that no thread holds more than a few MB after a run.
      constexpr index_t kKeptEntries = index_t{1} << 18;
      thread_local BppScratch<T> scratch;
      const bool keep = x.rows * (last - first) <= kKeptEntries;
      return bpp_update(rule, x, numer, g, first, last, keep ? &scratch : nullptr);
    }
  }
  return 0;
}

// A guard that underflows to zero guards nothing: the smallest normal double is the floor.
double at_least_normal(double guard) {
  return guard > std::numeric_limits<double>::min() ? guard : std::numeric_limits<double>::min();
}

}  // namespace

template <class T>
void hals_update_four_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                           backend::CView<T> g, index_t first, index_t last) {
  hals_update(rule, x, numer, g, first, last);
}

template <class T>
void mu_frobenius_update_four_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                                   backend::CView<T> g, index_t first, index_t last) {
  mu_frobenius_update(rule, x, numer, g, first, last);
}

template void hals_update_four_wide(const backend::UpdateRule&, backend::View<double>, backend::CView<double>,
                                    backend::CView<double>, index_t, index_t);
template void hals_update_four_wide(const backend::UpdateRule&, backend::View<float>, backend::CView<float>,
                                    backend::CView<float>, index_t, index_t);
template void mu_frobenius_update_four_wide(const backend::UpdateRule&, backend::View<double>, backend::CView<double>,
                                            backend::CView<double>, index_t, index_t);
template void mu_frobenius_update_four_wide(const backend::UpdateRule&, backend::View<float>, backend::CView<float>,
                                            backend::CView<float>, index_t, index_t);

backend::UpdateRule update_rule(Algorithm algorithm, double eps, double l1, double l2) {
  backend::UpdateRule rule{algorithm, eps, l1, l2};
  rule.host_f32 = &host_update<float>;
  rule.host_f64 = &host_update<double>;
  return rule;
}

double division_guard(Algorithm algorithm, bool single, double squared_norm, double count) {
  const double base = single ? 1e-12 : 1e-16;
  const double rms = count > 0 ? std::sqrt(squared_norm / count) : 0.0;
  if (!(rms > 0) || !std::isfinite(rms)) return base;
  const double power = algorithm == Algorithm::mu ? 1.5 : algorithm == Algorithm::kl ? 0.5 : 1.0;
  return at_least_normal(base * std::pow(rms, power));
}

double weighted_division_guard(Algorithm algorithm, bool single, double weighted_squared_norm, double weight_sum,
                               double observed) {
  if (!(weight_sum > 0) || !(observed > 0)) return division_guard(algorithm, single, weighted_squared_norm, observed);
  return at_least_normal(division_guard(algorithm, single, weighted_squared_norm, weight_sum) *
                         (weight_sum / observed));
}

}  // namespace dnmf::solvers
