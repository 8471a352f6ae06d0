// The masked (weighted) problem as the masked iteration reads it: for each half-step, the matrix whose columns
// are updated (A for H, Aᵀ for Wᵀ) with its weights, and the per-column lists that turn the full Gram matrix into
// each column's weighted one. Built once from A, the mask and the missing-value flags (docs/masked.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dnmf/matrix.hpp"
#include "dnmf/missing.hpp"

namespace dnmf::solvers {

/// One half-step's view of the problem: a rows x cols matrix whose columns x_j are solved against the other
/// factor's columns y_i (i < rows), with weight w_ij per entry.
template <class T>
struct MaskedHalf {
  index_t rows = 0, cols = 0;
  /// Dense storage (rows x cols): w∘a (zero where missing) and w. Empty for the sparse form.
  bool dense = false;
  DenseMatrix<T> weighted, weights;
  /// Sparse form: the observed entries by column ([ptr[j], ptr[j+1])): row, w·a and w.
  std::vector<index_t> ptr, row;
  std::vector<T> weighted_value, weight;
  /// Column j's Gram matrix is Σ_i w_ij y_i y_iᵀ. direct_gram: it is summed over the list (coef = w) from zero;
  /// else the list holds only the entries whose weight is not 1 (coef = w - 1) and corrects the full Gram
  /// matrix YᵀY: cheap when most weights are 1.
  bool direct_gram = false;
  std::vector<index_t> gram_ptr, gram_row;
  std::vector<double> gram_coef;
  /// Set when every gram_coef is this one value (a 0/1 mask's corrections: -1; stored entries of unit weight: 1),
  /// so that per-column kernels need not read gram_coef.
  std::optional<double> common_coef;
  /// Columns with no observed entry: their x_j is held at zero.
  std::vector<char> unobserved;
};

/// The whole masked problem.
template <class T>
struct MaskedProblem {
  index_t m = 0, n = 0;
  index_t observed = 0;              ///< entries with weight > 0
  index_t observed_nonzero = 0;      ///< those whose value is not zero (report.json's nnz)
  double weighted_squared_norm = 0;  ///< Σ w a²
  double weighted_sum = 0;           ///< Σ w a
  double weight_sum = 0;             ///< Σ w (the observed entries' weights)
  double observed_sum = 0;           ///< Σ a over observed entries (the random start's scale)
  index_t unobserved_rows = 0, unobserved_cols = 0;
  /// Every entry observed with weight 1: nothing is masked, and the entry points run the unmasked solver.
  bool all_unit = false;
  MaskedHalf<T> h_half;  ///< A (m x n): H's update
  MaskedHalf<T> w_half;  ///< Aᵀ (n x m): Wᵀ's update
};

/// A stored matrix with its name and orientation: `transposed` when `matrix` holds Aᵀ (row-major, CSC).
template <class T>
struct StoredMatrix {
  const MatrixRef<T>* matrix = nullptr;
  bool transposed = false;
  std::string name;
};

/// Builds the problem from A, an optional mask (matrix == nullptr: none) and the flags. Throws DataError naming
/// the file and place for a mask of another shape, a negative, NaN or infinite weight, a bad observed entry of A
/// (NaN without nan_missing says so), or (`to_fit`) no observed entry at all or only zeros; UsageError for flags
/// that do not fit A (nan_missing with a sparse A is accepted: stored NaN entries are missing). transform()
/// passes to_fit = false: new data with nothing observed is answered with zeros, not refused.
template <class T>
MaskedProblem<T> build_masked_problem(const StoredMatrix<T>& a, const StoredMatrix<T>& mask,
                                      const MissingValues& missing, bool to_fit = true);

}  // namespace dnmf::solvers
