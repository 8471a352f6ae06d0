// The per-column update rules (MU, KL, HALS, BPP) on the host, shared by the reference and cpu backends; each
// rule is stated and implemented in its own file under solvers/ (mu_frobenius.hpp, mu_kl.hpp, hals.hpp,
// bpp.hpp) and reaches the backends as a function in the UpdateRule. Each column of X depends only on the same column
// of the numerator (DESIGN §3), which is what lets the fused pass update a tile as soon as its numerator is known.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"

namespace dnmf::backend {

/// Floor for the KL model value m = (WH)_ij so that a / m stays finite where W H has an exact zero.
inline constexpr double kl_model_floor = 1e-30;

/// One entry of A ⊘ (WH): zero where A is zero (0·log 0 = 0 and no contribution to the gradient).
inline double kl_ratio(double a, double m) { return a == 0 ? 0.0 : a / std::max(m, kl_model_floor); }

/// A weighted entry's a·log(a / m) term of KL(A ‖ WH), w·a·log(a / m) from wa = w·a and the weight w, the model
/// floored as kl_ratio floors it; zero where A is zero. The masked solvers' figures and final objectives sum it.
inline double kl_log_term(double wa, double w, double m) {
  return wa == 0 ? 0.0 : wa * std::log(wa / w / std::max(m, kl_model_floor));
}

/// Updates columns [first, last) of x in place by the rule's host implementation (stated in its own file under
/// solvers/ and handed down in the rule). Returns the NNLS round-cap hits (bpp), else 0.
template <class T>
int update_columns(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums, index_t first,
                   index_t last) {
  const auto host = [&] {
    if constexpr (std::is_same_v<T, float>) {
      return rule.host_f32;
    } else {
      return rule.host_f64;
    }
  }();
  if (host == nullptr) throw Error("update rule without a host implementation (make rules with solvers::update_rule)");
  return host(rule, x, numer, g, y_row_sums, first, last);
}

}  // namespace dnmf::backend
