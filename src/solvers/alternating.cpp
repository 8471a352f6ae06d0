#include "solvers/alternating.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "solvers/exchange.hpp"

namespace dnmf::solvers {
namespace {

using backend::CView;
using backend::Side;
using backend::View;

// A k x cols block in the backend's memory, released with it; or an alias of another block's storage (a
// factor piece that is its own gathered block on a grid direction of one rank).
template <class T>
class Block {
 public:
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(kernels.allocate(static_cast<std::size_t>(std::max<index_t>(rows * cols, 1)))) {}
  /// The same storage as `other` when `alias`, else a new block of other's shape.
  Block(Block& other, bool alias)
      : kernels_(other.kernels_),
        rows_(other.rows_),
        cols_(other.cols_),
        data_(alias ? other.data_ : kernels_.allocate(static_cast<std::size_t>(std::max<index_t>(rows_ * cols_, 1)))),
        owns_(!alias) {}
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols, Block& alias_of, bool alias)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(alias ? alias_of.data_ : kernels.allocate(static_cast<std::size_t>(std::max<index_t>(rows * cols, 1)))),
        owns_(!alias) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    if (owns_) kernels_.deallocate(data_);
  }
  [[nodiscard]] View<T> view() const { return {data_, rows_, cols_, std::max<index_t>(rows_, 1)}; }
  [[nodiscard]] CView<T> cview() const { return view(); }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(rows_ * cols_); }
  void upload(const T* host) { kernels_.copy_to_backend(host, data_, size()); }
  void download(T* host) const { kernels_.copy_to_host(data_, host, size()); }
  /// Exchanges storage with an owning block of the same shape (a Gram matrix and its predecessor, say).
  friend void swap(Block& x, Block& y) noexcept { std::swap(x.data_, y.data_); }

 private:
  backend::Kernels<T>& kernels_;
  index_t rows_, cols_;
  T* data_;
  bool owns_ = true;
};

// l1·Σx + ½·l2·||x||² of one factor; ||x||² is the trace of its (global) Gram matrix, Σx its global sum.
template <class T>
double penalty(backend::Kernels<T>& kernels, dist::Communicator& world, const Block<T>& x, const Block<T>& gram,
               double l1, double l2) {
  if (l1 == 0 && l2 == 0) return 0;
  const index_t k = gram.view().rows;
  std::vector<T> host_gram(static_cast<std::size_t>(k * k));
  gram.download(host_gram.data());
  double trace = 0;
  for (index_t l = 0; l < k; ++l) trace += static_cast<double>(host_gram[static_cast<std::size_t>(l + l * k)]);
  double sum = 0;
  if (l1 != 0) {
    Block<T> sums(kernels, k, 1);
    kernels.row_sums(x.cview(), sums.data());
    std::vector<T> host(static_cast<std::size_t>(k));
    sums.download(host.data());
    for (T v : host) sum += static_cast<double>(v);
    sum = world.sum(sum);
  }
  return l1 * sum + 0.5 * l2 * trace;
}

std::vector<std::size_t> piece_counts(const std::vector<index_t>& sizes, index_t k) {
  std::vector<std::size_t> counts;
  counts.reserve(sizes.size());
  for (index_t s : sizes) counts.push_back(static_cast<std::size_t>(s * k));
  return counts;
}

void allreduce_kl(dist::Communicator& world, backend::KlSums& sums) {
  double v[2] = {sums.a_log_a_over_m, sums.a_times_m};
  world.allreduce_sum(v, 2);
  sums.a_log_a_over_m = v[0];
  sums.a_times_m = v[1];
}

}  // namespace

template <class T>
FactorResult<T> iterate(backend::Kernels<T>& kernels, backend::Operand<T>& a, const dist::Grid& grid,
                        const dist::Layout& layout, const FactorOptions& options, const backend::MatrixStats& stats,
                        Factors<T>& factors) {
  const index_t m_block = a.rows();
  const index_t n_block = a.cols();
  const index_t k = options.rank;
  if (m_block != layout.a_rows.size() || n_block != layout.a_cols.size())
    throw Error("internal: the local block is " + std::to_string(m_block) + "x" + std::to_string(n_block) +
                ", the layout says " + std::to_string(layout.a_rows.size()) + "x" +
                std::to_string(layout.a_cols.size()));
  const bool kl = options.algorithm == Algorithm::kl;
  const auto& pen = options.penalties;
  const double eps = std::is_same_v<T, float> ? 1e-12 : 1e-16;
  const backend::UpdateRule rule_h{options.algorithm, eps, pen.l1_h, pen.l2_h};
  const backend::UpdateRule rule_w{options.algorithm, eps, pen.l1_w, pen.l2_w};
  dist::Communicator& world = grid.world();
  dist::Communicator& row_comm = grid.row_comm();  // along which W's block row is split
  dist::Communicator& col_comm = grid.col_comm();  // along which H's block column is split
  const bool w_whole = row_comm.size() == 1;       // this rank owns all of W's block row
  const bool h_whole = col_comm.size() == 1;       // ... all of H's block column
  const auto w_counts = piece_counts(layout.w_piece_sizes, k);
  const auto h_counts = piece_counts(layout.h_piece_sizes, k);
  Exchange<T> exchange(kernels);

  Block<T> wt(kernels, k, layout.w_rows.size()), h(kernels, k, layout.h_cols.size());
  Block<T> wt_full(kernels, k, m_block, wt, w_whole), h_full(kernels, k, n_block, h, h_whole);
  Block<T> p_full(kernels, k, n_block), qt_full(kernels, k, m_block);
  Block<T> p(kernels, k, layout.h_cols.size(), p_full, h_whole), qt(kernels, k, layout.w_rows.size(), qt_full, w_whole);
  Block<T> gw(kernels, k, k), gh(kernels, k, k), gw_prev(kernels, k, k);
  Block<T> w_sums(kernels, k, 1), w_sums_prev(kernels, k, 1), h_sums(kernels, k, 1);
  const auto kk = static_cast<std::size_t>(k * k);
  const auto ku = static_cast<std::size_t>(k);
  wt.upload(factors.wt.data());
  h.upload(factors.h.data());
  kernels.gram(wt.cview(), gw.view(), T(0));
  exchange.allreduce(world, gw.data(), kk);
  kernels.gram(h.cview(), gh.view(), T(0));
  exchange.allreduce(world, gh.data(), kk);
  if (kl) {
    kernels.row_sums(wt.cview(), w_sums.data());
    exchange.allreduce(world, w_sums.data(), ku);
  }
  auto gather_w = [&] { exchange.allgather(row_comm, wt.data(), wt_full.data(), w_counts); };
  auto gather_h = [&] { exchange.allgather(col_comm, h.data(), h_full.data(), h_counts); };

  // The single pass needs no reduction between a tile's numerator and its update: the H side when the grid
  // has one row (pr = 1), the W side when it has one column (pc = 1).
  bool fused = options.fused;
  Side pass_side = a.fused_side();
  auto fusable = [&](Side s) { return (s == Side::H ? h_whole : w_whole) && a.can_fuse(s); };
  if (fused && !fusable(pass_side)) {
    if (fusable(backend::other(pass_side))) {
      pass_side = backend::other(pass_side);
    } else {
      fused = false;
    }
  }
  FactorResult<T> result;
  result.fused = fused;
  result.backend = kernels.name();
  result.threads = kernels.concurrency();

  // The W-side pass leaves P = Wt·A for the next H half; the first one comes from a plain product.
  if ((fused && pass_side == Side::W) || kl) gather_h();
  if (fused && pass_side == Side::W) {
    if (kl) {
      (void)a.kl_multiply(Side::H, wt_full.cview(), h_full.cview(), p_full.view(), T(0));
    } else {
      a.multiply(Side::H, wt_full.cview(), p_full.view(), T(0));
    }
    exchange.reduce_scatter(col_comm, p_full.data(), p.data(), h_counts);
  }

  const auto start = std::chrono::steady_clock::now();
  double previous_objective = std::numeric_limits<double>::quiet_NaN();
  for (int it = 1; it <= options.max_iterations; ++it) {
    double cross = 0;         // <Wt, H·Aᵀ> at the state the error is reported for (global)
    backend::KlSums kl_sums;  // KL: ratio sums at (W_{t-1}, H_t), global
    if (!fused || pass_side == Side::H) {
      gather_w();
      if (fused) {
        auto sums = a.fused_pass(Side::H, rule_h, h.view(), wt_full.cview(), gw.cview(), w_sums.data(), qt_full.view(),
                                 gh.view());
        result.nnls_cap_hits += world.sum<std::int64_t>(sums.nnls_cap_hits);
        exchange.allreduce(world, gh.data(), kk);
        kl_sums = sums.kl_accum;
      } else {
        if (kl) {
          (void)a.kl_multiply(Side::H, wt_full.cview(), h_full.cview(), p_full.view(), T(0));
        } else {
          a.multiply(Side::H, wt_full.cview(), p_full.view(), T(0));
        }
        exchange.reduce_scatter(col_comm, p_full.data(), p.data(), h_counts);
        result.nnls_cap_hits +=
            world.sum<std::int64_t>(kernels.update(rule_h, h.view(), p.cview(), gw.cview(), w_sums.data()));
        kernels.gram(h.cview(), gh.view(), T(0));
        exchange.allreduce(world, gh.data(), kk);
        gather_h();
        if (kl) {
          kl_sums = a.kl_multiply(Side::W, h_full.cview(), wt_full.cview(), qt_full.view(), T(0));
        } else {
          a.multiply(Side::W, h_full.cview(), qt_full.view(), T(0));
        }
      }
      exchange.reduce_scatter(row_comm, qt_full.data(), qt.data(), w_counts);
      if (kl) {
        allreduce_kl(world, kl_sums);
        kernels.row_sums(h.cview(), h_sums.data());
        exchange.allreduce(world, h_sums.data(), ku);
      }
      result.nnls_cap_hits +=
          world.sum<std::int64_t>(kernels.update(rule_w, wt.view(), qt.cview(), gh.cview(), h_sums.data()));
      swap(gw, gw_prev);
      kernels.gram(wt.cview(), gw.view(), T(0));
      exchange.allreduce(world, gw.data(), kk);
      if (!kl) cross = world.sum(kernels.dot(wt.cview(), qt.cview()));
    } else {
      result.nnls_cap_hits +=
          world.sum<std::int64_t>(kernels.update(rule_h, h.view(), p.cview(), gw.cview(), w_sums.data()));
      kernels.gram(h.cview(), gh.view(), T(0));
      exchange.allreduce(world, gh.data(), kk);
      if (kl) {
        kernels.row_sums(h.cview(), h_sums.data());
        exchange.allreduce(world, h_sums.data(), ku);
      }
      gather_h();
      swap(gw, gw_prev);
      auto sums =
          a.fused_pass(Side::W, rule_w, wt.view(), h_full.cview(), gh.cview(), h_sums.data(), p_full.view(), gw.view());
      exchange.allreduce(world, gw.data(), kk);
      exchange.reduce_scatter(col_comm, p_full.data(), p.data(), h_counts);
      result.nnls_cap_hits += world.sum<std::int64_t>(sums.nnls_cap_hits);
      cross = world.sum(sums.cross);
      kl_sums = sums.kl_numer;
      if (kl) allreduce_kl(world, kl_sums);
    }

    // ||A - WH||² from k x k products (DESIGN §3); KL reports it at the state its ratio was formed.
    double squared_error = 0;
    double objective = 0;
    if (kl) {
      squared_error = stats.squared_norm - 2 * kl_sums.a_times_m + kernels.dot(gw_prev.cview(), gh.cview());
      const double model_sum = kernels.dot(w_sums.cview(), h_sums.cview());
      objective = kl_sums.a_log_a_over_m - stats.sum + model_sum;
      swap(w_sums, w_sums_prev);
      kernels.row_sums(wt.cview(), w_sums.data());
      exchange.allreduce(world, w_sums.data(), ku);
    } else {
      squared_error = stats.squared_norm - 2 * cross + kernels.dot(gw.cview(), gh.cview());
      objective = 0.5 * std::max(squared_error, 0.0) + penalty(kernels, world, wt, gw, pen.l1_w, pen.l2_w) +
                  penalty(kernels, world, h, gh, pen.l1_h, pen.l2_h);
    }
    const double rel_error = std::sqrt(std::max(squared_error, 0.0) / stats.squared_norm);
    if (!std::isfinite(objective) || !std::isfinite(rel_error))
      throw Error("numerical breakdown at iteration " + std::to_string(it) + " (" + to_string(options.algorithm) +
                  "): the objective is not finite");
    result.rel_error_history.push_back(rel_error);
    result.objective_history.push_back(objective);
    result.iterations = it;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.progress) options.progress({it, options.max_iterations, rel_error, objective, seconds});
    bool stop = it > 1 && options.tol > 0 &&
                std::abs(previous_objective - objective) <= options.tol * std::abs(previous_objective);
    bool cancel = world.rank() == 0 && options.cancel && options.cancel();
    // Every rank must leave the loop together: rank 0's decisions are the job's.
    if (world.size() > 1) {
      unsigned char flag = static_cast<unsigned char>((stop ? 1 : 0) | (cancel ? 2 : 0));
      world.broadcast(&flag, 1, dist::Scalar::u8, 0);
      stop = (flag & 1) != 0;
      cancel = (flag & 2) != 0;
    }
    if (cancel) throw Cancelled("cancelled at iteration " + std::to_string(it));
    if (stop) {
      result.converged = true;
      break;
    }
    previous_objective = objective;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  wt.download(factors.wt.data());
  h.download(factors.h.data());
  return result;
}

template FactorResult<float> iterate<float>(backend::Kernels<float>&, backend::Operand<float>&, const dist::Grid&,
                                            const dist::Layout&, const FactorOptions&, const backend::MatrixStats&,
                                            Factors<float>&);
template FactorResult<double> iterate<double>(backend::Kernels<double>&, backend::Operand<double>&, const dist::Grid&,
                                              const dist::Layout&, const FactorOptions&, const backend::MatrixStats&,
                                              Factors<double>&);

}  // namespace dnmf::solvers
