// The cpu backend: BLAS (OpenBLAS, OpenMP flavour) for dense products, our own OpenMP CSR kernels, and
// a fused pass that gives each thread whole tiles with private accumulators.
#pragma once

#include <functional>

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
  bool gram_f64(CView<T> x, double* g) override;
  void fill(View<T> x, T value) override;
  void extrapolate(View<T> x_hat, CView<T> x, View<T> x_prev, T beta) override;
  [[nodiscard]] double dot(CView<T> x, CView<T> y) override;
  void row_sums(CView<T> x, T* out) override;
  int update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) override;
  FusedSums fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy,
                       const T* y_row_sums, View<T> other_numer, View<T> gx, bool accumulate) override;

  /// Most slots a fused pass cuts its tiles into (each a fixed run of tiles with its own accumulator).
  static constexpr index_t max_fused_slots = 16;

  /// What dense_fused_pass does to a tile's columns [first, last) of x, given their numerator (k x (last -
  /// first), Yᵀ·A_tile): called once per tile, the tiles of one slot in order on one thread.
  using TileUpdate = std::function<void(index_t slot, index_t first, index_t last, CView<T> numer)>;

  /// fused_pass's dense H side with the caller's column update (the masked iteration's column rules): per
  /// column tile of a (m x n), numer = yᵀ·a_tile (y: k x m), update(...), then other_numer (k x m) gets
  /// x_tile·a_tileᵀ added while the tile is in cache; summed over fixed slots in slot order, so the result does not
  /// depend on the thread count. accumulate: add to other_numer instead of overwriting it. Returns the slot count.
  index_t dense_fused_pass(const DenseView<const T>& a, CView<T> y, View<T> x, View<T> other_numer, bool accumulate,
                           const TileUpdate& update);

  /// Bytes of A per fused tile (default: default_tile_bytes()). Exposed for tests and benchmark sweeps.
  void set_tile_bytes(double bytes) { tile_bytes_ = bytes; }
  /// One core's L2 cache as the system reports it, within [512 KiB, 1 MiB]; 1 MiB where it does not say.
  static double default_tile_bytes();

 private:
  double tile_bytes_ = default_tile_bytes();
};

/// The private accumulators ("slots") of a CPU pass that sums into a block of `acc_bytes` over `work` element
/// operations, at most: fixed by the problem, never by the threads (so that results do not depend on them), and
/// each slot after the first holds a buffer of acc_bytes. The memory planner counts them (stream/planner.cpp).
[[nodiscard]] index_t cpu_accumulator_slots(double acc_bytes, double work, std::size_t element_bytes);

/// Buffers of acc_bytes (about) that such a pass allocates beside the accumulator itself: one per slot after the
/// first, and one for the first too where a dense pass at rank k sums transposed (the skinny kernels' panels).
[[nodiscard]] index_t cpu_accumulator_buffers(bool dense, index_t k, double acc_bytes, double work,
                                              std::size_t element_bytes);

}  // namespace dnmf::backend
