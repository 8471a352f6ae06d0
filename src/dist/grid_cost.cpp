#include "dist/grid_cost.hpp"

#include <cmath>

#include "dnmf/error.hpp"

namespace dnmf::dist {
namespace {

double ceil_div(index_t a, int b) { return std::ceil(static_cast<double>(a) / b); }

// Steps of the collectives of one iteration: ring allgathers and reduce-scatters take p - 1 steps each, the two
// k x k allreduces and the scalar ones (the error's cross term, the stopping decision) about 2·log2 p.
double collective_steps(GridShape s) {
  const double p = s.size();
  if (p <= 1) return 0;
  const double along = 2.0 * (s.cols - 1) + 2.0 * (s.rows - 1);
  return along + 4.0 * 2.0 * std::ceil(std::log2(p));
}

}  // namespace

std::string to_string(PassPath path) {
  switch (path) {
    case PassPath::fused_h:
      return "fused-H";
    case PassPath::fused_w:
      return "fused-W";
    case PassPath::unfused:
      break;
  }
  return "unfused";
}

PassPath pass_path(GridShape shape, const GridProblem& problem) {
  if (!problem.fused) return PassPath::unfused;
  // H's side tiles columns, which a CSR block cannot; a side is open only when no reduction sits between a
  // tile's numerator and its update: its factor is not split across the grid (pr = 1 for H, pc = 1 for W).
  const bool h_open = shape.rows == 1 && !problem.sparse;
  const bool w_open = shape.cols == 1;
  if (problem.sparse) return w_open ? PassPath::fused_w : PassPath::unfused;
  if (h_open) return PassPath::fused_h;
  return w_open ? PassPath::fused_w : PassPath::unfused;
}

GridCost predict(GridShape shape, const GridProblem& problem, const MachineRates& rates) {
  GridCost c;
  c.shape = shape;
  c.path = pass_path(shape, problem);
  c.words = words_per_rank(shape, problem.m, problem.n, problem.k);
  const double k = static_cast<double>(problem.k);
  const double rows = ceil_div(problem.m, shape.rows);  // the busiest rank's block
  const double cols = ceil_div(problem.n, shape.cols);
  const double speedup = problem.element_bytes < 8 ? rates.single_speedup : 1.0;

  double entries = rows * cols;
  double gflops = rates.dense_unfused;
  if (problem.sparse) {
    entries = problem.nnz / shape.size();  // non-zeros spread evenly: the model does not see their pattern
    gflops = c.path == PassPath::fused_w ? rates.sparse_fused : rates.sparse_unfused;
  } else if (c.path != PassPath::unfused) {
    // Column stripes of a column-major block (rows of a row-major one) are contiguous; the other way each
    // stripe is a set of short strided runs and goes through the generic schedule.
    const bool along_storage = (c.path == PassPath::fused_h) == problem.column_major;
    gflops = along_storage ? rates.dense_fused_contiguous : rates.dense_fused_strided;
  }
  // Panels: a stripe of a dense block meets the whole factor along its other extent. Fused, that factor is read
  // and the other side's numerator accumulated at the same length (two panels); apart, each product holds one.
  // CSR blocks: not modelled (their measured order did not follow the panel sizes consistently).
  const auto bytes = static_cast<double>(problem.element_bytes);
  const double along = c.path == PassPath::fused_h ? rows : cols;  // tiles of H's columns meet all block rows
  if (!problem.sparse) c.panel_bytes = c.path == PassPath::unfused ? k * rows * bytes : 2.0 * k * along * bytes;
  const double cache_factor = c.panel_bytes > rates.cache_bytes ? rates.out_of_cache_slowdown : 1.0;
  c.compute_s = 4.0 * entries * k * cache_factor / (gflops * 1e9 * speedup);

  // Each product reads one gathered factor (k x rows or k x cols) and writes the other's numerator; the
  // collectives read and write them again: about four sweeps of both.
  c.memory_s = 4.0 * k * (rows + cols) * bytes / rates.memory_bytes_per_s;
  c.network_s = c.words * bytes / rates.network_bytes_per_s + collective_steps(shape) * rates.latency_s;
  return c;
}

const GridCost& GridChoice::cost_of(GridShape shape) const {
  for (const GridCost& c : candidates)
    if (c.shape == shape) return c;
  throw Error("grid " + shape.str() + " was not among the candidates of the grid choice");
}

GridChoice choose_grid_by_time(int processes, const GridProblem& problem, const MachineRates& rates, double near_tie) {
  GridChoice choice;
  choice.by_words = choose_grid(processes, problem.m, problem.n, problem.k);
  for (int pr = 1; pr <= processes; ++pr) {
    if (processes % pr != 0) continue;
    const GridShape s{pr, processes / pr};
    if (s.rows > problem.m || s.cols > problem.n) continue;
    choice.candidates.push_back(predict(s, problem, rates));
  }
  // No grid fits (more processes than both extents): the words-only rule decides, as before.
  choice.chosen = choice.by_words;
  if (choice.candidates.empty()) return choice;
  const GridCost* fastest = &choice.candidates.front();
  for (const GridCost& c : choice.candidates)
    if (c.total_s() < fastest->total_s()) fastest = &c;
  const GridCost* old = nullptr;
  for (const GridCost& c : choice.candidates)
    if (c.shape == choice.by_words) old = &c;
  if (old == nullptr || old->total_s() > fastest->total_s() * (1 + near_tie)) choice.chosen = fastest->shape;
  return choice;
}

}  // namespace dnmf::dist
