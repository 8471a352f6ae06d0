// factor() with missing values (FactorOptions::missing): one process, A and the mask in memory, the masked
// solver (solvers/masked_*.hpp). Every other path refuses it with a UsageError rather than ignore the mask.
#pragma once

#include "dnmf/context.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/source.hpp"

namespace dnmf::api {

/// factor() of a masked problem; same contract as factor(). The factors are A's whatever the sources' storage.
template <class T>
Factorization<T> factor_masked(const Source& source, const FactorOptions& options, const Context& context,
                               Gather gather, const InitialFactors<T>* initial);

}  // namespace dnmf::api
