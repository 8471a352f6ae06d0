// Device memory as the streamed mode sees it: the budget (free memory minus a margin, or what the user
// asked for) and pinned host memory for the host side of the ring. Plain C++ header.
#pragma once

#include <cstdint>

#include "stream/buffer.hpp"

namespace dnmf::backend::cuda {

/// Free and total memory of the current device, in bytes.
struct DeviceMemory {
  std::int64_t free = 0;
  std::int64_t total = 0;
};

/// cudaMemGetInfo on the current device; throws dnmf::Error when no device is visible.
[[nodiscard]] DeviceMemory query_device_memory();

/// What the device margin leaves out of free memory: CUDA's own growth (cuBLAS handles of other libraries,
/// fragmentation, another process starting): the larger of 512 MiB and 5% of the device.
[[nodiscard]] std::int64_t device_margin(const DeviceMemory& memory);

/// The device budget of a run: `requested` when positive (a caller's figure; a dnmf::Error when it
/// exceeds the device's free memory), else free memory minus device_margin().
[[nodiscard]] std::int64_t device_budget(std::int64_t requested = 0);

/// Number of CUDA devices this process sees (0 when none or the driver is missing).
[[nodiscard]] int visible_devices();

/// Makes device `index` current for the calling thread (one GPU per rank: index = local rank % devices).
void use_device(int index);

/// Page-locked host memory (cudaHostAlloc / cudaFreeHost) for ring buffers the device copies from.
[[nodiscard]] stream::BufferAllocator pinned_allocator();

}  // namespace dnmf::backend::cuda
