// The cuda backend: one GPU, one stream. cuBLAS for dense products and Gram matrices, cuSPARSE for CSR
// products, our own kernels for the KL ratio, the update rules and the reductions (DESIGN §2-3).
//
// Memory: allocate() hands out device memory; make_resident() uploads A once. A resident dense A is an
// ordinary device view. A resident CSR A keeps its column indices and values on the device but its row
// pointers (`indptr`) in host memory owned by the backend: tile planning (tiles.hpp) and
// CsrView::nnz() read indptr on the host, and the backend maps a row range of that host array back to
// the device copy it uploaded with it.
//
// This header is plain C++ (no CUDA headers), so callers compile without the CUDA toolkit in view.
#pragma once

#include <memory>
#include <string>

#include "backend/kernels.hpp"

namespace dnmf::backend {

namespace cuda {
class Context;
}

template <class T>
class CudaKernels final : public Kernels<T> {
 public:
  /// Binds to the current CUDA device; throws dnmf::Error when none is visible.
  CudaKernels();
  ~CudaKernels() override;
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;

  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] bool host_memory() const override { return false; }
  /// The cudaStream_t every kernel of this backend is queued on.
  [[nodiscard]] void* stream() const override;
  [[nodiscard]] T* allocate(std::size_t count) override;
  void deallocate(T* ptr) noexcept override;
  void copy_to_backend(const T* host, T* dst, std::size_t count) override;
  void copy_to_host(const T* src, T* host, std::size_t count) override;
  [[nodiscard]] MatrixRef<T> make_resident(const MatrixRef<T>& host) override;
  void multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) override;
  KlSums kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) override;
  [[nodiscard]] MatrixStats stats(const MatrixRef<T>& a) override;
  void gram(CView<T> x, View<T> g, T beta) override;
  void fill(View<T> x, T value) override;
  [[nodiscard]] double dot(CView<T> x, CView<T> y) override;
  void row_sums(CView<T> x, T* out) override;
  /// bpp runs on the host for now (copy down, dnmf::nnls_bpp, copy up); mu, kl and hals run on the GPU.
  int update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) override;
  /// A is resident in device memory, so cache-sized tiles buy nothing: the pass runs as one tile (the
  /// same sequence as Kernels::fused_pass with a single tile), with full-size products.
  FusedSums fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy,
                       const T* y_row_sums, View<T> other_numer, View<T> gx, bool accumulate) override;

  /// TF32 tensor-core math for float products (cuBLAS); off by default, no effect for double.
  void set_tf32(bool on) override;
  /// Bytes of the model tile dense KL forms at a time (default 256 MiB; at least one column). Exposed so
  /// tests can force many tiles.
  void set_kl_tile_bytes(double bytes) { kl_tile_bytes_ = bytes; }
  /// Waits for all work queued on the backend's stream (for timing; the kernels synchronise themselves
  /// wherever the host needs a value).
  void synchronize();
  /// The stream, library handles and scratch this backend works with: for the streamed operand's tile engine,
  /// which queues its own copies and reductions in the same stream order.
  [[nodiscard]] cuda::Context& context() { return *context_; }

 private:
  std::unique_ptr<cuda::Context> context_;
  double kl_tile_bytes_ = 256.0 * 1024 * 1024;
};

}  // namespace dnmf::backend
