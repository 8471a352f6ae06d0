#include "backend/cuda/device_query.hpp"

#include <cuda_runtime_api.h>

namespace dnmf::backend::cuda {

bool device_present(std::string* why_not) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device is not sticky; keep later calls clean
    if (why_not) *why_not = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
    return false;
  }
  if (count < 1) {
    if (why_not) *why_not = "cudaGetDeviceCount: no devices";
    return false;
  }
  return true;
}

}  // namespace dnmf::backend::cuda
