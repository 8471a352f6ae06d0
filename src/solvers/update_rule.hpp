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

}  // namespace dnmf::solvers
