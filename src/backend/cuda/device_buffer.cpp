#include "backend/cuda/device_buffer.hpp"

#include <algorithm>
#include <utility>

#include "backend/cuda/check.hpp"

namespace dnmf::backend::cuda {

DeviceBuffer::DeviceBuffer(std::size_t bytes) { reserve(bytes); }

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void* DeviceBuffer::reserve(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  if (bytes <= bytes_) return ptr_;
  release();
  void* p = nullptr;
  DNMF_CUDA_CHECK(cudaMalloc(&p, bytes));
  ptr_ = p;
  bytes_ = bytes;
  return ptr_;
}

void DeviceBuffer::release() noexcept {
  if (ptr_) (void)cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace dnmf::backend::cuda
