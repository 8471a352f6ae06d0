#include <type_traits>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/kernels.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "dnmf/error.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda_module.hpp"  // the CUDA backend is a module loaded on first use, not linked
#endif

namespace dnmf::backend {

bool backend_available(BackendKind kind, std::string* why_not) {
  if (kind == BackendKind::cpu || kind == BackendKind::reference) return true;
  if (kind != BackendKind::cuda) {  // a value cast from an integer outside the enumeration
    if (why_not)
      *why_not = "unknown backend (value " + std::to_string(static_cast<int>(kind)) + "): use cpu, reference or cuda";
    return false;
  }
#if DNMF_WITH_CUDA
  std::string why;
  if (const CudaModuleApi* module = find_cuda_module(&why)) {
    if (module->device_present(&why)) return true;
    why = "no CUDA device is visible (" + why + ")";
  }
  if (why_not) *why_not = why;
#else
  if (why_not) *why_not = "this build of dnmf has no CUDA backend";
#endif
  return false;
}

template <class T>
std::unique_ptr<Kernels<T>> make_kernels(BackendKind kind) {
  switch (kind) {
    case BackendKind::reference:
      return std::make_unique<ReferenceKernels<T>>();
    case BackendKind::cpu:
      return std::make_unique<CpuKernels<T>>();
    case BackendKind::cuda:
#if DNMF_WITH_CUDA
    {
      // Throws when the module cannot be loaded, and (the constructor) with the reason when no device is visible.
      const CudaModuleApi& module = cuda_module();
      if constexpr (std::is_same_v<T, float>)
        return std::unique_ptr<Kernels<T>>(module.make_float_kernels());
      else
        return std::unique_ptr<Kernels<T>>(module.make_double_kernels());
    }
#else
      break;
#endif
  }
  std::string why;
  backend_available(kind, &why);
  if (kind != BackendKind::cuda) throw UsageError(why);
  throw Error("--backend cuda: " + why);
}

template std::unique_ptr<Kernels<float>> make_kernels<float>(BackendKind);
template std::unique_ptr<Kernels<double>> make_kernels<double>(BackendKind);

}  // namespace dnmf::backend
