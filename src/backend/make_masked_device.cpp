// See masked_device.hpp: which masked device a backend gets.
#include <memory>
#include <string>
#include <type_traits>

#include "backend/kernels.hpp"
#include "backend/masked_device.hpp"
#include "dnmf/error.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda_module.hpp"  // the CUDA backend is a module loaded on first use, not linked
#endif

namespace dnmf::backend {

template <class T>
std::unique_ptr<MaskedDevice<T>> make_masked_device(BackendKind kind) {
  if (kind != BackendKind::cuda) return make_host_masked_device<T>();
#if DNMF_WITH_CUDA
  const CudaModuleApi& module = cuda_module();  // throws when the module cannot be loaded
  if constexpr (std::is_same_v<T, float>)
    return std::unique_ptr<MaskedDevice<T>>(module.make_float_masked());
  else
    return std::unique_ptr<MaskedDevice<T>>(module.make_double_masked());
#else
  std::string why;
  backend_available(kind, &why);
  throw Error("--backend cuda: " + why);
#endif
}

template std::unique_ptr<MaskedDevice<float>> make_masked_device<float>(BackendKind);
template std::unique_ptr<MaskedDevice<double>> make_masked_device<double>(BackendKind);

}  // namespace dnmf::backend
