// One block of the masked problem on the 2-D process grid: this rank's rows and columns of A and of its weights
// in the masked solver's form (solvers/masked_problem.hpp), and the figures and decisions that depend on the
// whole matrix (observed count, norms, the Gram form, rows and columns with no observed entry), agreed over the
// grid so that every block makes the choices one process makes for the whole matrix (docs/masked.md).
#pragma once

#include <string>
#include <vector>

#include "dist/grid.hpp"
#include "dnmf/missing.hpp"
#include "solvers/masked_problem.hpp"

namespace dnmf::solvers {

/// A block of the masked problem. `problem`'s halves are the block's (h_half: rows x cols of A, w_half: its
/// transpose, both in block-local indices); its scalar figures (m, n, observed, the sums, all_unit, the
/// unobserved counts) are the block's after build_masked_block() and A's after agree_masked_block().
template <class T>
struct MaskedBlock {
  MaskedProblem<T> problem;
  dist::Range rows, cols;  ///< the block's place in A
  index_t non_unit = 0;    ///< entries whose weight is not 1 (block, then A)
  bool sparse = false;     ///< --unstored missing on a sparse A: the halves list observed entries only
};

/// Builds the block from `a` and `mask` (matrix == nullptr: none), which hold rows x cols of A (of Aᵀ when
/// `transposed`), as build_masked_problem() does for a whole matrix: the same checks and messages, naming the
/// global row and column. Not collective: a block may have no observed entry; the Gram lists and the
/// unobserved flags wait for agree_masked_block(). The caller checks the shapes and the flags against A first.
template <class T>
MaskedBlock<T> build_masked_block(const StoredMatrix<T>& a, const StoredMatrix<T>& mask, const MissingValues& missing,
                                  dist::Range rows, dist::Range cols);

/// Collective over `grid`: sums the blocks' figures into A's, refuses a matrix with nothing observed as one
/// process does (CollectiveError naming `name`, the same on every rank), chooses the Gram form from A's counts
/// (summed over the observed entries when the non-unit ones are at least as many, else corrections of the full
/// Gram matrix) and builds the lists, and marks the rows and columns observed in no block (agreed along the grid
/// row and column) and counts them. `layout` is this rank's.
template <class T>
void agree_masked_block(MaskedBlock<T>& block, const dist::Grid& grid, const dist::Layout& layout,
                        const std::string& name);

// The parts of agree_masked_block() that need no communication, shared with build_masked_problem(): the whole
// matrix is the one block of a 1 x 1 grid, so one process builds it with build_masked_block() and decides with
// these what the grid agrees on.

/// For a dense block, from A's counts in `block`: all_unit, the Gram form (summed over the observed entries when
/// the non-unit ones are at least as many, else corrections of the full Gram matrix) and both halves' lists. A
/// sparse block's lists are its entries already.
template <class T>
void choose_gram_lists(MaskedBlock<T>& block);

/// 1 for each column of `half` with an observed entry in this block, else 0.
template <class T>
std::vector<unsigned char> observed_columns(const MaskedHalf<T>& half);

}  // namespace dnmf::solvers
