// The CUDA backend as a module that dnmf_core loads on first use (libdnmf_cuda.so, dlopen), never links.
//
// Why: linking the backend into dnmf_core made every process map the CUDA runtime, cuBLAS(Lt) and cuSPARSE at
// start-up (~250 MiB resident before any work), which broke the CPU path's --memory-budget promise (peak RSS
// <= budget + 5%) and kept a CUDA-built dnmf from starting on a machine without the CUDA libraries. The module
// exports one extern "C" function returning the table below; dnmf_core calls the backend only through it.
// Built only where the CUDA backend is (DNMF_WITH_CUDA).
#pragma once

#include <string>

#include "backend/kernels.hpp"
#include "backend/masked_device.hpp"

namespace dnmf::backend {

/// The table's layout version: bumped whenever CudaModuleApi changes, so a stale module is refused.
inline constexpr int kCudaModuleVersion = 3;

/// The module's file name; looked for beside libdnmf_core.so first, then by the dynamic loader's search.
inline constexpr const char* kCudaModuleFile = "libdnmf_cuda.so";

/// The module's entry point: extern "C" const CudaModuleApi* dnmf_cuda_module();
inline constexpr const char* kCudaModuleEntry = "dnmf_cuda_module";

/// What dnmf_core calls in the CUDA module. Kernels are returned owned (delete through the base class);
/// the module stays loaded for the rest of the process, so their code stays mapped.
struct CudaModuleApi {
  int version = 0;  ///< kCudaModuleVersion of the module's build
  /// True when a CUDA device is visible; else `why_not` (if given) receives the runtime's reason.
  bool (*device_present)(std::string* why_not) = nullptr;
  /// New cuda kernels in float / double; throw dnmf::Error (e.g. no device) as CudaKernels' constructor does.
  Kernels<float>* (*make_float_kernels)() = nullptr;
  Kernels<double>* (*make_double_kernels)() = nullptr;
  /// New devices for the masked iteration (since version 2; version 3 added the HALS, BPP and stored-pattern
  /// operations of MaskedDevice); throw dnmf::Error without a device.
  MaskedDevice<float>* (*make_float_masked)() = nullptr;
  MaskedDevice<double>* (*make_double_masked)() = nullptr;
};

/// The loaded module's table, or null with `why_not` (if given) set to "cannot load libdnmf_cuda.so (<why>)"
/// when it or its libraries are missing. Loads it on the first call (thread-safe, once per process).
const CudaModuleApi* find_cuda_module(std::string* why_not);

/// The loaded module's table; throws dnmf::Error "--backend cuda: cannot load libdnmf_cuda.so (<why>)" where
/// find_cuda_module finds none.
const CudaModuleApi& cuda_module();

/// Whether cuda_module() has been called in this process (loaded or not): lets tests see that CPU runs never
/// ask for the module while a cuda request does.
bool cuda_module_requested();

}  // namespace dnmf::backend
