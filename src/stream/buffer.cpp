#include "stream/buffer.hpp"

#include <cstddef>

#include "dnmf/matrix.hpp"

namespace dnmf::stream {
namespace {

// On a cache line, as every dense matrix's storage (dnmf::CacheAlignedAllocator).
void* host_allocate(std::size_t bytes, void* /*context*/) { return CacheAlignedAllocator<std::byte>{}.allocate(bytes); }
void host_release(void* ptr, void* /*context*/) noexcept {
  CacheAlignedAllocator<std::byte>{}.deallocate(static_cast<std::byte*>(ptr), 0);
}

}  // namespace

BufferAllocator host_allocator() { return {&host_allocate, &host_release, nullptr, true}; }

}  // namespace dnmf::stream
