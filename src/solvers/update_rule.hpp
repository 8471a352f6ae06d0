// The update rules as the kernels apply them: each algorithm's host implementation (its own file in this folder)
// attached to the backend's UpdateRule, so that the backends below apply the solvers' rules without including
// them.
#pragma once

#include "backend/kernels.hpp"
#include "dnmf/options.hpp"

namespace dnmf::solvers {

/// The rule of `algorithm` (eps guards every division; l1, l2 penalise the factor being updated) with its host
/// implementation attached (backend::UpdateRule::host_f32/host_f64).
[[nodiscard]] backend::UpdateRule update_rule(Algorithm algorithm, double eps, double l1 = 0, double l2 = 0);

/// The rules' eps for data whose fitted entries (`count` of them, all m·n without a mask) have the (weighted) sum
/// of squares `squared_norm`: 1e-16 (1e-12 in single precision) for a root mean square of 1, scaled as the
/// quantity it guards scales with A. A multiple c·A is fitted by factors √c times as large, so MU's divisors grow
/// as c^1.5, KL's (the other factor's sums) as c^0.5 and HALS's diagonal as c; with a fixed eps, data of 1e-12
/// met divisors below it and came back as zero factors. c·A thus gives the same iterates scaled by √c.
[[nodiscard]] double division_guard(Algorithm algorithm, bool single, double squared_norm, double count);

/// division_guard for weighted data (Σ w a² = weighted_squared_norm over `observed` entries whose weights sum to
/// weight_sum): the guard of the data's weighted mean square Σ w a² / Σ w, times the mean weight. Every divisor of
/// the masked rules is a weighted sum (Σ w y y, Σ w y), so scaling every weight by c scales them by c, and the guard
/// with them: the fit does not change. Without the mean weight (the guard of Σ w a² / count, which grows as √c),
/// weights of 1e-200 made MU's guard outweigh its divisors and returned zero factors. Unit weights: division_guard.
[[nodiscard]] double weighted_division_guard(Algorithm algorithm, bool single, double weighted_squared_norm,
                                             double weight_sum, double observed);

}  // namespace dnmf::solvers
