#include "dnmf/factorize.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "backend/kernels.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "solvers/solve.hpp"

namespace dnmf {

namespace {

/// factorize() with missing values: the mask, when given, must be an in-memory source.
template <class T>
FactorResult<T> factorize_masked(const MatrixRef<T>& a, const FactorOptions& options, const DenseMatrix<T>* W0,
                                 const DenseMatrix<T>* H0) {
  const MatrixRef<T>* mask = nullptr;
  if (options.missing.mask) {
    mask = options.missing.mask->stored<T>();
    if (mask == nullptr)
      throw UsageError(
          "factorize(): the mask must be an in-memory matrix of the same precision as A (use factor() "
          "for files)");
  }
  const solvers::StoredMatrix<T> stored_a{&a, false, "<memory>"};
  const solvers::StoredMatrix<T> stored_mask{mask, mask != nullptr && options.missing.mask->transposed(), "<mask>"};
  if (options.threads > 0) omp_set_num_threads(options.threads);
  const solvers::MaskedProblem<T> problem = solvers::build_masked_problem<T>(stored_a, stored_mask, options.missing);
  if (problem.all_unit) {
    FactorOptions plain = options;  // a mask that masks nothing is no mask: the unmasked solver's exact results
    plain.missing = MissingValues{};
    return factorize<T>(a, plain, W0, H0);
  }
  solvers::Factors<T> f;
  FactorResult<T> result = solvers::solve_masked<T>(problem, options, f, W0, H0);
  result.W = DenseMatrix<T>(problem.m, options.rank);
  for (index_t l = 0; l < options.rank; ++l)
    for (index_t i = 0; i < problem.m; ++i) result.W(i, l) = f.wt(l, i);
  result.H = std::move(f.h);
  return result;
}

}  // namespace

template <class T>
FactorResult<T> factorize(const MatrixRef<T>& a, const FactorOptions& options, const DenseMatrix<T>* W0,
                          const DenseMatrix<T>* H0) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  solvers::check_options(options, m, n);
  if (options.missing.any()) return factorize_masked(a, options, W0, H0);
  if (options.threads > 0) omp_set_num_threads(options.threads);
  auto kernels = backend::make_kernels<T>(options.backend);
  kernels->set_tf32(options.tf32);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  // One process: a 1x1 grid over a communicator of its own (not MPI's world, which a caller may be using).
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, m, n);
  const auto resident_start = std::chrono::steady_clock::now();
  backend::ResidentOperand<T> operand(*kernels, kernels->make_resident(a));
  const double resident_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - resident_start).count();
  solvers::Solution<T> solution = solvers::solve(*kernels, *host, operand, &a, grid, layout, options, W0, H0);
  FactorResult<T> result = std::move(solution.result);
  result.init_seconds += resident_seconds;
  result.W = DenseMatrix<T>(m, options.rank);
  for (index_t l = 0; l < options.rank; ++l)
    for (index_t i = 0; i < m; ++i) result.W(i, l) = solution.pieces.wt(l, i);
  result.H = std::move(solution.pieces.h);
  return result;
}

template <class T>
double relative_error_direct(const MatrixRef<T>& a, DenseView<const T> W, DenseView<const T> H) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const index_t k = W.cols;
  double num = 0;
  double den = 0;
  auto model = [&](index_t i, index_t j) {
    double s = 0;
    for (index_t l = 0; l < k; ++l) s += static_cast<double>(W(i, l)) * static_cast<double>(H(l, j));
    return s;
  };
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) {
        const double v = static_cast<double>((*d)(i, j));
        const double r = v - model(i, j);
        num += r * r;
        den += v * v;
      }
  } else {
    // Sparse: Σ over stored entries of (a - wh)² plus Σ over absent entries of wh².
    const auto& s = std::get<CsrView<T>>(a);
#pragma omp parallel for reduction(+ : num, den) schedule(static)
    for (index_t i = 0; i < m; ++i) {
      index_t p = s.indptr[i];
      for (index_t j = 0; j < n; ++j) {
        double v = 0;
        if (p < s.indptr[i + 1] && s.indices[p] == j) v = static_cast<double>(s.values[p++]);
        const double r = v - model(i, j);
        num += r * r;
        den += v * v;
      }
    }
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

template FactorResult<float> factorize<float>(const MatrixRef<float>&, const FactorOptions&, const DenseMatrix<float>*,
                                              const DenseMatrix<float>*);
template FactorResult<double> factorize<double>(const MatrixRef<double>&, const FactorOptions&,
                                                const DenseMatrix<double>*, const DenseMatrix<double>*);
template double relative_error_direct<float>(const MatrixRef<float>&, DenseView<const float>, DenseView<const float>);
template double relative_error_direct<double>(const MatrixRef<double>&, DenseView<const double>,
                                              DenseView<const double>);

}  // namespace dnmf
