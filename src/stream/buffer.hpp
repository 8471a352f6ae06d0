// Tile memory and where it comes from. The ring and the tiles never allocate on their own: they ask a
// BufferAllocator, so the same code can hold ordinary host memory (the CPU backend), pinned host memory or
// device memory (a CUDA backend) without knowing which.
#pragma once

#include <cstddef>
#include <utility>

namespace dnmf::stream {

/// An allocation hook: `allocate(bytes)` returns memory aligned for any scalar (or throws), `release` frees
/// it. `host_visible` says whether the CPU may read and write it (pread and validation need that).
struct BufferAllocator {
  void* (*allocate)(std::size_t bytes, void* context) = nullptr;
  void (*release)(void* ptr, void* context) noexcept = nullptr;
  void* context = nullptr;
  bool host_visible = true;
};

/// Plain host memory (64-byte aligned).
[[nodiscard]] BufferAllocator host_allocator();

/// A run of `capacity` elements of U from an allocator; moves, never copies.
template <class U>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const BufferAllocator& allocator, std::size_t capacity)
      : allocator_(allocator),
        data_(capacity > 0 ? static_cast<U*>(allocator.allocate(capacity * sizeof(U), allocator.context)) : nullptr),
        capacity_(capacity) {}
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (data_ != nullptr) allocator_.release(data_, allocator_.context);
  }
  [[nodiscard]] U* data() const { return data_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t bytes() const { return capacity_ * sizeof(U); }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(allocator_, other.allocator_);
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
  }
  BufferAllocator allocator_;
  U* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace dnmf::stream
