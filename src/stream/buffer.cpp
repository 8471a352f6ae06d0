#include "stream/buffer.hpp"

#include <new>

namespace dnmf::stream {
namespace {

constexpr std::align_val_t kAlignment{64};

void* host_allocate(std::size_t bytes, void* /*context*/) { return ::operator new(bytes, kAlignment); }
void host_release(void* ptr, void* /*context*/) noexcept { ::operator delete(ptr, kAlignment); }

}  // namespace

BufferAllocator host_allocator() { return {&host_allocate, &host_release, nullptr, true}; }

}  // namespace dnmf::stream
