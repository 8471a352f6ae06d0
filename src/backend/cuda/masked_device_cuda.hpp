// backend::MaskedDevice on one GPU: cuBLAS products and the kernels of masked.cu, all queued on one stream;
// the host waits only where it needs a value (a sum, a download). Plain C++ (no CUDA headers).
#pragma once

#include "backend/masked_device.hpp"

namespace dnmf::backend::cuda {

/// A new CUDA masked device bound to the current device; throws dnmf::Error when none is visible.
template <class T>
MaskedDevice<T>* new_cuda_masked_device();

}  // namespace dnmf::backend::cuda
