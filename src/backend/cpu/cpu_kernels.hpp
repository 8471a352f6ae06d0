// The cpu backend: BLAS (OpenBLAS, OpenMP flavour) for dense products, our own OpenMP CSR kernels, and
// a fused pass that gives each thread whole tiles with private accumulators.
#pragma once

#include "backend/kernels.hpp"

namespace dnmf::backend {

template <class T>
class CpuKernels final : public Kernels<T> {
 public:
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] int concurrency() const override;
  [[nodiscard]] T* allocate(std::size_t count) override;
  void deallocate(T* ptr) noexcept override;
  void copy_to_backend(const T* host, T* dst, std::size_t count) override;
  void copy_to_host(const T* src, T* host, std::size_t count) override;
  void multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) override;
  KlSums kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) override;
  [[nodiscard]] MatrixStats stats(const MatrixRef<T>& a) override;
  void gram(CView<T> x, View<T> g, T beta) override;
  void fill(View<T> x, T value) override;
  void extrapolate(View<T> x_hat, CView<T> x, View<T> x_prev, T beta) override;
  [[nodiscard]] double dot(CView<T> x, CView<T> y) override;
  void row_sums(CView<T> x, T* out) override;
  int update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) override;
  FusedSums fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy,
                       const T* y_row_sums, View<T> other_numer, View<T> gx, bool accumulate) override;

  /// Bytes of A per fused tile (default about half of one core's L2). Exposed for the benchmark's sweep.
  void set_tile_bytes(double bytes) { tile_bytes_ = bytes; }

 private:
  double tile_bytes_ = 1024.0 * 1024.0;
};

}  // namespace dnmf::backend
