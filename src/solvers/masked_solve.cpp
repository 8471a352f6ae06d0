// See masked_solve.hpp.

#include "solvers/masked_solve.hpp"

#include <algorithm>
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
namespace {

/// Whether every weight of a dense half is 0 or 1 (then its w∘a is A with the missing entries as zeros).
template <class T>
bool zero_one_weights(const MaskedHalf<T>& h) {
  const auto& w = h.weights.storage();
  return std::all_of(w.begin(), w.end(), [](T v) { return v == T(0) || v == T(1); });
}

/// A dense half's observed entries as given (w∘a / w), zero where the weight is 0.
template <class T>
DenseMatrix<T> observed_entries(const MaskedHalf<T>& h) {
  DenseMatrix<T> out(h.rows, h.cols);
  const auto& wa = h.weighted.storage();
  const auto& w = h.weights.storage();
  auto& o = out.storage();
  for (std::size_t e = 0; e < o.size(); ++e)
    o[e] = w[e] > T(0) ? static_cast<T>(static_cast<double>(wa[e]) / static_cast<double>(w[e])) : T(0);
  return out;
}

}  // namespace

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
  const backend::MatrixStats stats = masked_stats(p);
  check_masked_scale<T>(p, options);
  const bool svd = options.init == InitMethod::nndsvd || options.init == InitMethod::nndsvda;
  if (svd && !p.h_half.dense)
    throw UsageError("--init " + to_string(options.init) +
                     " is not supported with --unstored missing (use --init random)");
  // NNDSVD starts from A with its missing entries as zeros, which only biases the start. W∘A is that for a 0/1
  // mask; other weights would scale the start with them (weights of 2 started near 2A, and the fit from there
  // depended on the weights' scale), so A's observed entries are taken back out of W∘A for it.
  DenseMatrix<T> observed_only;
  const DenseMatrix<T>* start = &p.h_half.weighted;
  if (svd && !zero_one_weights(p.h_half)) {
    observed_only = observed_entries(p.h_half);
    start = &observed_only;
  }
  const MatrixRef<T> whole = DenseView<const T>(start->view());
  InitialScale initial_scale;
  factors = initialise(*host, svd ? &whole : nullptr, layout, options, stats, W0, H0, &initial_scale);
  observed_only = DenseMatrix<T>();
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();
  // --backend cuda: the matrix-form iteration on the GPU (every algorithm); otherwise the host's column-wise one.
  FactorResult<T> result =
      options.backend == BackendKind::cuda
          ? iterate_masked_on_device(p, options, factors, *backend::make_masked_device<T>(BackendKind::cuda))
          : iterate_masked(p, options, factors);
  result.init_seconds = init_seconds;
  record_initial_scale(result, initial_scale);
  return result;
}

template FactorResult<float> solve_masked<float>(const MaskedProblem<float>&, const FactorOptions&, Factors<float>&,
                                                 const DenseMatrix<float>*, const DenseMatrix<float>*);
template FactorResult<double> solve_masked<double>(const MaskedProblem<double>&, const FactorOptions&, Factors<double>&,
                                                   const DenseMatrix<double>*, const DenseMatrix<double>*);

}  // namespace dnmf::solvers
