// See masked_device.hpp: the host implementation, "device" memory being host memory. Loops run in order on
// one thread, so its sums are those of a plain float64 loop.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "backend/cpu/blas.hpp"
#include "backend/masked_device.hpp"
#include "backend/masked_steps.hpp"
#include "backend/update_rules.hpp"

namespace dnmf::backend {
namespace {

template <class T>
class HostMaskedDevice final : public MaskedDevice<T> {
 public:
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] T* allocate(std::size_t count) override { return new T[std::max<std::size_t>(count, 1)]; }
  void deallocate(T* ptr) noexcept override { delete[] ptr; }
  void upload(const T* host, T* device, std::size_t count) override { std::copy(host, host + count, device); }
  void download(const T* device, T* host, std::size_t count) override { std::copy(device, device + count, host); }
  void gemm(bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb, T* c,
            index_t ldc) override {
    if (m == 0 || n == 0) return;
    if (k == 0) {
      for (index_t j = 0; j < n; ++j) std::fill(c + j * ldc, c + j * ldc + m, T(0));
      return;
    }
    blas::gemm(ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), T(1), a, static_cast<int>(lda), b,
               static_cast<int>(ldb), T(0), c, static_cast<int>(ldc));
  }
  void weight(const T* w, T* q, std::size_t count) override {
    for (std::size_t e = 0; e < count; ++e)
      q[e] = static_cast<T>(static_cast<double>(w[e]) * static_cast<double>(q[e]));
  }
  MaskedSums kl_ratio(const T* wa, const T* w, T* q, std::size_t count) override {
    MaskedSums s;
    for (std::size_t e = 0; e < count; ++e) {
      const double we = static_cast<double>(w[e]), wae = static_cast<double>(wa[e]), qe = static_cast<double>(q[e]);
      if (we > 0) {
        const double a = wae / we;
        s.first += we * (a - qe) * (a - qe);
        s.second += we * qe;
      }
      if (wae == 0) {
        q[e] = T(0);
        continue;
      }
      const double qf = std::max(qe, kl_model_floor);
      s.second += wae * std::log(wae / we / qf);
      q[e] = static_cast<T>(wae / qf);
    }
    return s;
  }
  double residual(const T* wa, const T* w, const T* q, std::size_t count) override {
    double s = 0;
    for (std::size_t e = 0; e < count; ++e) {
      const double we = static_cast<double>(w[e]);
      if (!(we > 0)) continue;
      const double r = static_cast<double>(wa[e]) / we - static_cast<double>(q[e]);
      s += we * r * r;
    }
    return s;
  }
  void multiplicative(T* x, const T* b, const T* d, std::size_t count, double l1, double l2, double eps) override {
    for (std::size_t e = 0; e < count; ++e) {
      const double xe = static_cast<double>(x[e]);
      x[e] = static_cast<T>(xe * static_cast<double>(b[e]) / (static_cast<double>(d[e]) + l1 + l2 * xe + eps));
    }
  }
  MaskedSums sum_squares(const T* x, std::size_t count) override {
    MaskedSums s;
    for (std::size_t e = 0; e < count; ++e) {
      s.first += static_cast<double>(x[e]);
      s.second += static_cast<double>(x[e]) * static_cast<double>(x[e]);
    }
    return s;
  }
  double dot(const T* x, const T* y, std::size_t count) override {
    double s = 0;
    for (std::size_t e = 0; e < count; ++e) s += static_cast<double>(x[e]) * static_cast<double>(y[e]);
    return s;
  }
  void square(const T* x, T* out, std::size_t count) override {
    for (std::size_t e = 0; e < count; ++e)
      out[e] = static_cast<T>(static_cast<double>(x[e]) * static_cast<double>(x[e]));
  }
  void weighted_residual(const T* wa, const T* w, T* q, std::size_t count) override {
    for (std::size_t e = 0; e < count; ++e)
      q[e] = static_cast<T>(static_cast<double>(wa[e]) - static_cast<double>(w[e]) * static_cast<double>(q[e]));
  }
  void hals_coordinate(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta, index_t count, double l1,
                       double l2, double eps) override {
    for (index_t c = 0; c < count; ++c) delta[c] = hals_step(x[c * ldx], num[c], den[c * ldden], l1, l2, eps);
  }
  void weighted_rank_one(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                         index_t sv) override {
    for (index_t j = 0; j < n; ++j) {
      const double vj = static_cast<double>(v[j * sv]);
      if (vj == 0) continue;  // the usual case for HALS: most coordinates do not move
      for (index_t i = 0; i < m; ++i) {
        const index_t at = i + j * m;
        e[at] = static_cast<T>(static_cast<double>(e[at]) -
                               static_cast<double>(w[at]) * static_cast<double>(u[i * su]) * vj);
      }
    }
  }
  void pair_products(const T* y, index_t k, index_t count, T* out) override {
    const index_t pairs = k * (k + 1) / 2;
    for (index_t i = 0; i < count; ++i) {
      const T* yi = y + i * k;
      T* oi = out + i * pairs;
      for (index_t q = 0, t = 0; q < k; ++q)
        for (index_t p = 0; p <= q; ++p, ++t)
          oi[t] = static_cast<T>(static_cast<double>(yi[p]) * static_cast<double>(yi[q]));
    }
  }
  [[nodiscard]] index_t* allocate_indices(std::size_t count) override {
    return new index_t[std::max<std::size_t>(count, 1)];
  }
  void deallocate_indices(index_t* ptr) noexcept override { delete[] ptr; }
  void upload_indices(const index_t* host, index_t* device, std::size_t count) override {
    std::copy(host, host + count, device);
  }
  void sampled_product(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x, index_t k,
                       T* q) override {
    for (index_t j = 0; j < cols; ++j)
      for (index_t e = ptr[j]; e < ptr[j + 1]; ++e) {
        double s = 0;
        for (index_t l = 0; l < k; ++l) s += static_cast<double>(y[row[e] * k + l]) * static_cast<double>(x[j * k + l]);
        q[e] = static_cast<T>(s);
      }
  }
  void sparse_product(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y, index_t k,
                      T* out) override {
    for (index_t j = 0; j < cols; ++j)
      for (index_t l = 0; l < k; ++l) {
        double s = 0;
        for (index_t e = ptr[j]; e < ptr[j + 1]; ++e)
          s += static_cast<double>(value[e]) * static_cast<double>(y[row[e] * k + l]);
        out[j * k + l] = static_cast<T>(s);
      }
  }
};

}  // namespace

template <class T>
std::unique_ptr<MaskedDevice<T>> make_host_masked_device() {
  return std::make_unique<HostMaskedDevice<T>>();
}

template std::unique_ptr<MaskedDevice<float>> make_host_masked_device<float>();
template std::unique_ptr<MaskedDevice<double>> make_host_masked_device<double>();

}  // namespace dnmf::backend
