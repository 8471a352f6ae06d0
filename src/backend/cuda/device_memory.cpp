#include "backend/cuda/device_memory.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "backend/cuda/check.hpp"
#include "backend/cuda/device_query.hpp"
#include "dnmf/error.hpp"
#include "stream/bytes.hpp"

namespace dnmf::backend::cuda {
namespace {

void* pinned_allocate(std::size_t bytes, void*) {
  void* p = nullptr;
  DNMF_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void pinned_release(void* p, void*) noexcept { (void)cudaFreeHost(p); }

}  // namespace

DeviceMemory query_device_memory() {
  std::string why;
  if (!device_present(&why)) throw Error("device memory: no CUDA device is visible (" + why + ")");
  std::size_t free = 0, total = 0;
  DNMF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return {static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
}

std::int64_t device_margin(const DeviceMemory& memory) {
  return std::max<std::int64_t>(std::int64_t{512} << 20, memory.total / 20);
}

std::int64_t device_budget(std::int64_t requested) {
  const DeviceMemory memory = query_device_memory();
  if (requested > 0) {
    if (requested > memory.free)
      throw Error("device memory budget " + stream::describe_bytes(requested) + " exceeds the device's free memory " +
                  stream::describe_bytes(memory.free));
    return requested;
  }
  return std::max<std::int64_t>(memory.free - device_margin(memory), 0);
}

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void use_device(int index) { DNMF_CUDA_CHECK(cudaSetDevice(index)); }

stream::BufferAllocator pinned_allocator() {
  stream::BufferAllocator a;
  a.allocate = &pinned_allocate;
  a.release = &pinned_release;
  a.context = nullptr;
  a.host_visible = true;
  return a;
}

}  // namespace dnmf::backend::cuda
