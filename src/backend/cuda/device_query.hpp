// Whether a CUDA device can be used, asked without creating a backend (make_kernels, the CLI, tests).
// Plain C++: callers need no CUDA headers.
#pragma once

#include <string>

namespace dnmf::backend::cuda {

/// True when at least one CUDA device is visible. Otherwise `why_not` (if given) receives
/// "cudaGetDeviceCount: <what the runtime said>".
bool device_present(std::string* why_not = nullptr);

}  // namespace dnmf::backend::cuda
