// Whether the GPU tests can run here: the reason the cuda backend cannot (no CUDA in this build, the module not
// loadable, no device visible), or "" when it can. Tests skip with this reason, so a run says why they did not.
#pragma once

#include <string>

#include "backend/kernels.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda/device_query.hpp"
#endif

namespace dnmf::test {

inline std::string why_no_cuda() {
  std::string why;
#if DNMF_WITH_CUDA
  return backend::cuda::device_present(&why) ? std::string() : why;
#else
  backend::backend_available(BackendKind::cuda, &why);
  return why;
#endif
}

}  // namespace dnmf::test
