// factor() with missing values on more than one process: the 2-D grid, each rank reading its own block of A and
// the same block of the mask, the masked grid solver (solvers/masked_grid.hpp). factor_masked() hands over here.
#pragma once

#include "dnmf/context.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/source.hpp"

namespace dnmf::api {

/// factor() of a masked problem on the processes of `context` (more than one); same contract as factor(). Bad
/// input (a mask of another shape, a negative or NaN weight, a bad observed entry) fails on every rank with the
/// same CollectiveError, naming the file and the entry's place in A.
template <class T>
Factorization<T> factor_masked_grid(const Source& source, const FactorOptions& options, const Context& context,
                                    Gather gather, const InitialFactors<T>* initial);

}  // namespace dnmf::api
