// The per-column update rules (MU, KL, HALS, BPP) on the host, shared by the reference and cpu backends; each
// rule is stated and implemented in its own file under solvers/ (mu_frobenius.hpp, mu_kl.hpp, hals.hpp,
// bpp.hpp). Each column of X depends only on the same column of the numerator (DESIGN §3), which is what lets
// the fused pass update a tile as soon as its numerator is known.
#pragma once

#include <algorithm>

#include "backend/kernels.hpp"
#include "solvers/bpp.hpp"
#include "solvers/hals.hpp"
#include "solvers/mu_frobenius.hpp"
#include "solvers/mu_kl.hpp"

namespace dnmf::backend {

/// Floor for the KL model value m = (WH)_ij so that a / m stays finite where W H has an exact zero.
inline constexpr double kl_model_floor = 1e-30;

/// One entry of A ⊘ (WH): zero where A is zero (0·log 0 = 0 and no contribution to the gradient).
inline double kl_ratio(double a, double m) { return a == 0 ? 0.0 : a / std::max(m, kl_model_floor); }

/// Updates columns [first, last) of x in place by the rule's algorithm, stated in its own file under solvers/.
/// Returns the NNLS round-cap hits (bpp), else 0.
template <class T>
int update_columns(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums, index_t first,
                   index_t last) {
  switch (rule.algorithm) {
    case Algorithm::mu:
      solvers::mu_frobenius_update(rule, x, numer, g, first, last);
      return 0;
    case Algorithm::kl:
      solvers::mu_kl_update(rule, x, numer, y_row_sums, first, last);
      return 0;
    case Algorithm::hals:
      solvers::hals_update(rule, x, numer, g, first, last);
      return 0;
    case Algorithm::bpp:
      return solvers::bpp_update(rule, x, numer, g, first, last);
  }
  return 0;
}

}  // namespace dnmf::backend
