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

/// The grid of `processes` ranks for A of `shape` (as stored) under `context.grid`, and how it was chosen.
/// "auto" uses the time model on the cpu backend, whose rates it holds, and the words-only rule on the others
/// (and when a sparse file's entry count is unknown). Deterministic: the same on every rank.
[[nodiscard]] dist::GridShape pick_grid(const Context& context, int processes, const io::MatrixShape& shape,
                                        const FactorOptions& options, std::size_t element_bytes,
                                        GridChoiceFigures& figures);

}  // namespace dnmf::api
