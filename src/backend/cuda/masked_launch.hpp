// Host-side entry points of the masked iteration's kernels (masked.cu): the elementwise steps and sums of
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

}  // namespace dnmf::backend::cuda
