// An owned block of device memory (cudaMalloc / cudaFree), grown on demand. Used for the backend's scratch
// and for the resident copy of A.
#pragma once

#include <cstddef>

namespace dnmf::backend::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` (at least one) of device memory, contents undefined.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  /// Makes the buffer hold at least `bytes`; contents are lost when it grows. Growing frees the old block
  /// with cudaFree, which waits for the device, so work still queued on the old block is not disturbed.
  void* reserve(std::size_t bytes);
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t size() const { return bytes_; }

 private:
  void release() noexcept;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace dnmf::backend::cuda
