// The masked (weighted) iteration with A and its mask streamed in tiles (stream/masked_tiles.hpp), one process.
// The stripes' own half (H for column stripes, W for row stripes) is updated line by line inside each tile, where
// every entry of a line is at hand; the other half accumulates its numerators and weighted Gram products over
// the tiles of the same pass and is updated after it. One pass over A per iteration; the column rules are those
// of the in-memory masked iteration (masked_iterate.hpp), so the results agree with it (docs/masked.md).
#pragma once

#include <string>
#include <vector>

#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"
#include "stream/masked_tiles.hpp"

namespace dnmf::solvers {

/// A streamed masked problem: the tiles and what the first pass learned about them.
template <class T>
struct StreamedMaskedProblem {
  stream::MaskedTiles<T>* tiles = nullptr;
  std::string a_name, mask_name;  ///< for messages
  bool nan_missing = false;       ///< NaN entries of A are missing
  index_t m = 0, n = 0;
  // Filled by scan_masked_tiles():
  index_t observed = 0;
  index_t observed_nonzero = 0;  ///< observed entries whose value is not zero
  double weighted_squared_norm = 0, weighted_sum = 0, observed_sum = 0, weight_sum = 0;
  bool all_unit = false;              ///< dense, every weight 1, no NaN missing: nothing is masked
  std::vector<char> unobserved_rows;  ///< m flags: rows of A with no observed entry
  std::vector<char> unobserved_cols;  ///< n flags
  index_t unobserved_row_count = 0, unobserved_col_count = 0;
};

/// The first pass: checks every weight (finite, >= 0) and every observed entry of A (finite, >= 0), counts the
/// observed entries per row and column and the weighted sums. Throws DataError naming the file and the 0-based
/// place, as the in-memory build does (masked_problem.hpp), or for no observed entry at all.
template <class T>
void scan_masked_tiles(StreamedMaskedProblem<T>& problem);

/// Factorises a scanned problem from the start `options.init` gives (random scaled to the observed mean, or the
/// given factors; NNDSVD is a UsageError: it needs A whole). Fills `factors` (Wt: k x m, H: k x n); the result's
/// figures count observed entries only, as iterate_masked's do.
template <class T>
FactorResult<T> solve_masked_streamed(StreamedMaskedProblem<T>& problem, const FactorOptions& options,
                                      Factors<T>& factors, const DenseMatrix<T>* W0 = nullptr,
                                      const DenseMatrix<T>* H0 = nullptr);

/// Bytes solve_masked_streamed() holds beside the factors for `algorithm` at rank k: the other half's
/// accumulators (float64; a k x k Gram matrix per line for hals and bpp when `with_grams`), the copy of the
/// stripes' half, the per-line flags and counts. `lines_other`: lines of the half updated after each pass.
[[nodiscard]] std::int64_t masked_stream_bytes(Algorithm algorithm, index_t k, index_t m, index_t n,
                                               index_t lines_other, bool with_grams, std::size_t scalar_bytes);

}  // namespace dnmf::solvers
