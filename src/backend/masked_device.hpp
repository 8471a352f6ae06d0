// The few operations the masked iteration needs from a device to run it there (issue 15, item 3): matrix
// products, the mask's elementwise steps with their sums, the multiplicative and HALS updates, the pair products
// BPP's per-column Gram matrices are made of, the sampled and sparse products of a stored pattern
// (--unstored missing) and two reductions, on buffers the device owns. The driver (solvers/masked_device_iterate.cpp)
// is written against this interface only, so its host implementation (masked_device_host.cpp) runs the driver's exact
// sequence in CPU tests, and the CUDA module's implementation (cuda/masked_device_cuda.cpp) is the same sequence on a
// GPU.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dnmf/index.hpp"
#include "dnmf/options.hpp"

namespace dnmf::backend {

/// Two sums a reduction returns (their meaning is the call's).
struct MaskedSums {
  double first = 0;
  double second = 0;
};

/// A device for the masked iteration. Matrices are contiguous column-major buffers from allocate();
/// every sum is formed in double in an order fixed by the sizes (no dependence on timing).
template <class T>
class MaskedDevice {
 public:
  MaskedDevice() = default;
  virtual ~MaskedDevice() = default;
  MaskedDevice(const MaskedDevice&) = delete;
  MaskedDevice& operator=(const MaskedDevice&) = delete;

  /// "cpu" (host implementation) or "cuda"; report.json's backend.
  [[nodiscard]] virtual std::string name() const = 0;
  /// `count` entries of device memory (uninitialised); throws dnmf::Error when there is not enough.
  [[nodiscard]] virtual T* allocate(std::size_t count) = 0;
  virtual void deallocate(T* ptr) noexcept = 0;
  virtual void upload(const T* host, T* device, std::size_t count) = 0;
  virtual void download(const T* device, T* host, std::size_t count) = 0;
  /// c (m x n) = op(a) op(b), op = transpose where ta / tb (BLAS gemm, alpha 1, beta 0).
  virtual void gemm(bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb,
                    T* c, index_t ldc) = 0;
  /// q = w ∘ q (MU's weighted model).
  virtual void weight(const T* w, T* q, std::size_t count) = 0;
  /// KL: q (the model) becomes the weighted ratio, wa / max(q, floor) where wa != 0, else 0, and returns
  /// {Σ_{w>0} w (a - q)², Σ_{wa>0} wa log(a / max(q, floor)) + Σ_{w>0} w q} with a = wa / w, at the model q had:
  /// the divergence's log and model terms from the same q, so that a float q's rounding cancels between them.
  virtual MaskedSums kl_ratio(const T* wa, const T* w, T* q, std::size_t count) = 0;
  /// Σ_{w>0} w (a - q)² with a = wa / w: the weighted squared error of the model q.
  virtual double residual(const T* wa, const T* w, const T* q, std::size_t count) = 0;
  /// x = x ∘ b / (d + l1 + l2 x + eps): MU with d = G_j x, KL with d = s_j.
  virtual void multiplicative(T* x, const T* b, const T* d, std::size_t count, double l1, double l2, double eps) = 0;
  /// {Σ x, Σ x²}.
  virtual MaskedSums sum_squares(const T* x, std::size_t count) = 0;
  /// Σ x ∘ y.
  virtual double dot(const T* x, const T* y, std::size_t count) = 0;

  // ---- HALS ----
  /// out = x ∘ x.
  virtual void square(const T* x, T* out, std::size_t count) = 0;
  /// q = wa - w ∘ q: the model q becomes the weighted residual w ∘ (a - q).
  virtual void weighted_residual(const T* wa, const T* w, T* q, std::size_t count) = 0;
  /// HALS's exact step (solvers/hals.hpp) of one coordinate in `count` columns: x_c = x[c·ldx] becomes
  /// max(0, x_c + (num_c - l1 - l2 x_c) / (den_c + l2)) where den_c + l2 > eps (else it stays), den_c =
  /// den[c·ldden]; delta_c = new - old.
  virtual void hals_coordinate(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta, index_t count,
                               double l1, double l2, double eps) = 0;
  /// e(i, j) -= w(i, j) u[i·su] v[j·sv] for the m x n matrices e and w (leading dimension m).
  virtual void weighted_rank_one(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                                 index_t sv) = 0;

  // ---- BPP ----
  /// Column i of out (k(k+1)/2 x count) holds y_p y_q of column i of y (k x count) for p <= q, in the order
  /// (0,0), (0,1), (1,1), (0,2), ... (the upper triangle by columns), so that out · W is every column's Gram matrix.
  virtual void pair_products(const T* y, index_t k, index_t count, T* out) = 0;

  // ---- a stored pattern (--unstored missing): entries [ptr[j], ptr[j+1]) of column j, rows row[e] ----
  [[nodiscard]] virtual index_t* allocate_indices(std::size_t count) = 0;
  virtual void deallocate_indices(index_t* ptr) noexcept = 0;
  virtual void upload_indices(const index_t* host, index_t* device, std::size_t count) = 0;
  /// q_e = y_{row[e]}ᵀ x_j for the entries of every column j < cols (y: k x rows, x: k x cols): the model on
  /// the pattern only.
  virtual void sampled_product(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x, index_t k,
                               T* q) = 0;
  /// out_j = Σ_e value_e y_{row[e]} (out: k x cols), each column's sum in entry order.
  virtual void sparse_product(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y,
                              index_t k, T* out) = 0;
};

/// The host implementation: BLAS products and plain loops (tests; the driver's CPU stand-in).
template <class T>
std::unique_ptr<MaskedDevice<T>> make_host_masked_device();

/// The masked device of a backend: the host implementation for cpu and reference, the CUDA module's for cuda
/// (loaded on first use; throws dnmf::Error naming the reason when it cannot be loaded or no device is visible).
template <class T>
std::unique_ptr<MaskedDevice<T>> make_masked_device(BackendKind kind);

}  // namespace dnmf::backend
