// See masked_solve.hpp.

#include "solvers/masked_solve.hpp"

#include <chrono>

#include "backend/kernels.hpp"
#include "backend/masked_device.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "solvers/masked_device_iterate.hpp"
#include "solvers/masked_iterate.hpp"
#include "solvers/solve.hpp"

namespace dnmf::solvers {

template <class T>
FactorResult<T> solve_masked(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& factors,
                             const DenseMatrix<T>* W0, const DenseMatrix<T>* H0) {
  check_options(options, p.m, p.n);
  const auto init_start = std::chrono::steady_clock::now();
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, p.m, p.n);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  // The random start is scaled to the mean of A; here that of the observed entries (missing ones are not zeros).
  const double mean = p.observed_sum / static_cast<double>(p.observed);
  const backend::MatrixStats stats{mean * static_cast<double>(p.m) * static_cast<double>(p.n), p.weighted_squared_norm};
  check_scale<T>(stats, p.m, p.n, options.algorithm);
  const bool svd = options.init == InitMethod::nndsvd || options.init == InitMethod::nndsvda;
  if (svd && !p.h_half.dense)
    throw UsageError("--init " + to_string(options.init) +
                     " is not supported with --unstored missing (use --init random)");
  // NNDSVD starts from W∘A: missing entries count as zeros there, which only biases the start.
  const MatrixRef<T> whole = DenseView<const T>(p.h_half.weighted.view());
  factors = initialise(*host, svd ? &whole : nullptr, layout, options, stats, W0, H0);
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();
  // --backend cuda: the matrix-form iteration on the GPU (mu, kl); otherwise the host's column-wise one.
  FactorResult<T> result =
      options.backend == BackendKind::cuda
          ? iterate_masked_on_device(p, options, factors, *backend::make_masked_device<T>(BackendKind::cuda))
          : iterate_masked(p, options, factors);
  result.init_seconds = init_seconds;
  return result;
}

template FactorResult<float> solve_masked<float>(const MaskedProblem<float>&, const FactorOptions&, Factors<float>&,
                                                 const DenseMatrix<float>*, const DenseMatrix<float>*);
template FactorResult<double> solve_masked<double>(const MaskedProblem<double>&, const FactorOptions&, Factors<double>&,
                                                   const DenseMatrix<double>*, const DenseMatrix<double>*);

}  // namespace dnmf::solvers
