// `--grid` for factor(): a given PRxPC as it is, or "auto" by the time model of dist/grid_cost.hpp, with the
// figures report.json prints.
#pragma once

#include <cstddef>

#include "dist/grid.hpp"
#include "dnmf/context.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/io.hpp"
#include "dnmf/options.hpp"

namespace dnmf::api {

/// This core's L2 cache in bytes (sysconf), or 1 MiB where the system does not say.
[[nodiscard]] double local_cache_bytes();

/// The grid of `processes` ranks for A of `shape` (as stored) under `context.grid`, and how it was chosen.
/// "auto" uses the time model on the cpu backend, whose rates it holds, and the words-only rule on the others
/// (and when a sparse file's entry count is unknown). `cache_bytes`: the same on every rank (the smallest
/// local_cache_bytes of all), so that the choice is too.
[[nodiscard]] dist::GridShape pick_grid(const Context& context, int processes, const io::MatrixShape& shape,
                                        const FactorOptions& options, std::size_t element_bytes, double cache_bytes,
                                        GridChoiceFigures& figures);

}  // namespace dnmf::api
