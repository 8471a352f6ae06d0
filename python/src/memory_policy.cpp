// See memory_policy.hpp.

#include "memory_policy.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dnmf::python {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  const char* off = std::getenv("DNMF_MALLOC_TUNING");
  if (off != nullptr && std::strcmp(off, "0") == 0) return false;
  for (const char* chosen : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"})
    if (std::getenv(chosen) != nullptr) return false;
  constexpr int kMmapThreshold = 16 << 20;  // larger arrays still come from (and go back to) the system
  constexpr int kTrimThreshold = 64 << 20;  // at most this much freed memory is kept at the heap's top
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace dnmf::python
