#include "api/grid_choice.hpp"

#include <unistd.h>

#include "dist/grid_cost.hpp"

namespace dnmf::api {

double local_cache_bytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? static_cast<double>(l2) : 1024.0 * 1024.0;
}

dist::GridShape pick_grid(const Context& context, int processes, const io::MatrixShape& shape,
                          const FactorOptions& options, std::size_t element_bytes, double cache_bytes,
                          GridChoiceFigures& figures) {
  figures = GridChoiceFigures{};
  if (context.grid != "auto") return dist::parse_grid(context.grid);
  const dist::GridShape by_words = dist::choose_grid(processes, shape.rows, shape.cols, options.rank);
  figures.by_words = by_words.str();
  // The rates are the cpu backend's; a sparse matrix of unknown size gives the model nothing to weigh.
  if (options.backend != BackendKind::cpu || (shape.sparse && shape.stored < 0)) {
    figures.rule = "words";
    return by_words;
  }
  dist::GridProblem problem;
  problem.m = shape.rows;
  problem.n = shape.cols;
  problem.k = options.rank;
  problem.sparse = shape.sparse;
  problem.nnz = static_cast<double>(shape.stored);
  // Every reader gives column-major dense blocks (a C-order .npy is transposed on reading), and a row-major
  // matrix in memory is factored as its transpose, which is column-major.
  problem.column_major = true;
  problem.element_bytes = element_bytes;
  problem.fused = options.fused;
  dist::MachineRates rates;
  rates.cache_bytes = cache_bytes;
  const dist::GridChoice choice = dist::choose_grid_by_time(processes, problem, rates);
  figures.rule = "time model";
  for (const dist::GridCost& c : choice.candidates)
    figures.candidates.push_back({c.shape.str(), dist::to_string(c.path), c.words, c.total_s(), c.compute_s, c.memory_s,
                                  c.network_s, c.panel_bytes});
  figures.cache_bytes = cache_bytes;
  return choice.chosen;
}

}  // namespace dnmf::api
