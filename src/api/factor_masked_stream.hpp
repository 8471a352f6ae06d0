// factor() with missing values under a memory budget: A and its mask planned against the budget and, when they
// do not fit, streamed in tiles through the masked streamed solver (solvers/masked_stream.hpp, docs/masked.md).
#pragma once

#include <optional>

#include "dnmf/context.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/source.hpp"

namespace dnmf::api {

/// The masked factorisation of a file under context.memory_budget when the plan streams it; std::nullopt when
/// A, the mask and the in-memory masked solver's copies fit the budget (the in-memory path runs then, and
/// `resident` receives the plan's figures for its report).
/// `options` are the resolved `requested`. UsageError for what streaming cannot do (an in-memory source or
/// mask, a mask that is not a .npy in A's order, a sparse A without --unstored missing or with a mask, hals or
/// bpp whose per-line Gram matrices do not fit); dnmf::Error stating the minimum for a budget too small.
template <class T>
std::optional<Factorization<T>> factor_masked_streamed(const Source& source, const FactorOptions& options,
                                                       const FactorOptions& requested, const Context& context,
                                                       Gather gather, const InitialFactors<T>* initial,
                                                       MemoryFigures& resident);

}  // namespace dnmf::api
