// The CUDA module's entry point: the one symbol dnmf_core looks up after loading libdnmf_cuda.so
// (backend/cuda_module.cpp explains why the backend is loaded, not linked).
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_query.hpp"
#include "backend/cuda/masked_device_cuda.hpp"
#include "backend/cuda_module.hpp"

namespace {

template <class T>
dnmf::backend::Kernels<T>* make_kernels() {
  return new dnmf::backend::CudaKernels<T>();  // owned by the caller; throws without a device
}

const dnmf::backend::CudaModuleApi kApi{
    dnmf::backend::kCudaModuleVersion,
    [](std::string* why_not) { return dnmf::backend::cuda::device_present(why_not); },
    &make_kernels<float>,
    &make_kernels<double>,
    &dnmf::backend::cuda::new_cuda_masked_device<float>,
    &dnmf::backend::cuda::new_cuda_masked_device<double>,
};

}  // namespace

/// The table of the backend's functions (see backend/cuda_module.hpp); never null.
extern "C" __attribute__((visibility("default"))) const dnmf::backend::CudaModuleApi* dnmf_cuda_module() {
  return &kApi;
}
