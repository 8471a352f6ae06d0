// The parts of a Factorization that every factor path (unmasked, masked on one process, streamed, on the grid)
// fills alike, so that the report and gather() see the same fields whichever path ran.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/distribution.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/factor.hpp"
#include "solvers/init.hpp"
#include "util/dense_transpose.hpp"

namespace dnmf::api {

/// What was factorised and how: the input's name and format, the precision, A's shape and the options run.
template <class T>
void describe_input(Factorization<T>& run, const std::string& name, const std::string& format, index_t m, index_t n,
                    const FactorOptions& options) {
  run.input = name;
  run.format = format;
  run.precision = sizeof(T) == 4 ? "f32" : "f64";
  run.m = m;
  run.n = n;
  run.options = options;
}

/// This rank's factor pieces on a grid run, with their places in A and the grid gather() reads them from.
template <class T>
void keep_pieces(Factorization<T>& run, solvers::Factors<T>&& pieces, const Context& context,
                 dist::GridShape grid_shape, const dist::Layout& layout) {
  run.w_block = std::move(pieces.wt);
  run.h_block = std::move(pieces.h);
  run.w_row_first = layout.w_rows.first;
  run.h_col_first = layout.h_cols.first;
  run.grid = grid_shape.str();
  run.distribution = std::make_shared<detail::Distribution<T>>(detail::Distribution<T>{context, grid_shape, layout});
}

/// The factors of a one-process run (W and H in the result when `gather` asks for them), on a 1 x 1 grid with
/// no traffic.
template <class T>
void keep_one_process(Factorization<T>& run, solvers::Factors<T>&& factors, const Context& context,
                      dist::Communicator& world, Gather gather) {
  run.w_block = factors.wt;
  run.h_block = factors.h;
  if (gather == Gather::to_root) {
    run.result.W = util::transposed(factors.wt);
    run.result.H = std::move(factors.h);
  }
  run.communication.processes = 1;
  run.communication.bytes_per_iteration_per_rank = {0.0};
  // As the masked grid reports an auto choice (factor_masked_grid.cpp): by words, of which one process has none.
  if (context.grid == "auto") run.grid_choice = {"words", "1x1", {}, 0.0};
  const dist::Grid grid(world, {1, 1});
  run.distribution = std::make_shared<detail::Distribution<T>>(
      detail::Distribution<T>{context, {1, 1}, dist::make_layout(grid, run.m, run.n)});
}

/// Collective: every rank's bytes sent per iteration, gathered on rank 0 for the report, beside the model's
/// figure for one rank.
template <class T>
void record_traffic(Factorization<T>& run, dist::Communicator& world, const dist::Traffic& traffic,
                    double model_bytes_per_iteration) {
  const int iterations = std::max(run.result.iterations, 1);
  std::vector<double> bytes_per_rank(to_size(world.size()));
  const double mine = traffic.bytes_sent / iterations;
  world.gather(&mine, bytes_per_rank.data(), std::vector<std::size_t>(bytes_per_rank.size(), 1), dist::Scalar::f64, 0);
  run.communication.processes = world.size();
  run.communication.model_bytes_per_iteration = model_bytes_per_iteration;
  if (world.rank() == 0) run.communication.bytes_per_iteration_per_rank = std::move(bytes_per_rank);
}

}  // namespace dnmf::api
