// See masked_device_iterate.hpp.

#include "solvers/masked_device_iterate.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/update_rules.hpp"
#include "solvers/masked_iterate.hpp"
#include "solvers/masked_loop.hpp"
#include "solvers/update_rule.hpp"
#include "util/parallel_loops.hpp"

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

/// Device index arrays, released with their owner.
class DeviceIndices {
 public:
  template <class T>
  DeviceIndices(backend::MaskedDevice<T>& device, const std::vector<index_t>& host)
      : release_([&device](index_t* p) { device.deallocate_indices(p); }), data_(device.allocate_indices(host.size())) {
    try {
      device.upload_indices(host.data(), data_, host.size());
    } catch (...) {
      release_(data_);  // the destructor does not run for an object whose constructor threw
      throw;
    }
  }
  ~DeviceIndices() { release_(data_); }
  DeviceIndices(const DeviceIndices&) = delete;
  DeviceIndices& operator=(const DeviceIndices&) = delete;
  [[nodiscard]] const index_t* get() const { return data_; }

 private:
  std::function<void(index_t*)> release_;
  index_t* data_;
};

/// One half's stored pattern on the device (--unstored missing): its columns' entries, w·a and w.
template <class T>
struct DevicePattern {
  DevicePattern(backend::MaskedDevice<T>& device, const MaskedHalf<T>& h)
      : ptr(device, h.ptr), row(device, h.row), wa(device, h.weighted_value.size()), w(device, h.weight.size()) {
    device.upload(h.weighted_value.data(), wa.get(), wa.size());
    device.upload(h.weight.data(), w.get(), w.size());
  }
  DeviceIndices ptr, row;
  DeviceArray<T> wa, w;
};

/// What a half-step leaves for the figures (only the second half's are read).
struct DeviceHalfSums {
  double squared = 0;   ///< Frobenius: Σ w (a - q)² after the update; KL: at the model the ratios used
  double kl_terms = 0;  ///< KL: Σ w a log(a / q) + Σ w q at the old x (MaskedDevice::kl_ratio)
  long long cap_hits = 0;
};

/// Entries a dense problem holds on the device per buffer (m·n), or a stored pattern's (its entries).
template <class T>
std::size_t entries_of(const MaskedProblem<T>& p) {
  return p.h_half.dense ? to_size(p.m) * to_size(p.n) : p.h_half.weight.size();
}

template <class T>
class DeviceIteration {
 public:
  DeviceIteration(const MaskedProblem<T>& p, backend::MaskedDevice<T>& device, index_t k, Algorithm algo)
      : p_(p),
        dev_(device),
        k_(k),
        entries_(entries_of(p)),
        wa_(device, p.h_half.dense ? entries_ : 0),
        w_(device, p.h_half.dense ? entries_ : 0),
        q_(device, entries_),
        wt_(device, to_size(k * p.m)),
        h_(device, to_size(k * p.n)),
        numer_(device, to_size(k * std::max(p.m, p.n))),
        denom_(device, to_size(k * std::max(p.m, p.n))),
        line_(device, algo == Algorithm::hals ? to_size(2 * std::max(p.m, p.n)) : 0),
        pairs_(device, algo == Algorithm::bpp ? to_size(pair_count() * std::max(p.m, p.n)) : 0),
        grams_(device, algo == Algorithm::bpp ? to_size(pair_count() * std::max(p.m, p.n)) : 0),
        spare_(device, algo == Algorithm::hals && !p.h_half.dense ? entries_ : 0),
        one_(device, 1) {
    const T one = T(1);
    device.upload(&one, one_.get(), 1);
    if (p.h_half.dense) {
      dev_.upload(p.h_half.weighted.data(), wa_.get(), entries_);
      dev_.upload(p.h_half.weights.data(), w_.get(), entries_);
    } else {
      h_pattern_ = std::make_unique<DevicePattern<T>>(device, p.h_half);
      w_pattern_ = std::make_unique<DevicePattern<T>>(device, p.w_half);
    }
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
    Half hs{h_side, *this};
    DeviceHalfSums sums;
    switch (rule.algorithm) {
      case Algorithm::mu:
        hs.model();
        hs.product(k_, hs.wa(), numer_.get());
        dev_.weight(hs.w(), q_.get(), entries_);
        hs.product(k_, q_.get(), denom_.get());
        dev_.multiplicative(hs.x, numer_.get(), denom_.get(), hs.count(), rule.l1, rule.l2, rule.eps);
        break;
      case Algorithm::kl: {
        hs.product(k_, hs.w(), denom_.get());
        hs.model();
        const backend::MaskedSums ratio = dev_.kl_ratio(hs.wa(), hs.w(), q_.get(), entries_);
        sums.squared = ratio.first;
        sums.kl_terms = ratio.second;
        hs.product(k_, q_.get(), numer_.get());
        dev_.multiplicative(hs.x, numer_.get(), denom_.get(), hs.count(), rule.l1, rule.l2, rule.eps);
        return sums;
      }
      case Algorithm::hals:
        hals(hs, rule);
        break;
      case Algorithm::bpp:
        sums.cap_hits = bpp(hs, rule);
        break;
    }
    if (figures) {
      hs.model();
      sums.squared = dev_.residual(hs.wa(), hs.w(), q_.get(), entries_);
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
  [[nodiscard]] index_t pair_count() const { return k_ * (k_ + 1) / 2; }

  /// One half-step's view: x (k x cols) is updated against y (k x rows); the half's matrix is A (H side) or Aᵀ.
  struct Half {
    Half(bool h, DeviceIteration& it)
        : h_side(h),
          run(it),
          x(h ? it.h_.get() : it.wt_.get()),
          y(h ? it.wt_.get() : it.h_.get()),
          rows(h ? it.p_.m : it.p_.n),
          cols(h ? it.p_.n : it.p_.m),
          pattern(h ? it.h_pattern_.get() : it.w_pattern_.get()) {}
    bool h_side;
    DeviceIteration& run;
    T* x;
    T* y;
    index_t rows, cols;
    DevicePattern<T>* pattern;  ///< null for a dense problem

    [[nodiscard]] std::size_t count() const { return to_size(run.k_ * cols); }
    [[nodiscard]] const T* wa() const { return pattern ? pattern->wa.get() : run.wa_.get(); }
    [[nodiscard]] const T* w() const { return pattern ? pattern->w.get() : run.w_.get(); }
    /// q = the model WᵀH: m x n (dense), or on the half's stored pattern.
    void model() const {
      if (pattern) {
        run.dev_.sampled_product(cols, pattern->ptr.get(), pattern->row.get(), y, x, run.k_, run.q_.get());
      } else {
        run.dev_.gemm(true, false, run.p_.m, run.p_.n, run.k_, run.wt_.get(), run.k_, run.h_.get(), run.k_,
                      run.q_.get(), run.p_.m);
      }
    }
    /// out (r x cols) = left (r x rows) times the half's matrix `mat` (dense: m x n, A's orientation; stored
    /// pattern: its values, with left = y).
    void product(index_t r, const T* left, const T* mat, T* out) const {
      const index_t m = run.p_.m, n = run.p_.n;
      if (pattern) {
        run.dev_.sparse_product(cols, pattern->ptr.get(), pattern->row.get(), mat, left, r, out);
      } else if (h_side) {
        run.dev_.gemm(false, false, r, n, m, left, r, mat, m, out, r);
      } else {
        run.dev_.gemm(false, true, r, m, n, left, r, mat, m, out, r);
      }
    }
    void product(index_t r, const T* mat, T* out) const { product(r, y, mat, out); }
  };

  /// HALS row by row: E = w ∘ (A - WᵀH) is kept on the device; for coordinate l of every column at once,
  /// num = y_lᵀE is b_l - (G_j x_j)_l, den = Σ_i w_ij y_il² is G_j's diagonal ((Y∘Y) times W, once per half),
  /// and after the step E loses w ∘ (y_l Δᵀ). Columns are independent and each column's coordinates run in the
  /// order 0..k-1 using the ones already updated: the column sweep of hals.hpp, all columns in step. On a stored
  /// pattern E lives on the stored entries only, and so do both of its products.
  void hals(const Half& hs, const backend::UpdateRule& rule) {
    const index_t m = p_.m, n = p_.n, k = k_;
    T* num = line_.get();
    T* delta = line_.get() + std::max(m, n);
    hs.model();
    dev_.weighted_residual(hs.wa(), hs.w(), q_.get(), entries_);
    dev_.square(hs.y, numer_.get(), to_size(k * hs.rows));
    hs.product(k, numer_.get(), hs.w(), denom_.get());
    T* e = q_.get();
    T* spare = spare_.get();
    for (index_t l = 0; l < k; ++l) {
      if (hs.pattern) {
        // y_l as a contiguous row (a 1 x 1 times 1 x rows product) for the pattern's products; Y∘Y is done with.
        T* yl = numer_.get();
        dev_.gemm(false, false, 1, hs.rows, 1, one_.get(), 1, hs.y + l, k, yl, 1);
        hs.product(1, yl, e, num);
        dev_.hals_coordinate(hs.x + l, k, num, denom_.get() + l, k, delta, hs.cols, rule.l1, rule.l2, rule.eps);
        if (l + 1 == k) break;
        // E - w ∘ (y_l Δᵀ) on the pattern: the rank-one model there, then E minus its weighted copy.
        const DevicePattern<T>& pat = *hs.pattern;
        dev_.sampled_product(hs.cols, pat.ptr.get(), pat.row.get(), yl, delta, 1, spare);
        dev_.weighted_residual(e, hs.w(), spare, entries_);
        std::swap(e, spare);
        continue;
      }
      if (hs.h_side) {
        dev_.gemm(false, false, 1, n, m, wt_.get() + l, k, e, m, num, 1);
      } else {
        dev_.gemm(false, true, 1, m, n, h_.get() + l, k, e, m, num, 1);
      }
      dev_.hals_coordinate(hs.x + l, k, num, denom_.get() + l, k, delta, hs.cols, rule.l1, rule.l2, rule.eps);
      if (l + 1 == k) break;  // E is formed afresh by the next half-step
      if (hs.h_side) {
        dev_.weighted_rank_one(e, hs.w(), m, n, wt_.get() + l, k, delta, 1);
      } else {
        dev_.weighted_rank_one(e, hs.w(), m, n, delta, 1, h_.get() + l, k);
      }
    }
  }

  /// BPP: every column's weighted Gram matrix G_j = Σ_i w_ij y_i y_iᵀ as one product, the pair products of
  /// y_i (k(k+1)/2 x rows) times W (or the stored pattern's weights), and b = Y(W∘A); both come to the host, where each
  /// column's exact NNLS is solved by the rule the host iteration uses (bpp.hpp), and x goes back.
  long long bpp(const Half& hs, const backend::UpdateRule& rule) {
    const index_t k = k_, t = pair_count(), cols = hs.cols;
    dev_.pair_products(hs.y, k, hs.rows, pairs_.get());
    hs.product(t, pairs_.get(), hs.w(), grams_.get());
    hs.product(k, hs.wa(), numer_.get());
    packed_.resize(to_size(t * cols));
    b_.resize(to_size(k * cols));
    x_.resize(to_size(k * cols));
    dev_.download(grams_.get(), packed_.data(), packed_.size());
    dev_.download(numer_.get(), b_.data(), b_.size());
    dev_.download(hs.x, x_.data(), x_.size());
    const std::vector<char>& unobserved = hs.h_side ? p_.h_half.unobserved : p_.w_half.unobserved;
    // Per column: the shared loop's body is a lambda, which an OpenMP reduction clause cannot reach into.
    std::vector<long long> hits(to_size(cols), 0);
    util::for_each_index_dynamic_with(
        cols, true, [k] { return std::vector<T>(to_size(k * k)); },
        [&](index_t j, std::vector<T>& g) {
          T* xj = x_.data() + j * k;
          if (unobserved[to_size(j)] != 0) {
            std::fill(xj, xj + k, T(0));
            return;
          }
          const T* pj = packed_.data() + j * t;
          for (index_t q = 0, e = 0; q < k; ++q)
            for (index_t r = 0; r <= q; ++r, ++e) g[to_size(r + q * k)] = g[to_size(q + r * k)] = pj[e];
          hits[to_size(j)] = backend::update_columns<T>(rule, backend::View<T>(xj, k, 1, k),
                                                        backend::CView<T>(b_.data() + j * k, k, 1, k),
                                                        backend::CView<T>(g.data(), k, k, k), nullptr, 0, 1);
        },
        kColumnsPerHandout);
    dev_.upload(x_.data(), hs.x, x_.size());
    return std::accumulate(hits.begin(), hits.end(), 0LL);
  }

  const MaskedProblem<T>& p_;
  backend::MaskedDevice<T>& dev_;
  index_t k_;
  std::size_t entries_;
  DeviceArray<T> wa_, w_, q_, wt_, h_, numer_, denom_, line_, pairs_, grams_;
  DeviceArray<T> spare_;  ///< HALS on a stored pattern: E's next value
  DeviceArray<T> one_;    ///< the scalar 1, for copying a strided row with gemm
  std::unique_ptr<DevicePattern<T>> h_pattern_, w_pattern_;
  std::vector<T> packed_, b_, x_;  ///< BPP's host side
};

}  // namespace

template <class T>
FactorResult<T> iterate_masked_on_device(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f,
                                         backend::MaskedDevice<T>& device) {
  const double eps =
      weighted_division_guard(options.algorithm, std::is_same_v<T, float>, p.weighted_squared_norm, p.weight_sum,
                              static_cast<double>(p.observed));  // as the host iteration
  const auto& pen = options.penalties;
  const backend::UpdateRule rule_h = update_rule(options.algorithm, eps, pen.l1_h, pen.l2_h);
  const backend::UpdateRule rule_w = update_rule(options.algorithm, eps, pen.l1_w, pen.l2_w);
  const bool kl = options.algorithm == Algorithm::kl;
  zero_unobserved(p, f);
  DeviceIteration<T> run(p, device, f.wt.rows(), options.algorithm);
  run.upload(f);
  const auto step = [&](int) {
    // The halves in the order asked for (FactorOptions::w_first); the figures come from the second one.
    const bool h_first = !options.w_first;
    const DeviceHalfSums first = run.half(h_first, h_first ? rule_h : rule_w, false);
    const DeviceHalfSums last = run.half(!h_first, h_first ? rule_w : rule_h, true);
    MaskedStep s;
    s.cap_hits = first.cap_hits + last.cap_hits;
    s.squared = last.squared;
    const double penalties = run.penalty(false, pen.l1_w, pen.l2_w) + run.penalty(true, pen.l1_h, pen.l2_h);
    s.objective = (kl ? last.kl_terms - p.weighted_sum : 0.5 * std::max(last.squared, 0.0)) + penalties;
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
