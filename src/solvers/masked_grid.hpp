// The masked (weighted) factorisation on the 2-D process grid. Each rank holds one block of A and of its weights
// (solvers/masked_block.hpp); for every column x_j of the factor being updated it sums its block's share of
// the column's weighted numerator b_j and of the Gram term the column rule reads (G_j x_j for MU, G_j itself
// for HALS and BPP, the weighted sums s_j for KL), the shares are added up over the ranks that hold the other
// rows of that column and land on the column's owner (one reduce-scatter), and the owner applies the one-process
// column rule (solvers/masked_iterate.cpp). The iterates are those of one process up to rounding.
#pragma once

#include "dist/grid.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/options.hpp"
#include "solvers/init.hpp"
#include "solvers/masked_block.hpp"
#include "solvers/solve.hpp"

namespace dnmf::solvers {

/// Factorises the agreed blocks (agree_masked_block()); every rank of `grid` calls it with its own block and
/// layout. Returns this rank's pieces (Wt: k x layout.w_rows, H: k x layout.h_cols, normalised when
/// options.normalize), the global figures (observed entries only, weighted; W/H empty) and the bytes this rank
/// sent during the iterations. Random or given starts (W0/H0 whole, m x k and k x n): the pieces of one
/// process's start. Throws UsageError for bad options, CollectiveError(NumericalError) on a breakdown and
/// Cancelled together on every rank.
template <class T>
Solution<T> solve_masked_grid(const MaskedBlock<T>& block, const dist::Grid& grid, const dist::Layout& layout,
                              const FactorOptions& options, const DenseMatrix<T>* W0 = nullptr,
                              const DenseMatrix<T>* H0 = nullptr);

/// Words (of T) one rank sends per iteration of solve_masked_grid() on an m x n problem: both factors' allgathers
/// as unmasked, the reduce-scatters of each column's record (k + k for mu and kl, k + k(k+1)/2 for hals and bpp)
/// and, when the Gram matrices are corrected rather than summed over the observed entries (`full_gram`, never
/// for kl), two k x k allreduces. Same counting as dist::words_per_rank (bandwidth-optimal collectives).
[[nodiscard]] double masked_words_per_rank(dist::GridShape shape, index_t m, index_t n, index_t k, Algorithm algorithm,
                                           bool full_gram);

}  // namespace dnmf::solvers
