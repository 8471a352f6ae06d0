#include "backend/cpu/cpu_kernels.hpp"
#include "backend/kernels.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "dnmf/error.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_query.hpp"
#endif

namespace dnmf::backend {

bool backend_available(BackendKind kind, std::string* why_not) {
  if (kind != BackendKind::cuda) return true;
#if DNMF_WITH_CUDA
  std::string why;
  if (cuda::device_present(&why)) return true;
  if (why_not) *why_not = "no CUDA device is visible (" + why + ")";
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
      return std::make_unique<CudaKernels<T>>();  // throws with the reason when no device is visible
#else
      break;
#endif
  }
  std::string why;
  backend_available(kind, &why);
  throw Error("--backend cuda: " + why);
}

template std::unique_ptr<Kernels<float>> make_kernels<float>(BackendKind);
template std::unique_ptr<Kernels<double>> make_kernels<double>(BackendKind);

}  // namespace dnmf::backend
