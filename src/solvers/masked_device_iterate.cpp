// See masked_device_iterate.hpp.

#include "solvers/masked_device_iterate.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include "dnmf/error.hpp"
#include "solvers/masked_iterate.hpp"
#include "solvers/update_rule.hpp"

namespace dnmf::solvers {
namespace {

/// A device array, released with its owner.
template <class T>
class DeviceArray {
 public:
  DeviceArray(backend::MaskedDevice<T>& device, std::size_t count)
      : device_(device), data_(device.allocate(count)), count_(count) {}
  ~DeviceArray() { device_.deallocate(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  [[nodiscard]] T* get() const { return data_; }
  [[nodiscard]] std::size_t size() const { return count_; }

 private:
  backend::MaskedDevice<T>& device_;
  T* data_;
  std::size_t count_;
};

/// What a half-step leaves for the figures (only the second half's are read).
struct DeviceHalfSums {
  double squared = 0;   ///< Frobenius: Σ w (a - q)² after the update; KL: at the model the ratios used
  double kl_log = 0;    ///< KL: Σ w a log(a / q)
  double kl_model = 0;  ///< KL: Σ_j s_jᵀ x_j at the old x
};

template <class T>
class DeviceIteration {
 public:
  DeviceIteration(const MaskedProblem<T>& p, backend::MaskedDevice<T>& device, index_t k)
      : p_(p),
        dev_(device),
        k_(k),
        mn_(to_size(p.m) * to_size(p.n)),
        wa_(device, mn_),
        w_(device, mn_),
        q_(device, mn_),
        wt_(device, to_size(k * p.m)),
        h_(device, to_size(k * p.n)),
        numer_(device, to_size(k * std::max(p.m, p.n))),
        denom_(device, to_size(k * std::max(p.m, p.n))) {
    dev_.upload(p.h_half.weighted.data(), wa_.get(), mn_);
    dev_.upload(p.h_half.weights.data(), w_.get(), mn_);
  }

  void upload(const Factors<T>& f) {
    dev_.upload(f.wt.data(), wt_.get(), wt_.size());
    dev_.upload(f.h.data(), h_.get(), h_.size());
  }
  void download(Factors<T>& f) {
    dev_.download(wt_.get(), f.wt.data(), wt_.size());
    dev_.download(h_.get(), f.h.data(), h_.size());
  }

  /// One half-step: H (h_side) or Wᵀ, with the rule's penalties.
  DeviceHalfSums half(bool h_side, const backend::UpdateRule& rule, bool figures) {
    const index_t m = p_.m, n = p_.n, k = k_;
    T* x = h_side ? h_.get() : wt_.get();
    const std::size_t count = to_size(k * (h_side ? n : m));
    // out (k x cols) = Y·mat for H (Wt times an m x n matrix), H·matᵀ for Wᵀ.
    const auto product = [&](const T* mat, T* out) {
      if (h_side) {
        dev_.gemm(false, false, k, n, m, wt_.get(), k, mat, m, out, k);
      } else {
        dev_.gemm(false, true, k, m, n, h_.get(), k, mat, m, out, k);
      }
    };
    const auto model = [&] { dev_.gemm(true, false, m, n, k, wt_.get(), k, h_.get(), k, q_.get(), m); };
    DeviceHalfSums sums;
    model();
    if (rule.algorithm == Algorithm::kl) {
      product(w_.get(), denom_.get());
      if (figures) sums.kl_model = dev_.dot(denom_.get(), x, count);
      const backend::MaskedSums ratio = dev_.kl_ratio(wa_.get(), w_.get(), q_.get(), mn_);
      sums.squared = ratio.first;
      sums.kl_log = ratio.second;
      product(q_.get(), numer_.get());
    } else {
      product(wa_.get(), numer_.get());
      dev_.weight(w_.get(), q_.get(), mn_);
      product(q_.get(), denom_.get());
    }
    dev_.multiplicative(x, numer_.get(), denom_.get(), count, rule.l1, rule.l2, rule.eps);
    if (figures && rule.algorithm != Algorithm::kl) {
      model();
      sums.squared = dev_.residual(wa_.get(), w_.get(), q_.get(), mn_);
    }
    return sums;
  }

  /// l1 Σx + 0.5 l2 ||x||² of H (h_side) or Wᵀ.
  double penalty(bool h_side, double l1, double l2) {
    if (l1 == 0 && l2 == 0) return 0;
    const backend::MaskedSums s =
        h_side ? dev_.sum_squares(h_.get(), h_.size()) : dev_.sum_squares(wt_.get(), wt_.size());
    return l1 * s.first + 0.5 * l2 * s.second;
  }

 private:
  const MaskedProblem<T>& p_;
  backend::MaskedDevice<T>& dev_;
  index_t k_;
  std::size_t mn_;
  DeviceArray<T> wa_, w_, q_, wt_, h_, numer_, denom_;
};

}  // namespace

template <class T>
FactorResult<T> iterate_masked_on_device(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f,
                                         backend::MaskedDevice<T>& device) {
  if (options.algorithm != Algorithm::mu && options.algorithm != Algorithm::kl)
    throw UsageError("--algo " + to_string(options.algorithm) + " with a mask is not supported with --backend " +
                     device.name() + " yet (mu and kl are; use --backend cpu for hals and bpp)");
  if (!p.h_half.dense)
    throw UsageError("--unstored missing is not supported with --backend " + device.name() +
                     " yet (use --backend cpu, or --mask with a dense matrix)");
  constexpr double eps = std::is_same_v<T, float> ? 1e-12 : 1e-16;  // as the host iteration
  const auto& pen = options.penalties;
  const backend::UpdateRule rule_h = update_rule(options.algorithm, eps, pen.l1_h, pen.l2_h);
  const backend::UpdateRule rule_w = update_rule(options.algorithm, eps, pen.l1_w, pen.l2_w);
  const bool kl = options.algorithm == Algorithm::kl;
  zero_unobserved(p, f);
  DeviceIteration<T> run(p, device, f.wt.rows());
  run.upload(f);
  const auto step = [&](int) {
    // The halves in the order asked for (FactorOptions::w_first); the figures come from the second one.
    const bool h_first = !options.w_first;
    run.half(h_first, h_first ? rule_h : rule_w, false);
    const DeviceHalfSums last = run.half(!h_first, h_first ? rule_w : rule_h, true);
    MaskedStep s;
    s.squared = last.squared;
    s.objective = kl ? last.kl_log - p.weighted_sum + last.kl_model
                     : 0.5 * std::max(last.squared, 0.0) + run.penalty(false, pen.l1_w, pen.l2_w) +
                           run.penalty(true, pen.l1_h, pen.l2_h);
    return s;
  };
  FactorResult<T> result = run_masked_loop<T>(p, options, step);
  run.download(f);
  result.backend = device.name();
  finish_masked(p, options, f, result);
  return result;
}

template FactorResult<float> iterate_masked_on_device<float>(const MaskedProblem<float>&, const FactorOptions&,
                                                             Factors<float>&, backend::MaskedDevice<float>&);
template FactorResult<double> iterate_masked_on_device<double>(const MaskedProblem<double>&, const FactorOptions&,
                                                               Factors<double>&, backend::MaskedDevice<double>&);

}  // namespace dnmf::solvers
