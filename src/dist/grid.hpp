// The 2-D process grid and the distribution of A, W and H over it (DESIGN §4).
//
// Rank r = i·pc + j sits at grid position (i, j) and holds block A_ij: rows block_range(m, pr, i), columns
// block_range(n, pc, j). W's block row i is split among the pc ranks of grid row i (rank (i, j) owns piece j),
// H's block column j among the pr ranks of grid column j (rank (i, j) owns piece i). Every row of W and
// every column of H is owned by exactly one rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::dist {

/// pr x pc.
struct GridShape {
  int rows = 1;
  int cols = 1;
  [[nodiscard]] int size() const { return rows * cols; }
  [[nodiscard]] std::string str() const { return std::to_string(rows) + "x" + std::to_string(cols); }
  bool operator==(const GridShape&) const = default;
};

/// Parses "PRxPC" (e.g. "2x3"); throws dnmf::Error naming the text otherwise. "auto" is not accepted here.
[[nodiscard]] GridShape parse_grid(const std::string& text);

/// Words each rank moves per iteration on a pr x pc grid by DESIGN §4's model: the allgather and
/// reduce-scatter volumes of both halves plus the k x k allreduces.
[[nodiscard]] double words_per_rank(GridShape shape, index_t m, index_t n, index_t k);

/// The grid of `processes` ranks minimising words_per_rank (ties: the squarer grid, then the one with more
/// rows, where CSR blocks keep the single pass) among those with no more grid rows than m nor columns than n.
[[nodiscard]] GridShape choose_grid(int processes, index_t m, index_t n, index_t k);

/// A half-open index range.
struct Range {
  index_t first = 0;
  index_t last = 0;
  [[nodiscard]] index_t size() const { return last - first; }
  bool operator==(const Range&) const = default;
};

/// Part `index` of [0, extent) split into `parts` consecutive ranges; the first extent % parts get one more.
[[nodiscard]] Range block_range(index_t extent, int parts, int index);

/// This rank's place on the grid and the communicators along it.
class Grid {
 public:
  /// Throws dnmf::Error when shape.size() differs from world.size() (the same on every rank: no hang).
  Grid(Communicator& world, GridShape shape);
  [[nodiscard]] GridShape shape() const { return shape_; }
  [[nodiscard]] int row() const { return row_; }  ///< i
  [[nodiscard]] int col() const { return col_; }  ///< j
  [[nodiscard]] Communicator& world() const { return *world_; }
  /// The pc ranks of grid row i, ordered by j.
  [[nodiscard]] Communicator& row_comm() const { return *row_comm_; }
  /// The pr ranks of grid column j, ordered by i.
  [[nodiscard]] Communicator& col_comm() const { return *col_comm_; }
  /// Traffic of the world, row and column communicators together.
  [[nodiscard]] Traffic traffic() const;
  void reset_traffic();

 private:
  Communicator* world_;
  GridShape shape_;
  int row_ = 0, col_ = 0;
  std::unique_ptr<Communicator> row_comm_, col_comm_;
};

/// The ranges one rank holds of an m x n problem on a grid (global indices).
struct Layout {
  index_t m = 0, n = 0;
  Range a_rows;                        ///< rows of A_ij (block row i)
  Range a_cols;                        ///< columns of A_ij (block column j)
  Range w_rows;                        ///< rows of W this rank owns (inside a_rows)
  Range h_cols;                        ///< columns of H this rank owns (inside a_cols)
  std::vector<index_t> w_piece_sizes;  ///< rows owned by each rank of the grid row, by j
  std::vector<index_t> h_piece_sizes;  ///< columns owned by each rank of the grid column, by i
};

/// The layout of rank (grid.row(), grid.col()).
[[nodiscard]] Layout make_layout(const Grid& grid, index_t m, index_t n);
/// The layout of rank (i, j) of a grid shape (no communicators needed: planning and tests).
[[nodiscard]] Layout make_layout(GridShape shape, int i, int j, index_t m, index_t n);

}  // namespace dnmf::dist
