// Device helpers shared by the kernels: grid-stride indexing of strided column-major views and a
// deterministic block reduction of pairs of doubles.
#pragma once

#include <cuda_runtime.h>

#include "backend/cuda/launch.hpp"
#include "backend/kernels.hpp"

namespace dnmf::backend::cuda {

/// Threads per block of every kernel here (a multiple of the warp size).
inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `work` items, at most `cap`.
inline int blocks_for(index_t work, int cap = 65535) {
  const index_t b = (work + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > cap ? cap : b));
}

/// Offset of the idx-th entry (column-major order) of a rows x ? view with leading dimension ld.
__device__ inline index_t strided_offset(index_t idx, index_t rows, index_t ld) {
  return ld == rows ? idx : (idx % rows) + (idx / rows) * ld;
}

/// First index and stride of a grid-stride loop.
__device__ inline index_t grid_first() { return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline index_t grid_stride() { return static_cast<index_t>(gridDim.x) * blockDim.x; }

/// Sum of v over the warp (all 32 lanes active); the result is valid in lane 0.
__device__ inline double2 warp_sum(double2 v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v.x += __shfl_down_sync(0xffffffffu, v.x, offset);
    v.y += __shfl_down_sync(0xffffffffu, v.y, offset);
  }
  return v;
}

/// Sum of v over the block (blockDim.x == kThreads); the result is valid in thread 0. Every thread of the
/// block must call it, once per kernel.
__device__ inline double2 block_sum(double2 v) {
  __shared__ double2 per_warp[kThreads / 32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? per_warp[lane] : make_double2(0.0, 0.0);
    v = warp_sum(v);
  }
  return v;
}

/// Queues the finishing kernel: acc = Σ partials[0..blocks) (or acc += it).
void finish_reduction(const double* partials, int blocks, double* acc, bool accumulate, cudaStream_t stream);

}  // namespace dnmf::backend::cuda
