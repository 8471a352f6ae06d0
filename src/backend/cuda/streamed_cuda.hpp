// Entry points of the CUDA streamed mode for callers (the CLI, benchmarks): plan one rank's device memory and
// open its block resident or streamed. Plain C++ header; defined only where the CUDA backend is built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/cuda/cuda_kernels.hpp"
#include "dist/grid.hpp"
#include "io/block_read.hpp"
#include "stream/device_planner.hpp"
#include "stream/device_streamed_operand.hpp"

namespace dnmf::backend::cuda {

/// A device-streamed operand over the block rows x cols (global indices) of a dense matrix file (.npy): a
/// producer thread reads tiles into `host_depth` pinned host buffers (0: as many as `depth`), the device
/// copies them into `depth` tile buffers. Tiles hold at most `tile_bytes`. Throws dnmf::Error naming the file
/// for a format that cannot stream or a CSR file.
template <class T>
[[nodiscard]] std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda(CudaKernels<T>& kernels,
                                                                                   const std::string& path,
                                                                                   dist::Range rows, dist::Range cols,
                                                                                   std::size_t tile_bytes, int depth,
                                                                                   int host_depth = 0);

/// A device-streamed operand over a dense block already in host memory (it must outlive the operand), which
/// is registered (page-locked) in place, in column stripes.
template <class T>
[[nodiscard]] std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda(CudaKernels<T>& kernels,
                                                                                   DenseView<const T> block,
                                                                                   std::size_t tile_bytes, int depth);

/// What plan_cuda_block() decided, and the streamed operand when it decided to stream.
template <class T>
struct CudaBlock {
  stream::DevicePlan plan;
  std::unique_ptr<stream::DeviceStreamedOperand<T>> streamed;  ///< nullptr: the block fits; load it resident
};

/// Plans this rank's block of `path` (`shape`: read_shape()'s answer for the whole file; the block is
/// layout.a_rows x layout.a_cols) for rank k and `algorithm` against the
/// device budget (`budget_request` > 0: that many bytes, as a test or benchmark gives it; 0: free memory minus
/// a margin) and, when it does not fit (or `force_streamed`), opens it streamed with the plan's tile size and
/// depth. Throws dnmf::Error stating the minimum budget when even streaming cannot fit, and for CSR blocks
/// that do not fit.
template <class T>
[[nodiscard]] CudaBlock<T> plan_cuda_block(CudaKernels<T>& kernels, const std::string& path,
                                           const io::MatrixShape& shape, const dist::Layout& layout, index_t rank,
                                           Algorithm algorithm, std::int64_t budget_request,
                                           bool force_streamed = false);

}  // namespace dnmf::backend::cuda
