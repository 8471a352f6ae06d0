#include "backend/cpu/cpu_kernels.hpp"
#include "backend/kernels.hpp"
#include "backend/reference/reference_kernels.hpp"
#include "dnmf/error.hpp"

namespace dnmf::backend {

bool backend_available(BackendKind kind, std::string* why_not) {
  if (kind != BackendKind::cuda) return true;
  if (why_not) *why_not = "this build of dnmf has no CUDA backend";
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
      break;
  }
  std::string why;
  backend_available(kind, &why);
  throw Error("--backend cuda: " + why);
}

template std::unique_ptr<Kernels<float>> make_kernels<float>(BackendKind);
template std::unique_ptr<Kernels<double>> make_kernels<double>(BackendKind);

}  // namespace dnmf::backend
