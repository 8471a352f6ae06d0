#include "dnmf/factorize.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "backend/gathering_operand.hpp"
#include "backend/kernels.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/source.hpp"
#include "solvers/lanes.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "solvers/solve.hpp"
#include "util/dense_transpose.hpp"
#include "util/ordered_sums.hpp"
#include "util/parallel_loops.hpp"
#include "util/thread_count.hpp"

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
  const util::ThreadCountScope thread_count(options.threads);
  const solvers::MaskedProblem<T> problem = solvers::build_masked_problem<T>(stored_a, stored_mask, options.missing);
  if (problem.all_unit) {
    FactorOptions plain = options;  // a mask that masks nothing is no mask: the unmasked solver's exact results
    plain.missing = MissingValues{};
    return factorize<T>(a, plain, W0, H0);
  }
  solvers::Factors<T> f;
  FactorResult<T> result = solvers::solve_masked<T>(problem, options, f, W0, H0);
  result.W = util::transposed(f.wt);
  result.H = std::move(f.h);
  return result;
}

}  // namespace

template <class T>
FactorResult<T> factorize(const MatrixRef<T>& a, const FactorOptions& options, const DenseMatrix<T>* W0,
                          const DenseMatrix<T>* H0) {
  detail::check_view("factorize: A", a);  // a view's structure is the caller's, as a Source's is
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  solvers::check_options(options, m, n);
  if (options.missing.any()) return factorize_masked(a, options, W0, H0);
  // Every other entry point checks the entries (a negative one was factorised silently here; a NaN was reported
  // as "the matrix is all zeros"). The masked path checks the observed ones itself.
  std::visit([](const auto& view) { io::check_nonnegative(view, "factorize: A"); }, a);
  const util::ThreadCountScope thread_count(options.threads);
  auto kernels = backend::make_kernels<T>(options.backend);
  kernels->set_tf32(options.tf32);
  auto host =
      backend::make_kernels<T>(options.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  // One process: a 1x1 grid over a communicator of its own (not MPI's world, which a caller may be using).
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, m, n);
  const auto resident_start = std::chrono::steady_clock::now();
  const auto operand = backend::make_resident_operand(*kernels, kernels->make_resident(a), -1, options.max_iterations);
  const double resident_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - resident_start).count();
  solvers::Solution<T> solution = solvers::solve(*kernels, *host, *operand, &a, grid, layout, options, W0, H0);
  FactorResult<T> result = std::move(solution.result);
  result.init_seconds += resident_seconds;
  // In blocks (util::transposed): the plain loop strode through W a cache line per entry, 0.7 ms of a 1-iteration
  // 20000 x 10000 sparse fit.
  result.W = util::transposed(solution.pieces.wt);
  result.H = std::move(solution.pieces.h);
  return result;
}

namespace {

/// Columns of A per block of dense_squared_residual: each loaded lane vector of W serves four columns.
constexpr index_t kResidualColumns = 4;
/// Rows of W per panel of dense_squared_residual (a multiple of four): the float64 copy of W is one panel, not
/// all of W. A whole copy (and the transposed W it was made from) were two W-sized buffers the memory plan did
/// not count: a resident 1500007 x 1 block at k = 1 peaked at 1.07x its budget.
constexpr index_t kResidualPanelRows = 4096;

/// Σ (a − (WH)_ij)² and Σ a² over a dense A, in double, for relative_error_direct; w_at(i, l) is W(i, l). W is
/// copied a panel of rows at a time into a double column-major array padded to whole lane vectors with zero rows,
/// so that four rows of W H come from k lane multiply-adds per column (the plain loop's dot per entry read W's
/// rows across its columns, one strided scalar at a time: 65 ms at 4000x3000, k = 16, where this takes a few).
/// Each block of columns keeps its own sums, added panel by panel and then in block order, so the result does
/// not depend on the thread count.
template <class T, class WAt>
std::pair<double, double> dense_squared_residual(const DenseView<const T>& a, index_t k, const WAt& w_at,
                                                 DenseView<const T> H) {
  using solvers::Lanes, solvers::load_lanes, solvers::splat, solvers::lane_sum;
  const index_t m = a.rows, n = a.cols;
  const index_t blocks = (n + kResidualColumns - 1) / kResidualColumns;
  std::vector<double> num(to_size(blocks), 0.0), den(to_size(blocks), 0.0);
  const index_t panel = std::min(kResidualPanelRows, (m + 3) / 4 * 4);
  std::vector<double> wd(to_size(panel * k));
  // A team only where the k-term models of the cells outweigh its start: `if (blocks > 1)` woke the second thread
  // for a 20 x 20 fit's final error, 1.3 ms a call on a busy machine against 3 µs of work.
  const bool parallel =
      blocks > 1 && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(std::max<index_t>(k, 1)) >=
                        util::kMinParallelMultiplyAdds;
  for (index_t p0 = 0; p0 < m; p0 += panel) {
    const index_t rows = std::min(panel, m - p0), rp = (rows + 3) / 4 * 4;
    std::fill(wd.begin(), wd.end(), 0.0);
    for (index_t l = 0; l < k; ++l)
      for (index_t i = 0; i < rows; ++i) wd[to_size(l * rp + i)] = static_cast<double>(w_at(p0 + i, l));
    // h[c·k + l] = H(l, j0 + c), zeros past n: one buffer per thread.
    const auto block_columns = [&] { return std::vector<double>(to_size(kResidualColumns * k)); };
    util::for_each_index_with(blocks, parallel, block_columns, [&](index_t blk, std::vector<double>& h) {
      const index_t j0 = blk * kResidualColumns, nc = std::min(kResidualColumns, n - j0);
      for (index_t c = 0; c < nc; ++c)
        for (index_t l = 0; l < k; ++l) h[to_size(c * k + l)] = static_cast<double>(H(l, j0 + c));
      std::fill(h.begin() + nc * k, h.end(), 0.0);
      Lanes nv = splat(0), dv = splat(0);
      for (index_t i0 = 0; i0 < rp; i0 += 4) {
        Lanes model[kResidualColumns] = {splat(0), splat(0), splat(0), splat(0)};
        for (index_t l = 0; l < k; ++l) {
          const Lanes wv = load_lanes(wd.data() + l * rp + i0);
          for (index_t c = 0; c < kResidualColumns; ++c) model[c] += wv * splat(h[to_size(c * k + l)]);
        }
        for (index_t c = 0; c < nc; ++c) {
          const T* col = a.data + (j0 + c) * a.ld + p0 + i0;
          Lanes av = splat(0);
          if (i0 + 4 <= rows) {
            av = load_lanes(col);
          } else {
            for (index_t u = 0; i0 + u < rows; ++u) av[u] = static_cast<double>(col[u]);
          }
          const Lanes r = av - model[c];  // zero in the padding rows: a and W are zero there
          nv += r * r;
          dv += av * av;
        }
      }
      num[to_size(blk)] += lane_sum(nv);
      den[to_size(blk)] += lane_sum(dv);
    });
  }
  double total_num = 0, total_den = 0;
  for (index_t blk = 0; blk < blocks; ++blk) {
    total_num += num[to_size(blk)];
    total_den += den[to_size(blk)];
  }
  return {total_num, total_den};
}

/// Σ (a − (WH)_ij)² and Σ a² over A, in double; a CSR A counts its absent entries as zeros (every m x n cell).
template <class T, class WAt>
std::pair<double, double> direct_squared_residual(const MatrixRef<T>& a, index_t k, const WAt& w_at,
                                                  DenseView<const T> H) {
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) return dense_squared_residual(*d, k, w_at, H);
  // Sparse: Σ over stored entries of (a - wh)² plus Σ over absent entries of wh².
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const auto model = [&](index_t i, index_t j) {
    double s = 0;
    for (index_t l = 0; l < k; ++l) s += static_cast<double>(w_at(i, l)) * static_cast<double>(H(l, j));
    return s;
  };
  const auto& s = std::get<CsrView<T>>(a);
  // Sums in a fixed cut of the rows (ordered_sums): with an OpenMP reduction, a near-exact sparse fit's reported
  // rel_error changed with n_threads (4.999520313022792e-09 on 1, ...761e-09 on 2).
  const bool parallel =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k + 1) >= util::kMinParallelMultiplyAdds;
  const auto sums = util::ordered_sums<2>(m, parallel, [&](index_t i, std::array<double, 2>& acc) {
    index_t p = s.indptr[i];
    for (index_t j = 0; j < n; ++j) {
      double v = 0;
      if (p < s.indptr[i + 1] && s.indices[p] == j) v = static_cast<double>(s.values[p++]);
      const double r = v - model(i, j);
      acc[0] += r * r;
      acc[1] += v * v;
    }
  });
  return {sums[0], sums[1]};
}

template <class T, class WAt>
double direct_error(const MatrixRef<T>& a, index_t k, const WAt& w_at, DenseView<const T> H) {
  const auto [residual, norm] = direct_squared_residual(a, k, w_at, H);
  return norm > 0 ? std::sqrt(residual / norm) : 0.0;
}

}  // namespace

template <class T>
double relative_error_direct(const MatrixRef<T>& a, DenseView<const T> W, DenseView<const T> H) {
  detail::check_view("relative_error_direct: A", a);
  // Shapes and arrays: a null W or H was a crash.
  detail::check_view("relative_error_direct: W", MatrixRef<T>{W});
  detail::check_view("relative_error_direct: H", MatrixRef<T>{H});
  if (W.rows != rows_of(a) || H.cols != cols_of(a) || W.cols != H.rows)
    throw UsageError("relative_error_direct: W (" + std::to_string(W.rows) + "x" + std::to_string(W.cols) +
                     ") and H (" + std::to_string(H.rows) + "x" + std::to_string(H.cols) + ") do not fit A (" +
                     std::to_string(rows_of(a)) + "x" + std::to_string(cols_of(a)) + ")");
  return direct_error(
      a, W.cols, [&](index_t i, index_t l) { return W(i, l); }, H);
}

namespace solvers {
template <class T>
double relative_error_direct_wt(const MatrixRef<T>& a, DenseView<const T> wt, DenseView<const T> h) {
  return direct_error(
      a, wt.rows, [&](index_t i, index_t l) { return wt(l, i); }, h);
}
template <class T>
double squared_residual_wt(const MatrixRef<T>& a, DenseView<const T> wt, DenseView<const T> h) {
  return direct_squared_residual(
             a, wt.rows, [&](index_t i, index_t l) { return wt(l, i); }, h)
      .first;
}
template double squared_residual_wt<float>(const MatrixRef<float>&, DenseView<const float>, DenseView<const float>);
template double squared_residual_wt<double>(const MatrixRef<double>&, DenseView<const double>, DenseView<const double>);
template double relative_error_direct_wt<float>(const MatrixRef<float>&, DenseView<const float>,
                                                DenseView<const float>);
template double relative_error_direct_wt<double>(const MatrixRef<double>&, DenseView<const double>,
                                                 DenseView<const double>);
}  // namespace solvers

template FactorResult<float> factorize<float>(const MatrixRef<float>&, const FactorOptions&, const DenseMatrix<float>*,
                                              const DenseMatrix<float>*);
template FactorResult<double> factorize<double>(const MatrixRef<double>&, const FactorOptions&,
                                                const DenseMatrix<double>*, const DenseMatrix<double>*);
template double relative_error_direct<float>(const MatrixRef<float>&, DenseView<const float>, DenseView<const float>);
template double relative_error_direct<double>(const MatrixRef<double>&, DenseView<const double>,
                                              DenseView<const double>);

}  // namespace dnmf
