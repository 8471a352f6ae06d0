// Initial factors: random (counter-based), NNDSVD / NNDSVDa, or given by the caller.
#pragma once

#include "backend/kernels.hpp"
#include "dist/grid.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/options.hpp"

namespace dnmf::solvers {

/// The two factors in the solvers' layout: Wt is k x m (W stored row-major), H is k x n.
template <class T>
struct Factors {
  DenseMatrix<T> wt;
  DenseMatrix<T> h;
};

/// The powers of two given initial factors were multiplied by to bring them to A's scale (0: as given).
struct InitialScale {
  int w_exponent = 0;
  int h_exponent = 0;
};

/// The result's record of `scale` (FactorResult::initial_w_exponent, initial_h_exponent: a warning in the report).
template <class T>
void record_initial_scale(FactorResult<T>& result, const InitialScale& scale) {
  result.initial_w_exponent = scale.w_exponent;
  result.initial_h_exponent = scale.h_exponent;
}

/// Throws dnmf::Error unless the given factor `x` ("W" or "H" in messages) is rows x cols with every entry finite
/// and >= 0, naming the first bad entry's row and column, and not all zeros.
template <class T>
void check_initial_factor(const DenseMatrix<T>* x, index_t rows, index_t cols, const char* name);

/// Collective: throws a CollectiveError on every rank unless the ranks of `world` brought their given starts to A's
/// scale by the same powers of two (they were given different W0 or H0 otherwise).
void agree_on_initial_scale(dist::Communicator& world, const InitialScale& scale);

/// Builds this rank's pieces of the initial factors on the host (Wt: k x layout.w_rows, H: k x layout.h_cols).
/// `whole` is the whole matrix when it is resident on one process (NNDSVD needs it; nullptr otherwise: NNDSVD
/// is then refused). `stats` is A's global sum and squared norm (the random init is scaled to A's mean).
/// Given factors are the full W (m x k) and H (k x n), checked for shape and sign (dnmf::Error otherwise), and
/// brought to A's scale where they are far from it: `scale` gets the powers of two (0 for the other inits).
/// `transposed`: the matrix is the transpose of the caller's, so W is drawn from H's random stream and H from W's,
/// and NNDSVD sketches the caller's matrix (the caller's W and H then start where they would for the untransposed
/// matrix, NNDSVD's up to the order of sums).
template <class T>
Factors<T> initialise(backend::Kernels<T>& host_kernels, const MatrixRef<T>* whole, const dist::Layout& layout,
                      const FactorOptions& options, const backend::MatrixStats& stats, const DenseMatrix<T>* w0,
                      const DenseMatrix<T>* h0, InitialScale* scale, bool transposed = false);

}  // namespace dnmf::solvers
