// Host-side entry points of the masked iteration's kernels (masked.cu; HALS and BPP's in masked_gram.cu, the
// stored pattern's in masked_pattern.cu): the elementwise steps and sums of
// backend::MaskedDevice on contiguous device arrays of `count` entries. Each queues its work on `stream` and
// returns at once; the reductions leave {first, second} in `acc` (Context::accumulator()), formed in double in
// a fixed order (block partials, then one finishing block).
#pragma once

#include <cuda_runtime_api.h>

#include "dnmf/index.hpp"

namespace dnmf::backend::cuda {

/// q = w ∘ q.
template <class T>
void launch_masked_weight(const T* w, T* q, index_t count, cudaStream_t stream);

/// q = wa / max(q, floor) where wa != 0, else 0; acc = {Σ_{w>0} w (a - q)², Σ_{wa>0} wa log(a / max(q, floor))}.
template <class T>
void launch_masked_kl_ratio(const T* wa, const T* w, T* q, index_t count, double* partials, double* acc,
                            cudaStream_t stream);

/// acc = {Σ_{w>0} w (wa / w - q)², 0}.
template <class T>
void launch_masked_residual(const T* wa, const T* w, const T* q, index_t count, double* partials, double* acc,
                            cudaStream_t stream);

/// x = x b / (d + l1 + l2 x + eps).
template <class T>
void launch_masked_multiplicative(T* x, const T* b, const T* d, index_t count, double l1, double l2, double eps,
                                  cudaStream_t stream);

/// out = x ∘ x.
template <class T>
void launch_masked_square(const T* x, T* out, index_t count, cudaStream_t stream);

/// q = wa - w ∘ q.
template <class T>
void launch_masked_weighted_residual(const T* wa, const T* w, T* q, index_t count, cudaStream_t stream);

/// HALS's step of one coordinate in `count` columns (MaskedDevice::hals_coordinate).
template <class T>
void launch_masked_hals_coordinate(T* x, index_t ldx, const T* num, const T* den, index_t ldden, T* delta,
                                   index_t count, double l1, double l2, double eps, cudaStream_t stream);

/// e(i, j) -= w(i, j) u[i·su] v[j·sv] (m x n, leading dimension m).
template <class T>
void launch_masked_weighted_rank_one(T* e, const T* w, index_t m, index_t n, const T* u, index_t su, const T* v,
                                     index_t sv, cudaStream_t stream);

/// The packed pair products y_p y_q (p <= q) of every column of y (k x count) (MaskedDevice::pair_products).
template <class T>
void launch_masked_pair_products(const T* y, index_t k, index_t count, T* out, cudaStream_t stream);

/// q_e = y_{row[e]}ᵀ x_j on the stored pattern (MaskedDevice::sampled_product).
template <class T>
void launch_masked_sampled_product(index_t cols, const index_t* ptr, const index_t* row, const T* y, const T* x,
                                   index_t k, T* q, cudaStream_t stream);

/// out_j = Σ_e value_e y_{row[e]} (MaskedDevice::sparse_product).
template <class T>
void launch_masked_sparse_product(index_t cols, const index_t* ptr, const index_t* row, const T* value, const T* y,
                                  index_t k, T* out, cudaStream_t stream);

}  // namespace dnmf::backend::cuda
