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

}  // namespace dnmf::solvers
