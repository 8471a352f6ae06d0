#include "dist/grid.hpp"

#include <cmath>
#include <limits>
#include <regex>

#include "dnmf/error.hpp"

namespace dnmf::dist {

GridShape parse_grid(const std::string& text) {
  static const std::regex pattern("([1-9][0-9]{0,5})x([1-9][0-9]{0,5})");
  std::smatch match;
  if (!std::regex_match(text, match, pattern))
    throw UsageError("--grid: expected auto or PRxPC (e.g. 2x4), got '" + text + "'");
  return {std::stoi(match[1].str()), std::stoi(match[2].str())};
}

double words_per_rank(GridShape shape, index_t m, index_t n, index_t k) {
  const double pr = shape.rows, pc = shape.cols, kk = static_cast<double>(k);
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  // H half: allgather of W's block row along the grid row ((pc-1)/pc · k·m/pr), reduce-scatter of P along the
  // grid column ((pr-1)/pr · k·n/pc). W half: the mirror. Plus two k x k Gram allreduces.
  const double gather_w = (pc - 1) / pc * kk * md / pr;
  const double scatter_p = (pr - 1) / pr * kk * nd / pc;
  const double gather_h = (pr - 1) / pr * kk * nd / pc;
  const double scatter_q = (pc - 1) / pc * kk * md / pr;
  const double p = pr * pc;
  const double grams = 2 * 2 * (p - 1) / p * kk * kk;
  return gather_w + scatter_p + gather_h + scatter_q + grams;
}

GridShape choose_grid(int processes, index_t m, index_t n, index_t k) {
  GridShape best{1, processes};
  double best_words = std::numeric_limits<double>::infinity();
  for (int pr = 1; pr <= processes; ++pr) {
    if (processes % pr != 0) continue;
    const GridShape s{pr, processes / pr};
    // A grid with more parts than rows (or columns) would leave ranks without data.
    if (s.rows > m || s.cols > n) continue;
    const double words = words_per_rank(s, m, n, k);
    const double squareness = std::abs(std::log(static_cast<double>(s.rows) / s.cols));
    const double best_squareness = std::abs(std::log(static_cast<double>(best.rows) / best.cols));
    // Ties in words go to the squarer grid, then to the taller one (pr runs upwards, so `<=` keeps the
    // later): CSR blocks are tiled by rows, so a one-column grid keeps the single pass for sparse input.
    if (words < best_words * (1 - 1e-12) ||
        (words <= best_words * (1 + 1e-12) && squareness <= best_squareness + 1e-12)) {
      best = s;
      best_words = words;
    }
  }
  return best;
}

Range block_range(index_t extent, int parts, int index) {
  const index_t base = extent / parts;
  const index_t extra = extent % parts;
  const index_t first = index * base + std::min<index_t>(index, extra);
  return {first, first + base + (index < extra ? 1 : 0)};
}

Grid::Grid(Communicator& world, GridShape shape) : world_(&world), shape_(shape) {
  if (shape.rows < 1 || shape.cols < 1 || shape.size() != world.size())
    throw UsageError("--grid " + shape.str() + " needs " + std::to_string(shape.size()) +
                     " processes, but this job has " + std::to_string(world.size()) +
                     (world.size() == 1 ? " (run it under mpirun -np " + std::to_string(shape.size()) + ")" : ""));
  row_ = world.rank() / shape.cols;
  col_ = world.rank() % shape.cols;
  row_comm_ = world.split(row_, col_);
  col_comm_ = world.split(shape.rows + col_, row_);
}

Traffic Grid::traffic() const {
  Traffic t = world_->traffic();
  t += row_comm_->traffic();
  t += col_comm_->traffic();
  return t;
}

void Grid::reset_traffic() {
  world_->reset_traffic();
  row_comm_->reset_traffic();
  col_comm_->reset_traffic();
}

Layout make_layout(GridShape shape, int i, int j, index_t m, index_t n) {
  Layout l;
  l.m = m;
  l.n = n;
  l.a_rows = block_range(m, shape.rows, i);
  l.a_cols = block_range(n, shape.cols, j);
  for (int q = 0; q < shape.cols; ++q) l.w_piece_sizes.push_back(block_range(l.a_rows.size(), shape.cols, q).size());
  for (int q = 0; q < shape.rows; ++q) l.h_piece_sizes.push_back(block_range(l.a_cols.size(), shape.rows, q).size());
  const Range w = block_range(l.a_rows.size(), shape.cols, j);
  const Range h = block_range(l.a_cols.size(), shape.rows, i);
  l.w_rows = {l.a_rows.first + w.first, l.a_rows.first + w.last};
  l.h_cols = {l.a_cols.first + h.first, l.a_cols.first + h.last};
  return l;
}

Layout make_layout(const Grid& grid, index_t m, index_t n) {
  return make_layout(grid.shape(), grid.row(), grid.col(), m, n);
}

}  // namespace dnmf::dist
