// Everything one CudaKernels instance owns on the GPU: the stream all its work is queued on, the cuBLAS
// and cuSPARSE handles bound to that stream, scratch buffers, the reduction buffers and the resident A.
// Not a template: both precisions share this code.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <array>
#include <cstddef>

#include "backend/cuda/device_buffer.hpp"
#include "backend/cuda/resident.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend::cuda {

/// What a scratch buffer is for. Calls that follow one another on the stream may share a slot (stream
/// order keeps them apart); a call that runs inside another one uses a different slot.
enum class Slot {
  numer,    ///< fused_pass: the numerator of the side being updated
  tile,     ///< kl_multiply (dense): the model tile; update (mu): the new factor
  ratio,    ///< kl_multiply (CSR): the ratio values
  offsets,  ///< resolve(): row offsets rebased to zero
  spmm,     ///< cuSPARSE SpMM workspace
  count_,
};

class Context {
 public:
  /// Binds to the current device; throws dnmf::Error("--backend cuda: no CUDA device is visible (...)").
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] cudaStream_t stream() const { return stream_; }
  [[nodiscard]] cublasHandle_t blas() const { return blas_; }
  [[nodiscard]] cusparseHandle_t sparse() const { return sparse_; }

  /// The slot's buffer, grown to at least `bytes`.
  void* scratch(Slot slot, std::size_t bytes);
  /// Block partial sums of a reduction (kReduceBlocks pairs of doubles).
  [[nodiscard]] double* partials() const;
  /// The two-double device accumulator reductions end in.
  [[nodiscard]] double* accumulator() const;
  /// Copies the accumulator to the host once the queued work has finished.
  std::array<double, 2> fetch_accumulator();
  /// Waits for the stream.
  void synchronize();

  [[nodiscard]] ResidentStore& residents() { return residents_; }

  /// The first SpMM plan (sparse_mm.cpp) cuSPARSE accepted, for Side::H products [0] and Side::W [1]; plans
  /// it refused once are not asked again.
  int spmm_plan[2] = {0, 0};

 private:
  void release() noexcept;

  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cusparseHandle_t sparse_ = nullptr;
  std::array<DeviceBuffer, static_cast<std::size_t>(Slot::count_)> scratch_;
  DeviceBuffer reduction_;         // partials followed by the accumulator
  double* host_result_ = nullptr;  // pinned, so the copy of the accumulator is a true async copy
  ResidentStore residents_;
};

}  // namespace dnmf::backend::cuda
