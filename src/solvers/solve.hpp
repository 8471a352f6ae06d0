// One factorisation on a process grid, from this rank's block to its normalised factor pieces: the steps
// around the iteration (global statistics, initial pieces, normalisation, the final error) that every entry
// point shares, the single-process factorize() included.
#pragma once

#include <type_traits>

#include "backend/operand.hpp"
#include "dist/grid.hpp"
#include "dnmf/factorize.hpp"
#include "solvers/init.hpp"

namespace dnmf::solvers {

/// What one rank gets back from solve().
template <class T>
struct Solution {
  FactorResult<T> result;           ///< global history and figures; W/H empty (see gather_factors)
  Factors<T> pieces;                ///< this rank's Wt (k x layout.w_rows) and H (k x layout.h_cols)
  dist::Traffic iteration_traffic;  ///< bytes this rank sent during the iterations
  backend::MatrixStats stats;       ///< A's global sum and squared norm
};

/// Factorises the distributed A: every rank of `grid` calls it with its block `a` (on `kernels`). `host`
/// serves host-side work; `host_whole` is the whole matrix in host memory when one process holds it (NNDSVD
/// and the direct final error need it), else nullptr. W0/H0: full initial factors for InitMethod::given.
/// `a_is_transpose`: `a` is Aᵀ of the caller's A (api's factor() of a row-major or CSC source), so the random
/// initialisation draws W from H's stream and H from W's: the same start, hence the same factors, as for A; and
/// `options.normalize` is left to the caller, who normalises W of A (normalised here too, the stored W'ᵀ = H's
/// rows were made to sum to 1 first: a dead component of A's W kept an H row of sum 1).
/// Throws dnmf::Error for bad options (checked against the global m x n).
template <class T>
Solution<T> solve(backend::Kernels<T>& kernels, backend::Kernels<T>& host, backend::Operand<T>& a,
                  const MatrixRef<T>* host_whole, const dist::Grid& grid, const dist::Layout& layout,
                  const FactorOptions& options, const DenseMatrix<T>* W0 = nullptr, const DenseMatrix<T>* H0 = nullptr,
                  bool a_is_transpose = false);

/// Normalises pieces of W (as Wᵀ) and H held across `world`: W's columns sum to 1 over all ranks, H's rows absorb
/// the scale (W·H unchanged; a component whose sum is not positive is left as it is). Refuses, on every rank alike,
/// factors that overflow T once scaled (refuse_overflowed_scale).
template <class T>
void normalise_across(dist::Communicator& world, DenseMatrix<T>& wt, DenseMatrix<T>& h);

/// Collects the pieces on `root`: W (m x k) and H (k x n) are filled there and left untouched elsewhere.
/// l1·Σ + ½·l2·‖·‖² of Wᵀ's and H's pieces summed over `world`: the Frobenius objective's penalty terms.
template <class T>
double factor_penalties(dist::Communicator& world, const DenseMatrix<T>& wt, const DenseMatrix<T>& h,
                        const Penalties& p);

template <class T>
void gather_factors(const dist::Grid& grid, const dist::Layout& layout, const Factors<T>& pieces, DenseMatrix<T>& W,
                    DenseMatrix<T>& H, int root = 0);

/// The relative error below which a fit's or a transform's reported figure is recomputed from the entries instead
/// of the Gram identity ‖A‖² − 2⟨W, AHᵀ⟩ + ⟨WᵀW, HHᵀ⟩, whose cancellation leaves a relative accuracy of about
/// ε / e² in e² (it can even report 0). In float64 the switch was at 1e-6, where a true 1.3377e-6 read 1.3379e-6
/// (4 digits); at 1e-4 about 8 are left. In float32 (ε 6e-8) 1e-2 leaves about 4.
template <class T>
inline constexpr double kIdentityNoiseFloor = std::is_same_v<T, float> ? 1e-2 : 1e-4;

/// relative_error_direct with W given as Wᵀ (k x m), as the solvers hold it: no m x k copy of W.
template <class T>
double relative_error_direct_wt(const MatrixRef<T>& a, DenseView<const T> wt, DenseView<const T> h);

/// Σ (a − (WH)_ij)² over every cell of A (a CSR A's absent entries as zeros), in double, W given as Wᵀ (k x m).
template <class T>
double squared_residual_wt(const MatrixRef<T>& a, DenseView<const T> wt, DenseView<const T> h);

/// Throws DataError when A's scale (its statistics over m x n cells) is too small for T's products or for KL's
/// model floor (float32 below an RMS of 1e-25, KL below a mean of 1e-28), with the remedy. `weighted`: the
/// statistics are of w·a (a mask), and the message says so; `observed`: the number of entries the squared norm is
/// over (a masked run's observed ones), -1 for all m x n cells. `normalised_columns`: how many columns of the
/// caller's A the normalised H's row sums are spread over (KL in float32: their mean is checked against float's
/// range), 0 when nothing is normalised, -1 for n. `mean_weight`: a masked run's mean observed weight (float32:
/// the iterations' products carry one weight and three factor entries each, so tiny weights underflow them).
template <class T>
void check_scale(const backend::MatrixStats& stats, index_t m, index_t n, Algorithm algorithm, bool weighted = false,
                 std::int64_t observed = -1, index_t normalised_columns = -1, double mean_weight = 1);

/// What an out-of-memory start says it was doing: allocating this process's rows of W and columns of H, with
/// their size at rank k (the message read "initial W and H: out of memory while reading", naming no size).
std::string factor_allocation(const dist::Layout& layout, index_t k, std::size_t value_bytes);

/// Throws dnmf::Error when the options cannot be run on an m x n matrix (rank out of range, ...).
void check_options(const FactorOptions& options, index_t m, index_t n);

}  // namespace dnmf::solvers
