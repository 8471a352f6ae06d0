#include "solvers/alternating.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dnmf/error.hpp"

namespace dnmf::solvers {
namespace {

using backend::CView;
using backend::Side;
using backend::View;

// A k x cols block in the backend's memory, released with it.
template <class T>
class Block {
 public:
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(kernels.allocate(static_cast<std::size_t>(std::max<index_t>(rows * cols, 1)))) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { kernels_.deallocate(data_); }
  [[nodiscard]] View<T> view() const { return {data_, rows_, cols_, std::max<index_t>(rows_, 1)}; }
  [[nodiscard]] CView<T> cview() const { return view(); }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(rows_ * cols_); }
  void upload(const T* host) { kernels_.copy_to_backend(host, data_, size()); }
  void download(T* host) const { kernels_.copy_to_host(data_, host, size()); }
  /// Exchanges storage with a block of the same shape (a Gram matrix and its predecessor, say).
  friend void swap(Block& x, Block& y) noexcept { std::swap(x.data_, y.data_); }

 private:
  backend::Kernels<T>& kernels_;
  index_t rows_, cols_;
  T* data_;
};

// l1·Σx + ½·l2·||x||² of one factor; ||x||² is the trace of its Gram matrix.
template <class T>
double penalty(backend::Kernels<T>& kernels, const Block<T>& x, const Block<T>& gram, double l1, double l2) {
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
  }
  return l1 * sum + 0.5 * l2 * trace;
}

}  // namespace

template <class T>
FactorResult<T> iterate(backend::Kernels<T>& kernels, const MatrixRef<T>& a, const FactorOptions& options,
                        const backend::MatrixStats& stats, Factors<T>& factors) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const index_t k = options.rank;
  const bool kl = options.algorithm == Algorithm::kl;
  const auto& pen = options.penalties;
  const double eps = std::is_same_v<T, float> ? 1e-12 : 1e-16;
  const backend::UpdateRule rule_h{options.algorithm, eps, pen.l1_h, pen.l2_h};
  const backend::UpdateRule rule_w{options.algorithm, eps, pen.l1_w, pen.l2_w};

  Block<T> wt(kernels, k, m), h(kernels, k, n);
  Block<T> gw(kernels, k, k), gh(kernels, k, k), gw_prev(kernels, k, k);
  Block<T> p(kernels, k, n), qt(kernels, k, m);
  Block<T> w_sums(kernels, k, 1), w_sums_prev(kernels, k, 1), h_sums(kernels, k, 1);
  wt.upload(factors.wt.data());
  h.upload(factors.h.data());
  kernels.gram(wt.cview(), gw.view(), T(0));
  kernels.gram(h.cview(), gh.view(), T(0));
  if (kl) kernels.row_sums(wt.cview(), w_sums.data());

  const bool fused = options.fused;
  const Side fused_side = kernels.fused_side(a);
  FactorResult<T> result;
  result.fused = fused;
  result.backend = kernels.name();
  result.threads = kernels.concurrency();

  // The W-side pass leaves P = Wt·A for the next H half; the first one comes from a plain product.
  if (fused && fused_side == Side::W) {
    if (kl) {
      (void)kernels.kl_multiply(a, Side::H, wt.cview(), h.cview(), p.view(), T(0));
    } else {
      kernels.multiply(a, Side::H, wt.cview(), p.view(), T(0));
    }
  }

  const auto start = std::chrono::steady_clock::now();
  double previous_objective = std::numeric_limits<double>::quiet_NaN();
  for (int it = 1; it <= options.max_iterations; ++it) {
    double cross = 0;         // <Wt, H·Aᵀ> at the state the error is reported for
    backend::KlSums kl_sums;  // KL: ratio sums at (W_{t-1}, H_t)
    if (!fused || fused_side == Side::H) {
      if (fused) {
        const auto sums = kernels.fused_pass(a, Side::H, rule_h, h.view(), wt.cview(), gw.cview(), w_sums.data(),
                                             qt.view(), gh.view());
        result.nnls_cap_hits += sums.nnls_cap_hits;
        kl_sums = sums.kl_accum;
      } else {
        if (kl) {
          (void)kernels.kl_multiply(a, Side::H, wt.cview(), h.cview(), p.view(), T(0));
        } else {
          kernels.multiply(a, Side::H, wt.cview(), p.view(), T(0));
        }
        result.nnls_cap_hits += kernels.update(rule_h, h.view(), p.cview(), gw.cview(), w_sums.data());
        kernels.gram(h.cview(), gh.view(), T(0));
        if (kl) {
          kl_sums = kernels.kl_multiply(a, Side::W, h.cview(), wt.cview(), qt.view(), T(0));
        } else {
          kernels.multiply(a, Side::W, h.cview(), qt.view(), T(0));
        }
      }
      if (kl) kernels.row_sums(h.cview(), h_sums.data());
      result.nnls_cap_hits += kernels.update(rule_w, wt.view(), qt.cview(), gh.cview(), h_sums.data());
      swap(gw, gw_prev);
      kernels.gram(wt.cview(), gw.view(), T(0));
      if (!kl) cross = kernels.dot(wt.cview(), qt.cview());
    } else {
      result.nnls_cap_hits += kernels.update(rule_h, h.view(), p.cview(), gw.cview(), w_sums.data());
      kernels.gram(h.cview(), gh.view(), T(0));
      if (kl) kernels.row_sums(h.cview(), h_sums.data());
      swap(gw, gw_prev);
      const auto sums =
          kernels.fused_pass(a, Side::W, rule_w, wt.view(), h.cview(), gh.cview(), h_sums.data(), p.view(), gw.view());
      result.nnls_cap_hits += sums.nnls_cap_hits;
      cross = sums.cross;
      kl_sums = sums.kl_numer;
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
    } else {
      squared_error = stats.squared_norm - 2 * cross + kernels.dot(gw.cview(), gh.cview());
      objective = 0.5 * std::max(squared_error, 0.0) + penalty(kernels, wt, gw, pen.l1_w, pen.l2_w) +
                  penalty(kernels, h, gh, pen.l1_h, pen.l2_h);
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
    if (it > 1 && options.tol > 0 &&
        std::abs(previous_objective - objective) <= options.tol * std::abs(previous_objective)) {
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

template FactorResult<float> iterate<float>(backend::Kernels<float>&, const MatrixRef<float>&, const FactorOptions&,
                                            const backend::MatrixStats&, Factors<float>&);
template FactorResult<double> iterate<double>(backend::Kernels<double>&, const MatrixRef<double>&, const FactorOptions&,
                                              const backend::MatrixStats&, Factors<double>&);

}  // namespace dnmf::solvers
