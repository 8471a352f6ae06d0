#include "backend/cuda/streamed_cuda.hpp"

#include <algorithm>

#include "backend/cuda/cuda_tile_engine.hpp"
#include "backend/cuda/device_memory.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "stream/npy_source.hpp"
#include "stream/tile_source.hpp"

namespace dnmf::backend::cuda {
namespace {

// The source of a file's block for the device: .npy by pread into the pinned ring (a mapping would leave the
// copies reading pageable memory, which CUDA stages through a bounce buffer at a fraction of the bandwidth).
template <class T>
std::unique_ptr<stream::TileSource<T>> device_source(const std::string& path, dist::Range rows, dist::Range cols) {
  if (io::format_of(path) == io::FileFormat::npy)  // by format: "A.npz:x.npy" is an archive's member
    return std::make_unique<stream::NpySource<T>>(path, rows, cols, stream::NpyAccess::read);
  return stream::open_source<T>(path, rows, cols);
}

}  // namespace

template <class T>
std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda(CudaKernels<T>& kernels, const std::string& path,
                                                                     dist::Range rows, dist::Range cols,
                                                                     std::size_t tile_bytes, int depth,
                                                                     int host_depth) {
  auto source = device_source<T>(path, rows, cols);
  return std::make_unique<stream::DeviceStreamedOperand<T>>(make_cuda_tile_engine(kernels), std::move(source),
                                                            tile_bytes, depth, host_depth > 0 ? host_depth : depth);
}

template <class T>
std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda(CudaKernels<T>& kernels, DenseView<const T> block,
                                                                     std::size_t tile_bytes, int depth) {
  return std::make_unique<stream::DeviceStreamedOperand<T>>(make_cuda_tile_engine(kernels), block, Side::H, tile_bytes,
                                                            depth);
}

template <class T>
CudaBlock<T> plan_cuda_block(CudaKernels<T>& kernels, const std::string& path, const io::MatrixShape& shape,
                             const dist::Layout& layout, index_t rank, Algorithm algorithm, std::int64_t budget_request,
                             bool force_streamed) {
  stream::DevicePlanInput in;
  in.layout = layout;
  in.sparse = shape.sparse;
  const index_t mb = layout.a_rows.size(), nb = layout.a_cols.size();
  in.stored = shape.sparse ? std::max<index_t>(shape.stored, 0) : mb * nb;  // a CSR block's nnz: at most the file's
  in.scalar_bytes = sizeof(T);
  in.rank = rank;
  in.algorithm = algorithm;
  in.budget = device_budget(budget_request);
  in.force_streamed = force_streamed;
  CudaBlock<T> out;
  std::unique_ptr<stream::TileSource<T>> source;
  if (!shape.sparse && stream::streamable(path)) {
    source = device_source<T>(path, layout.a_rows, layout.a_cols);
    in.min_tile_bytes = source->min_tile_bytes();
  } else {
    in.min_tile_bytes = to_size(std::max<index_t>(mb, 1)) * sizeof(T);
  }
  out.plan = stream::plan_device(in);
  if (!out.plan.streamed) return out;
  if (!source)
    throw Error(path + ": the block does not fit the device budget and this format cannot stream (use .npy)");
  out.streamed = std::make_unique<stream::DeviceStreamedOperand<T>>(
      make_cuda_tile_engine(kernels), std::move(source), out.plan.tile_bytes, out.plan.depth, out.plan.depth);
  return out;
}

// NOLINTBEGIN(bugprone-macro-parentheses): T is a type in these explicit instantiations
#define DNMF_INSTANTIATE(T)                                                                             \
  template std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda<T>(                     \
      CudaKernels<T>&, const std::string&, dist::Range, dist::Range, std::size_t, int, int);            \
  template std::unique_ptr<stream::DeviceStreamedOperand<T>> open_streamed_cuda<T>(                     \
      CudaKernels<T>&, DenseView<const T>, std::size_t, int);                                           \
  template CudaBlock<T> plan_cuda_block<T>(CudaKernels<T>&, const std::string&, const io::MatrixShape&, \
                                           const dist::Layout&, index_t, Algorithm, std::int64_t, bool);
// NOLINTEND(bugprone-macro-parentheses)
DNMF_INSTANTIATE(float)
DNMF_INSTANTIATE(double)
#undef DNMF_INSTANTIATE

}  // namespace dnmf::backend::cuda
