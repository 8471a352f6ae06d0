// Host-side entry points of our own CUDA kernels (defined in the .cu files beside this one). Each
// queues its work on `stream` and returns at once; none synchronises. Matrices are column-major device
// views (DenseView: data, rows, cols, ld).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/kernels.hpp"

namespace dnmf::backend::cuda {

/// Blocks of a reduction kernel, hence pairs of partial sums in Context::partials().
inline constexpr int kReduceBlocks = 1024;

// ---- elementwise (elementwise.cu) ------------------------------------------------------------------
/// x = value everywhere.
template <class T>
void launch_fill(View<T> x, T value, cudaStream_t stream);
/// x = beta·x; beta == 0 writes zeros (whatever x held, NaN included), beta == 1 queues nothing.
template <class T>
void launch_scale(View<T> x, T beta, cudaStream_t stream);
/// Copies the lower triangle of the square g onto its upper triangle.
template <class T>
void launch_mirror_lower(View<T> g, cudaStream_t stream);
/// out[l] = Σ_c x(l, c), summed in double.
template <class T>
void launch_row_sums(CView<T> x, T* out, cudaStream_t stream);
/// dst[i] = src[i] - base for i < count: CSR row offsets rebased to zero, converted to the width D.
template <class S, class D>
void launch_rebase_offsets(const S* src, index_t count, index_t base, D* dst, cudaStream_t stream);

// ---- update rules (updates.cu), as solvers/mu_frobenius.hpp, mu_kl.hpp and hals.hpp define them ----
/// MU: next (k x c, contiguous) = x ∘ numer ⊘ (g·x + l1 + l2·x + eps). x is only read: MU is a Jacobi step.
template <class T>
void launch_mu_update(const UpdateRule& rule, CView<T> x, CView<T> numer, CView<T> g, T* next, cudaStream_t stream);
/// KL: x = x ∘ numer ⊘ (y_row_sums + l1 + l2·x + eps), in place.
template <class T>
void launch_kl_update(const UpdateRule& rule, View<T> x, CView<T> numer, const T* y_row_sums, cudaStream_t stream);
/// HALS: Gauss-Seidel over the k coordinates of each column, one thread per column, in place.
template <class T>
void launch_hals_update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, cudaStream_t stream);

// ---- reductions (reductions.cu, kl_csr.cu) ------------------------------------------------------------
// Each writes kReduceBlocks-at-most block partials into `partials` and then one finishing kernel sets
// acc[0..1] (or adds to it where `accumulate` is given). Sums are formed in double, in a fixed order:
// the result does not depend on timing.

/// acc = {Σ a, Σ a²}.
template <class T>
void launch_sum_squares(CView<T> a, double* partials, double* acc, cudaStream_t stream);
/// acc = {Σ x∘y, 0}.
template <class T>
void launch_dot(CView<T> x, CView<T> y, double* partials, double* acc, cudaStream_t stream);
/// Dense KL ratio: m (the model tile, same shape as a) becomes a ⊘ max(m, floor) (0 where a == 0) and
/// acc (+)= {Σ_{a>0} a·log(a / max(m, floor)), Σ a·m}.
template <class T>
void launch_kl_ratio_dense(CView<T> a, View<T> m, double* partials, double* acc, bool accumulate, cudaStream_t stream);
/// CSR KL ratio at the stored entries of a (rows x cols, offsets from zero): m = Wt[:, i]·H[:, j] in double,
/// ratio[p] = a_p / max(m, floor) (0 where a_p == 0), acc = {Σ a·log(a / max(m, floor)), Σ a·m}.
template <class T, class I>
void launch_kl_ratio_csr(index_t rows, const I* offsets, const I* indices, const T* values, CView<T> wt, CView<T> h,
                         T* ratio, double* partials, double* acc, cudaStream_t stream);

}  // namespace dnmf::backend::cuda
