#include "solvers/solve.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/update_rules.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/collective_failure.hpp"
#include "solvers/alternating.hpp"
#include "solvers/masked_loop.hpp"
#include "util/dense_transpose.hpp"
#include "util/ordered_sums.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::solvers {
namespace {

// A buffer in the kernels' memory for the final check.
template <class T>
class BackendBuffer {
 public:
  BackendBuffer(backend::Kernels<T>& kernels, const DenseMatrix<T>& host)
      : kernels_(kernels),
        rows_(host.rows()),
        cols_(host.cols()),
        data_(kernels.allocate(to_size(std::max<index_t>(rows_ * cols_, 1)))) {
    kernels.copy_to_backend(host.data(), data_, to_size(rows_ * cols_));
  }
  BackendBuffer(backend::Kernels<T>& kernels, index_t rows, index_t cols)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(kernels.allocate(to_size(std::max<index_t>(rows * cols, 1)))) {}
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  ~BackendBuffer() { kernels_.deallocate(data_); }
  [[nodiscard]] backend::View<T> view() const { return {data_, rows_, cols_, std::max<index_t>(rows_, 1)}; }

 private:
  backend::Kernels<T>& kernels_;
  index_t rows_, cols_;
  T* data_;
};

std::vector<std::size_t> piece_counts(const std::vector<index_t>& sizes, index_t k) {
  std::vector<std::size_t> counts;
  counts.reserve(sizes.size());
  for (index_t s : sizes) counts.push_back(to_size(s * k));
  return counts;
}

// Σ over a piece's cells of a·log(a / m) − a + m (m = (left_iᵀ right_j), floored as the iterations floor it; an
// a = 0 cell adds m), each cell's term formed in double as a non-negative number, so nothing cancels. `left` is k x
// rows of the piece, `right` k x its columns. Sums are kept per block of columns (CSR: of rows) and added in
// block order, so that the figure is the same for any thread count.
template <class T>
double kl_divergence_direct(const MatrixRef<T>& piece, DenseView<const T> left, DenseView<const T> right) {
  const index_t rows = rows_of(piece), cols = cols_of(piece), k = left.rows;
  const auto term = [&](double a, index_t i, index_t j) {
    double m = 0;
    for (index_t l = 0; l < k; ++l) m += static_cast<double>(left(l, i)) * static_cast<double>(right(l, j));
    if (!(a > 0)) return m;
    m = std::max(m, backend::kl_model_floor);
    // a·(r − log(1 + r)) with r = (m − a) / a: the same term without its three parts of size a (summed directly,
    // a constant 1e10 fitted to 1e-16 read -2.5e-4); a short series where r is small, r − log1p(r) otherwise.
    const double r = (m - a) / a;
    if (std::abs(r) < 1e-3) return a * r * r * (0.5 - r * (1.0 / 3 - r * (0.25 - r / 5)));
    // Far below a the parts no longer cancel, and r rounds to -1 once m / a < 1.1e-16 (a large entry, or a model
    // at its floor): log1p(-1) made the term, and the objective, infinite for a finite divergence.
    if (r < -0.5) return a * (std::log(a) - std::log(m) - 1.0) + m;
    return a * (r - std::log1p(r));
  };
  const auto* dense = std::get_if<DenseView<const T>>(&piece);
  const index_t outer = dense != nullptr ? cols : rows;
  // Threads only where the cells' k-term models outweigh a team's start (microseconds; more on a busy machine).
  const bool parallel = static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(k + 1) >=
                        util::kMinParallelMultiplyAdds;
  return util::ordered_sums<1>(outer, parallel, [&](index_t o, std::array<double, 1>& acc) {
    if (dense != nullptr) {
      for (index_t i = 0; i < rows; ++i) acc[0] += term(static_cast<double>((*dense)(i, o)), i, o);
    } else {
      const auto& csr = std::get<CsrView<T>>(piece);
      index_t p = csr.indptr[o];
      for (index_t j = 0; j < cols; ++j) {
        double a = 0;
        if (p < csr.indptr[o + 1] && csr.indices[p] == j) a = static_cast<double>(csr.values[p++]);
        acc[0] += term(a, o, j);
      }
    }
  })[0];
}

// A sparse block is read as all of its cells: past 5e7 of them that is no longer the cost of a few products.
bool too_many_cells(bool sparse, index_t m, index_t n) {
  return sparse && static_cast<double>(m) * static_cast<double>(n) > 5e7;
}

// Σ over the cells of a grid's blocks or a streamed block (one more pass when streamed) of
// per_piece(piece, left, right) (left: k x the piece's rows of A, right: k x its columns; swapped for a piece
// that stores Aᵀ), each rank its own block with its pieces of W and H, summed over the world; nullopt where any
// rank's block is not in host memory or has too many cells (the identity's figure then stands everywhere).
template <class T, class PerPiece>
std::optional<double> sum_over_blocks(backend::Operand<T>& a, const dist::Grid& grid, const DenseMatrix<T>& wt_full,
                                      const DenseMatrix<T>& h_full, PerPiece per_piece) {
  double local[2] = {0, 0};  // {blocks that could, Σ of their terms}
  if (!too_many_cells(a.sparse(), a.rows(), a.cols())) {
    const bool visited = a.visit_host([&](const MatrixRef<T>& piece, index_t row0, index_t col0, bool transposed) {
      const index_t rows = transposed ? cols_of(piece) : rows_of(piece);
      const index_t cols = transposed ? rows_of(piece) : cols_of(piece);
      const DenseView<const T> wt = wt_full.view().columns(row0, row0 + rows);
      const DenseView<const T> h = h_full.view().columns(col0, col0 + cols);
      local[1] += transposed ? per_piece(piece, h, wt) : per_piece(piece, wt, h);
    });
    local[0] = visited ? 1 : 0;
  }
  grid.world().allreduce_sum(local, 2);
  if (local[0] < grid.world().size()) return std::nullopt;
  return local[1];
}

// ||A - WH|| / ||A|| of the final pieces via one product and the Gram identity; small values are recomputed
// directly where the whole matrix is at hand and that costs no more than a few products. With `kl_objective`
// the product is KL's ratio pass, whose sums give the cross term and also KL(A ‖ WH) = Σ a·log(a / m) − Σ a + Σ m
// (m = (WH)_ij; Σ m is Σ_l of W's column sums times H's row sums), stored there: the iterations' KL figures are of
// the pair before the last H update, half a step behind what is returned.
template <class T>
double final_relative_error(backend::Kernels<T>& kernels, backend::Kernels<T>& host, backend::Operand<T>& a,
                            const MatrixRef<T>* host_whole, const dist::Grid& grid, const dist::Layout& layout,
                            const Factors<T>& f, const backend::MatrixStats& stats, double* kl_objective = nullptr) {
  const double squared_norm_a = stats.squared_norm;
  const index_t k = f.wt.rows();
  DenseMatrix<T> wt_full(k, a.rows()), h_full(k, a.cols());
  grid.row_comm().allgather(f.wt.data(), wt_full.data(), piece_counts(layout.w_piece_sizes, k), dist::scalar_of<T>());
  grid.col_comm().allgather(f.h.data(), h_full.data(), piece_counts(layout.h_piece_sizes, k), dist::scalar_of<T>());
  double cross = 0;
  {
    const BackendBuffer<T> wt_dev(kernels, wt_full), h_dev(kernels, h_full);
    const BackendBuffer<T> p(kernels, k, a.cols());
    if (kl_objective != nullptr) {
      const backend::KlSums sums = a.kl_multiply(backend::Side::H, wt_dev.view(), h_dev.view(), p.view(), T(0));
      double both[2] = {sums.a_times_m, sums.a_log_a_over_m};
      grid.world().allreduce_sum(both, 2);
      cross = both[0];
      // Each rank's pieces of W and H are its own: their sums over the world are the factors' sums.
      std::vector<double> sums_wh = factor_scales(f.wt);
      const std::vector<double> h_sums = factor_scales(f.h);
      sums_wh.insert(sums_wh.end(), h_sums.begin(), h_sums.end());
      grid.world().allreduce_sum(sums_wh.data(), sums_wh.size());
      double model_sum = 0;
      for (index_t l = 0; l < k; ++l) model_sum += sums_wh[to_size(l)] * sums_wh[to_size(k + l)];
      *kl_objective = both[1] - stats.sum + model_sum;
      // The three sums cancel to about ε·Σa on a near-exact fit: a constant matrix's divergence of 3e-7 read
      // -3.9e-4 (float32), a rank-1 matrix of 1e20 read 8.4e6 for 7e-10. Below that noise each cell's term is
      // summed where the block is in host memory (every rank's, or the figure stands).
      const double noise = 16 * std::numeric_limits<T>::epsilon() * (std::abs(stats.sum) + std::abs(model_sum));
      if (!(*kl_objective > noise)) {
        if (host_whole != nullptr && grid.shape().size() == 1) {
          if (!too_many_cells(is_sparse(*host_whole), rows_of(*host_whole), cols_of(*host_whole)))
            *kl_objective = kl_divergence_direct<T>(*host_whole, f.wt.view(), f.h.view());
        } else if (const auto direct = sum_over_blocks(a, grid, wt_full, h_full, kl_divergence_direct<T>)) {
          *kl_objective = *direct;
        }
      }
    } else {
      a.multiply(backend::Side::H, wt_dev.view(), p.view(), T(0));
      cross = grid.world().sum(kernels.dot(p.view(), h_dev.view()));
    }
  }
  DenseMatrix<T> gw(k, k), gh(k, k);
  host.gram(f.wt.view(), gw.view(), T(0));
  host.gram(f.h.view(), gh.view(), T(0));
  grid.world().allreduce_sum(gw.data(), gw.storage().size());
  grid.world().allreduce_sum(gh.data(), gh.storage().size());
  const double sq = squared_norm_a - 2 * cross + host.dot(gw.view(), gh.view());
  const double identity = std::sqrt(std::max(sq, 0.0) / squared_norm_a);
  if (identity >= kIdentityNoiseFloor<T>) return identity;
  if (host_whole != nullptr && grid.shape().size() == 1) {
    if (too_many_cells(is_sparse(*host_whole), rows_of(*host_whole), cols_of(*host_whole))) return identity;
    return relative_error_direct_wt<T>(*host_whole, f.wt.view(), f.h.view());
  }
  // A grid's blocks or a streamed block. Every rank must be able to sum its own, or the identity stands.
  const auto direct = sum_over_blocks(a, grid, wt_full, h_full, squared_residual_wt<T>);
  return direct ? std::sqrt(*direct / squared_norm_a) : identity;
}

}  // namespace

std::string factor_allocation(const dist::Layout& layout, index_t k, std::size_t value_bytes) {
  const double bytes = (static_cast<double>(layout.w_rows.size()) + static_cast<double>(layout.h_cols.size())) *
                       static_cast<double>(k) * static_cast<double>(value_bytes);
  char text[160];
  std::snprintf(text, sizeof text,
                "allocating them (%.3g GiB for this process's rows of W and columns of H at k = %lld)",
                bytes / (1024.0 * 1024 * 1024), static_cast<long long>(k));
  return std::string(text) + "; use a smaller k or more processes";
}

void check_options(const FactorOptions& o, index_t m, index_t n) {
  const index_t limit = std::min(m, n);
  if (m < 1 || n < 1) throw DataError("the matrix is empty (" + std::to_string(m) + "x" + std::to_string(n) + ")");
  if (o.rank < 1 || o.rank > limit)
    throw UsageError("rank k=" + std::to_string(o.rank) + " does not fit a " + std::to_string(m) + "x" +
                     std::to_string(n) + " matrix: need 1 <= k <= " + std::to_string(limit));
  // Values outside the enumerations (a cast from an integer): an unknown algorithm had run no update at all and
  // returned the start as the result of its "iterations".
  if (o.algorithm != Algorithm::mu && o.algorithm != Algorithm::kl && o.algorithm != Algorithm::hals &&
      o.algorithm != Algorithm::bpp)
    throw UsageError("unknown algorithm (value " + std::to_string(static_cast<int>(o.algorithm)) +
                     "): use mu, kl, hals or bpp");
  if (o.backend != BackendKind::reference && o.backend != BackendKind::cpu && o.backend != BackendKind::cuda)
    throw UsageError("unknown backend (value " + std::to_string(static_cast<int>(o.backend)) +
                     "): use cpu, reference or cuda");
  // An unknown start failed later as a general error ("unknown init method", exit 1).
  if (o.init != InitMethod::random && o.init != InitMethod::nndsvd && o.init != InitMethod::nndsvda &&
      o.init != InitMethod::given)
    throw UsageError("unknown init method (value " + std::to_string(static_cast<int>(o.init)) +
                     "): use random, nndsvd, nndsvda or given");
  if (o.max_iterations < 0) throw UsageError("iterations must be >= 0, got " + std::to_string(o.max_iterations));
  if (!(o.tol >= 0) || !std::isfinite(o.tol)) throw UsageError("tol must be a finite number >= 0");
  const auto& p = o.penalties;
  for (double v : {p.l1_w, p.l2_w, p.l1_h, p.l2_h})
    if (!(v >= 0) || !std::isfinite(v)) throw UsageError("penalties must be finite and >= 0");
  if (o.threads < 0) throw UsageError("threads must be >= 0");
  // libgomp failed to create 40000 threads ("Thread creation failed", the run ended with exit 1 and a stray
  // temporary folder) and crashed at 100000; no machine gives one process that many cores.
  const int asked = o.threads > 0 ? o.threads : omp_get_max_threads();
  if (asked > kMaxThreads)
    throw UsageError((o.threads > 0 ? "--threads " : "OpenMP's thread count (OMP_NUM_THREADS) ") +
                     std::to_string(asked) + " is more than dnmf runs in one process (at most " +
                     std::to_string(kMaxThreads) + "); use one thread per core, and MPI processes beyond one node");
  // MU would divide by sums of an extrapolated factor that may be negative; HALS and BPP clamp or solve exactly.
  if (o.extrapolate && o.algorithm != Algorithm::hals && o.algorithm != Algorithm::bpp)
    throw UsageError("extrapolation applies to hals and bpp, not to " + to_string(o.algorithm));
  if (o.extrapolate && o.missing.any())
    throw UsageError(
        "extrapolation is not available with missing values (a mask, NaN as missing or --unstored "
        "missing)");
  // The masked device runs its products in full float precision; report.json said tf32 was on.
  if (o.tf32 && o.missing.any())
    throw UsageError("--tf32 is not available with missing values (a mask, NaN as missing or --unstored missing)");
}

template <class T>
void check_scale(const backend::MatrixStats& stats, index_t m, index_t n, Algorithm algorithm, bool weighted,
                 std::int64_t observed, index_t normalised_columns, double mean_weight) {
  // The factors' entries are of about sqrt(scale / k) and the iterations multiply three of them (G·x), so their
  // products are of about scale^1.5. In float those fell below its smallest normal number (1.2e-38) for data of
  // 1e-30 and every algorithm returned zero factors with "converged". KL floors its model values at
  // backend::kl_model_floor (1e-30), far below ordinary data and not scaled with it: data of 1e-30 fitted to
  // nothing. Both are refused with the remedy rather than run.
  const double cells = static_cast<double>(m) * static_cast<double>(n);
  if (!(cells > 0)) return;
  // A masked run's squared norm is over its observed entries (`observed` of them): divided by all the cells, the
  // hidden ones counted as zeros, data at 1.01e-150 read as 9.8e-151 and a dnmf cv of a matrix dnmf factor takes
  // was refused. Its sum is already scaled to all the cells (the observed mean times m n).
  const double rms = std::sqrt(stats.squared_norm / (observed > 0 ? static_cast<double>(observed) : cells));
  const double mean = stats.sum / cells;
  char text[32];
  // With a mask the figures are of w·a: weights of 1e-310 made "the matrix's entries" of 0.1-2 "too small".
  const std::string entries =
      weighted ? "the weighted entries w·a (the mask's weights times A's entries)" : "the matrix's entries";
  const std::string remedy = weighted ? "multiply the matrix or the mask's weights by a large constant first"
                                      : "multiply the matrix by a large constant first";
  // rms is √w̄ times the weighted RMS of a, but the weighted iterations' products are of w̄·a^1.5 (one weight, the
  // factors' entries of about √a each): the measure below is rms·w̄^(1/6), rms itself at unit weights. A mask of
  // uniform weights 3e-45 (subnormal in float) passed at rms 4e-23 and returned W·H = 0 or a wrong fit, exit 0.
  const double float_measure = mean_weight > 0 && mean_weight != 1 ? rms * std::pow(mean_weight, 1.0 / 6) : rms;
  if (std::is_same_v<T, float> && float_measure < 1e-25) {
    std::snprintf(text, sizeof text, "%.3g", rms);
    std::string figures = std::string("root mean square ") + text;
    if (float_measure != rms) {
      std::snprintf(text, sizeof text, "%.3g", mean_weight);
      figures += std::string(", mean weight ") + text;
    }
    throw DataError(entries + " are too small for float32 (" + figures +
                    "): products of its factors fall below float's smallest normal number; run in float64 "
                    "(--precision f64) or " +
                    remedy);
  }
  // Double's counterpart: entries below about 1.5e-154 have subnormal squares, and the error identity and MU's
  // products (of about scale²) lose digits there. Data of 1e-161 was accepted: MU's iterates drifted by 8% from
  // those of the same data at scale 1 and its reported error was 1% off.
  if (std::is_same_v<T, double> && rms < 1e-150) {
    std::snprintf(text, sizeof text, "%.3g", rms);
    throw DataError(entries + " are too small (root mean square " + text +
                    "): their squares and the iterations' products fall below double's smallest normal number "
                    "(2.2e-308) and lose digits; " +
                    remedy);
  }
  // The other end: a factor of about sqrt(scale) times a line of A (m or n entries) is a numerator, which in
  // float overflowed its largest number (3.4e38) for data of 1e30 ("numerical breakdown" with no remedy) and at
  // 1e38 gave zero factors with "converged". Refused from the mean line sum times sqrt(rms) above 1e34 (100x
  // below the overflow; data of 1e20 in a 2000 x 1500 matrix passes).
  // A masked run's numerators carry one weight as well (b_j = Σ w a y): the mean weight multiplies the measure, and
  // a's own scale is rms / √w̄. Weights of 1e30 on entries of 1e5 passed (measure 5e16) and overflowed float32's
  // NNLS right-hand side.
  const double line = stats.sum / static_cast<double>(std::min(m, n));
  const double weight = weighted && mean_weight > 0 ? mean_weight : 1.0;
  if (std::is_same_v<T, float> && algorithm != Algorithm::kl &&
      line * weight * std::sqrt(rms / std::sqrt(weight)) > 1e34) {
    std::snprintf(text, sizeof text, "%.3g", rms);
    std::string figures = std::string("root mean square ") + text;
    if (weight != 1) {
      std::snprintf(text, sizeof text, "%.3g", weight);
      figures += std::string(", mean weight ") + text;
    }
    throw DataError(entries + " are too large for float32 (" + figures +
                    "): the iterations' products (a line of the matrix times its factors, about its sum times the "
                    "entries' square root" +
                    (weight != 1 ? std::string(", times the weights") : std::string()) +
                    ") overflow float's largest number (3.4e38); run in float64 (--precision f64) or divide the " +
                    (weight != 1 ? std::string("matrix or the mask's weights") : std::string("matrix")) +
                    " by a large constant first");
  }
  // KL's iterations divide A by the model, so its factors stay near the square root of the scale, but the normalised
  // H's rows sum to about A's column sums: a float KL fit of entries near 1e38 wrote inf with exit 0. Refused from
  // a mean column sum of 1e37 (the largest float is 3.4e38); a single larger column is caught by normalise().
  // Only where H is normalised, over the caller's columns (a row-major A's stored rows: its row sums had been
  // checked and named column sums, and an unnormalised fit refused).
  const index_t columns = normalised_columns < 0 ? n : normalised_columns;
  const double column = columns > 0 ? stats.sum / static_cast<double>(columns) : 0.0;
  if (std::is_same_v<T, float> && algorithm == Algorithm::kl && column > 1e37) {
    std::snprintf(text, sizeof text, "%.3g", column);
    throw DataError(entries + " are too large for float32 (mean column sum " + text +
                    "): the normalised H's rows take the column sums, and float's largest number is 3.4e38; run in "
                    "float64 (--precision f64) or divide the matrix by a large constant first");
  }
  // The mean is of A's observed entries whatever their weights, and KL's model follows A's scale, not the
  // weights': only rescaling A moves it (the message named "w·a" and advised scaling the weights, which changed
  // nothing, also to runs without a mask).
  if (algorithm == Algorithm::kl && mean < 1e-28) {
    std::snprintf(text, sizeof text, "%.3g", mean);
    const bool some_hidden = observed > 0 && static_cast<double>(observed) < cells;
    throw DataError(std::string(some_hidden ? "the matrix's observed entries" : "the matrix's entries") +
                    " are too small for KL (mean " + text +
                    "): its model values are floored at 1e-30 to keep a / (WH) finite; multiply the matrix by a "
                    "large constant first");
  }
}

template <class T>
Solution<T> solve(backend::Kernels<T>& kernels, backend::Kernels<T>& host, backend::Operand<T>& a,
                  const MatrixRef<T>* host_whole, const dist::Grid& grid, const dist::Layout& layout,
                  const FactorOptions& options, const DenseMatrix<T>* W0, const DenseMatrix<T>* H0,
                  bool a_is_transpose) {
  check_options(options, layout.m, layout.n);
  dist::Communicator& world = grid.world();
  Solution<T> out;
  const auto init_start = std::chrono::steady_clock::now();
  const backend::MatrixStats local = a.stats();
  double sums[2] = {local.sum, local.squared_norm};
  world.allreduce_sum(sums, 2);
  out.stats = {sums[0], sums[1]};
  // The figures are global: on a grid every rank fails alike, and the job says so once (as plain errors each rank
  // printed its own and MPI aborted the job).
  dist::check_shared_figures(world, [&] {
    // Readers refuse such entries; a caller's own operand may still hold one, and it must not read as "all zeros".
    if (std::isnan(out.stats.squared_norm) || std::isnan(out.stats.sum))
      throw DataError("the matrix holds NaN entries; input must be finite and non-negative");
    // Finite entries of about 1e305 and more add up to infinity: that is not "NaN or infinite entries".
    if (!std::isfinite(out.stats.sum))
      throw DataError(
          "the sum of the entries is infinite: an entry is infinite, or the entries are too large to add up in "
          "double precision (its largest number is 1.8e308): rescale the matrix, e.g. divide it by its largest "
          "entry");
    if (!(out.stats.squared_norm > 0)) {
      if (out.stats.sum > 0) {  // entries so small that their squares underflow (below about 1e-162)
        char sum[32];
        std::snprintf(sum, sizeof sum, "%.3g", out.stats.sum);
        throw DataError(std::string("the matrix's entries are too small to factorise: their squares underflow to zero "
                                    "(the entries sum to ") +
                        sum + "); multiply the matrix by a large constant first");
      }
      throw DataError("the matrix is all zeros: there is nothing to factorise");
    }
    // Every error figure and stopping decision is relative to ||A||²; once that overflows, the iteration would
    // report NaN or inf errors at best, so say what happened instead.
    if (!std::isfinite(out.stats.squared_norm))
      throw NumericalError(
          "the sum of the squared entries overflows double precision (entries of about 1e154 and more cannot be "
          "squared): rescale the matrix, e.g. divide it by its largest entry");
    check_scale<T>(out.stats, layout.m, layout.n, options.algorithm, false, -1,
                   options.normalize ? (a_is_transpose ? layout.m : layout.n) : 0);
  });
  const MatrixRef<T>* whole = grid.shape().size() == 1 ? host_whole : nullptr;
  // A bad given start fails on every rank alike, or on one rank where the ranks were given different ones: agreed,
  // so that no rank waits in the iteration's first collective.
  InitialScale initial_scale;
  out.pieces = io::detail::run_agreed(
      world, "initial W and H",
      [&] { return initialise(host, whole, layout, options, out.stats, W0, H0, &initial_scale, a_is_transpose); },
      factor_allocation(layout, options.rank, sizeof(T)));
  agree_on_initial_scale(world, initial_scale);
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - init_start).count();

  const dist::Traffic before = grid.traffic();
  out.result = iterate(kernels, a, grid, layout, options, out.stats, out.pieces, a_is_transpose);
  const dist::Traffic after = grid.traffic();
  out.iteration_traffic = {after.bytes_sent - before.bytes_sent, after.collectives - before.collectives};
  out.result.init_seconds = init_seconds;
  record_initial_scale(out.result, initial_scale);
  out.result.norm_a = std::sqrt(out.stats.squared_norm);
  out.result.observed = layout.m * layout.n;  // every entry (FactorResult::observed)
  const bool no_iteration = out.result.objective_history.empty();
  // The Frobenius iterations' last figure is the identity at the returned pair, from the same products a final
  // check would form (normalising rescales W and H, not their product); KL's figures are of the previous pair.
  // The check runs before normalising, on the factors the iterations balanced: normalised, H's rows carry all
  // the scale, and in float HHᵀ overflowed for entries of 1e18 (a finite fit reported rel_error inf).
  const std::vector<double>& history = out.result.rel_error_history;
  const bool kl = options.algorithm == Algorithm::kl;
  out.result.objective = out.result.objective_history.empty() ? 0.0 : out.result.objective_history.back();
  bool recomputed = false;
  if (!kl && !history.empty() && history.back() >= kIdentityNoiseFloor<T>) {
    out.result.rel_error = history.back();
  } else {
    double kl_objective = 0;
    out.result.rel_error = final_relative_error(kernels, host, a, whole, grid, layout, out.pieces, out.stats,
                                                kl ? &kl_objective : nullptr);
    if (kl) out.result.objective = kl_objective;
    recomputed = true;
  }
  if (options.normalize && !a_is_transpose) normalise_across(world, out.pieces.wt, out.pieces.h);
  // The Frobenius objective of the pair returned: the error part from the final error where that was recomputed
  // (the identity's figure below its floor is noise: 9e-13 for a true 1e-21), and the penalties of the factors
  // as normalised, since rescaling W's columns into H changes them (the last iteration's figure was of the pair
  // before, 15-45x below the written factors' with --l2-w 1 --l2-h 1). Without penalties and above the floor, the
  // last iteration's figure is the returned pair's already.
  if (kl) {
    // KL's divergence at the returned pair (normalising changes W·H not at all) and its factors' penalty terms.
    out.result.objective =
        out.result.objective + factor_penalties(world, out.pieces.wt, out.pieces.h, options.penalties);
  } else if (no_iteration || recomputed || normalising_changes_penalties(options)) {
    const double e = out.result.rel_error * out.result.norm_a;
    out.result.objective = 0.5 * e * e + factor_penalties(world, out.pieces.wt, out.pieces.h, options.penalties);
  }
  return out;
}

template <class T>
void normalise_across(dist::Communicator& world, DenseMatrix<T>& wt, DenseMatrix<T>& h) {
  std::vector<double> sums = factor_scales(wt);
  world.allreduce_sum(sums.data(), sums.size());
  double overflowed = apply_scales(wt, h, sums) ? 1 : 0;
  world.allreduce_sum(&overflowed, 1);  // a piece's overflow fails every rank alike
  if (overflowed > 0) refuse_overflowed_scale<T>(true);
}

template <class T>
double factor_penalties(dist::Communicator& world, const DenseMatrix<T>& wt, const DenseMatrix<T>& h,
                        const Penalties& p) {
  const PenaltySums ws = penalty_sums(wt), hs = penalty_sums(h);
  double sums[4] = {ws.sum, ws.squares, hs.sum, hs.squares};
  world.allreduce_sum(sums, 4);
  return penalty_terms(p.l1_w, p.l2_w, {sums[0], sums[1]}) + penalty_terms(p.l1_h, p.l2_h, {sums[2], sums[3]});
}

template <class T>
void gather_factors(const dist::Grid& grid, const dist::Layout& layout, const Factors<T>& pieces, DenseMatrix<T>& W,
                    DenseMatrix<T>& H, int root) {
  dist::Communicator& world = grid.world();
  const index_t k = pieces.wt.rows();
  const int p = world.size();
  const dist::GridShape shape = grid.shape();
  // Rank r = i·pc + j owns W rows make_layout(shape, i, j).w_rows, which increase with r: Wt's pieces gathered
  // in rank order are Wt itself. H's pieces are ordered by (j, i), so they are gathered and then placed.
  std::vector<std::size_t> w_counts(to_size(p)), h_counts(to_size(p));
  std::vector<dist::Layout> layouts;
  for (int r = 0; r < p; ++r) {
    layouts.push_back(dist::make_layout(shape, r / shape.cols, r % shape.cols, layout.m, layout.n));
    w_counts[to_size(r)] = to_size(k * layouts.back().w_rows.size());
    h_counts[to_size(r)] = to_size(k * layouts.back().h_cols.size());
  }
  const bool at_root = world.rank() == root;
  DenseMatrix<T> wt(at_root ? k : 0, at_root ? layout.m : 0), h_ranked(at_root ? k : 0, at_root ? layout.n : 0);
  world.gather(pieces.wt.data(), at_root ? wt.data() : nullptr, w_counts, dist::scalar_of<T>(), root);
  world.gather(pieces.h.data(), at_root ? h_ranked.data() : nullptr, h_counts, dist::scalar_of<T>(), root);
  if (!at_root) return;
  W = util::transposed(wt);
  H = DenseMatrix<T>(k, layout.n);
  index_t offset = 0;
  for (int r = 0; r < p; ++r) {
    const dist::Range cols = layouts[to_size(r)].h_cols;
    for (index_t j = cols.first; j < cols.last; ++j, ++offset)
      for (index_t l = 0; l < k; ++l) H(l, j) = h_ranked(l, offset);
  }
}

template Solution<float> solve<float>(backend::Kernels<float>&, backend::Kernels<float>&, backend::Operand<float>&,
                                      const MatrixRef<float>*, const dist::Grid&, const dist::Layout&,
                                      const FactorOptions&, const DenseMatrix<float>*, const DenseMatrix<float>*, bool);
template Solution<double> solve<double>(backend::Kernels<double>&, backend::Kernels<double>&, backend::Operand<double>&,
                                        const MatrixRef<double>*, const dist::Grid&, const dist::Layout&,
                                        const FactorOptions&, const DenseMatrix<double>*, const DenseMatrix<double>*,
                                        bool);
template double factor_penalties<float>(dist::Communicator&, const DenseMatrix<float>&, const DenseMatrix<float>&,
                                        const Penalties&);
template double factor_penalties<double>(dist::Communicator&, const DenseMatrix<double>&, const DenseMatrix<double>&,
                                         const Penalties&);
template void gather_factors<float>(const dist::Grid&, const dist::Layout&, const Factors<float>&, DenseMatrix<float>&,
                                    DenseMatrix<float>&, int);
template void gather_factors<double>(const dist::Grid&, const dist::Layout&, const Factors<double>&,
                                     DenseMatrix<double>&, DenseMatrix<double>&, int);
template void normalise_across<float>(dist::Communicator&, DenseMatrix<float>&, DenseMatrix<float>&);
template void normalise_across<double>(dist::Communicator&, DenseMatrix<double>&, DenseMatrix<double>&);
template void check_scale<float>(const backend::MatrixStats&, index_t, index_t, Algorithm, bool, std::int64_t, index_t,
                                 double);
template void check_scale<double>(const backend::MatrixStats&, index_t, index_t, Algorithm, bool, std::int64_t, index_t,
                                  double);

}  // namespace dnmf::solvers
