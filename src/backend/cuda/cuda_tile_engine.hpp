// The CUDA TileEngine: a copy stream beside the kernels' compute stream, D device tile buffers with an event
// each for "copied" (recorded on the copy stream, waited on by compute) and "consumed" (recorded on compute
// after the tile's last kernel, waited on by the copy stream before the buffer is refilled), per-tile sums
// kept on the device until the pass ends, and optional timing events per tile. Plain C++ header.
#pragma once

#include <memory>

#include "backend/cuda/cuda_kernels.hpp"
#include "stream/tile_engine.hpp"

namespace dnmf::backend::cuda {

/// An engine computing with `kernels` (which must outlive it) and queuing its copies on a stream of its own.
template <class T>
[[nodiscard]] std::unique_ptr<stream::TileEngine<T>> make_cuda_tile_engine(CudaKernels<T>& kernels);

}  // namespace dnmf::backend::cuda
