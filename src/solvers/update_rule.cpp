// See update_rule.hpp.

#include "solvers/update_rule.hpp"

#include "solvers/bpp.hpp"
#include "solvers/hals.hpp"
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
      mu_frobenius_update(rule, x, numer, g, first, last);
      return 0;
    case Algorithm::kl:
      mu_kl_update(rule, x, numer, y_row_sums, first, last);
      return 0;
    case Algorithm::hals:
      hals_update(rule, x, numer, g, first, last);
      return 0;
    case Algorithm::bpp:
      return bpp_update(rule, x, numer, g, first, last);
  }
  return 0;
}

}  // namespace

backend::UpdateRule update_rule(Algorithm algorithm, double eps, double l1, double l2) {
  backend::UpdateRule rule{algorithm, eps, l1, l2};
  rule.host_f32 = &host_update<float>;
  rule.host_f64 = &host_update<double>;
  return rule;
}

}  // namespace dnmf::solvers
