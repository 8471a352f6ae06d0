// The reference backend: plain loops, float64 accumulation, no threads. The oracle every other backend
// is tested against; clarity over speed.
#pragma once

#include "backend/kernels.hpp"

namespace dnmf::backend {

template <class T>
class ReferenceKernels final : public Kernels<T> {
 public:
  [[nodiscard]] std::string name() const override { return "reference"; }
  [[nodiscard]] T* allocate(std::size_t count) override;
  void deallocate(T* ptr) noexcept override;
  void copy_to_backend(const T* host, T* dst, std::size_t count) override;
  void copy_to_host(const T* src, T* host, std::size_t count) override;
  void multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) override;
  KlSums kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) override;
  [[nodiscard]] MatrixStats stats(const MatrixRef<T>& a) override;
  void gram(CView<T> x, View<T> g, T beta) override;
  bool gram_f64(CView<T> x, double* g) override;
  void fill(View<T> x, T value) override;
  [[nodiscard]] double dot(CView<T> x, CView<T> y) override;
  void row_sums(CView<T> x, T* out) override;
  int update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) override;
};

}  // namespace dnmf::backend
