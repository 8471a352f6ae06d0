// The time model behind `--grid auto` (issue 14 item 7, docs/scaling.md "Choosing the grid by time"): the
// seconds one iteration takes on each candidate pr x pc grid, from the block each rank holds, the path the
// iteration takes on it (which side the single pass can tile, if any), the words the collectives move, and a
// few machine rates. On one node the compute path decides more often than the words do, so the words-only
// choice (choose_grid) is kept only as the tie-breaker.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dist/grid.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {

/// The matrix as the solver holds it and how the iteration may run on it.
struct GridProblem {
  index_t m = 0;
  index_t n = 0;
  index_t k = 1;
  bool sparse = false;       ///< CSR blocks; else dense
  double nnz = 0;            ///< stored entries of the whole matrix (sparse only)
  bool column_major = true;  ///< dense blocks' storage order (every reader and in-memory source gives column-major)
  std::size_t element_bytes = 8;  ///< 8 (f64) or 4 (f32)
  bool fused = true;              ///< FactorOptions::fused: the single pass is allowed
};

/// One process's rates (one core; measured on the development machine, docs/scaling.md). Compute rates are in
/// GFLOP/s of the two products with A (4·entries·k flop per iteration) at 8-byte elements.
struct MachineRates {
  double dense_fused_contiguous = 16.0;  ///< single pass over stripes along the storage (column stripes, column-major)
  double dense_fused_strided = 10.5;     ///< single pass over stripes across the storage (row stripes, column-major)
  double dense_unfused = 13.0;           ///< the two products apart, A read twice
  double sparse_fused = 3.0;             ///< CSR single pass by row tiles
  double sparse_unfused = 3.0;           ///< the two CSR products apart
  double single_speedup = 2.0;           ///< 4-byte elements: twice the lanes per vector
  /// The k-wide factor panels a product sweeps for every stripe of A (the factor it reads, the numerator it
  /// accumulates) stay in a core's cache up to this size (the library passes the L2 size); beyond it every
  /// compute rate is divided by out_of_cache_slowdown.
  double cache_bytes = 1024.0 * 1024.0;
  double out_of_cache_slowdown = 1.5;
  double memory_bytes_per_s = 10e9;  ///< streaming the factor-sized buffers (gathered factors, products)
  double network_bytes_per_s = 2e9;  ///< per rank, in a bandwidth-optimal collective
  double latency_s = 2e-6;           ///< per step of a collective
};

/// The iteration's path on a grid: the same rule as the solver's choose_pass for resident blocks.
enum class PassPath {
  fused_h,  ///< single pass tiling H's columns (needs pr = 1 and a dense block)
  fused_w,  ///< single pass tiling W's rows (needs pc = 1)
  unfused,  ///< two products and a reduction between each product and its update
};

/// "fused-H", "fused-W" or "unfused".
[[nodiscard]] std::string to_string(PassPath path);

/// The path the iteration takes on `shape`: the preferred side (H for dense, W for CSR) when the grid allows
/// it, else the other side when it does, else unfused.
[[nodiscard]] PassPath pass_path(GridShape shape, const GridProblem& problem);

/// The model's figures for one grid (seconds per iteration).
struct GridCost {
  GridShape shape;
  PassPath path = PassPath::unfused;
  double words = 0;        ///< words_per_rank
  double panel_bytes = 0;  ///< dense: the factor panels the products keep in cache (compared with cache_bytes)
  double compute_s = 0;    ///< the products with A on the busiest rank's block
  double memory_s = 0;     ///< the factor-sized buffers the products read and write
  double network_s = 0;    ///< words over the bandwidth plus steps times the latency
  [[nodiscard]] double total_s() const { return compute_s + memory_s + network_s; }
};

/// The predicted seconds per iteration of `problem` on `shape`.
[[nodiscard]] GridCost predict(GridShape shape, const GridProblem& problem, const MachineRates& rates = {});

/// What choose_grid_by_time decided and why.
struct GridChoice {
  GridShape chosen;
  GridShape by_words;                                            ///< the words-only choice (choose_grid)
  std::vector<GridCost> candidates;                              ///< every grid considered, by increasing rows
  [[nodiscard]] const GridCost& cost_of(GridShape shape) const;  ///< throws dnmf::Error when not a candidate
};

/// The grid of `processes` ranks with the least predicted time among those with no more grid rows than m nor
/// columns than n; the words-only choice when it is within `near_tie` (relative) of that time, so a difference
/// below the model's accuracy keeps the old rule. Deterministic: every rank computes the same choice.
[[nodiscard]] GridChoice choose_grid_by_time(int processes, const GridProblem& problem, const MachineRates& rates = {},
                                             double near_tie = 0.05);

}  // namespace dnmf::dist
