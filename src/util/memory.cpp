#include "util/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace dnmf::util {
namespace {

// VmHWM of /proc/self/status in bytes, or -1 where it cannot be read.
std::int64_t status_high_water_mark() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      if (std::sscanf(line + 6, "%lld", &kib) != 1) kib = -1;
      break;
    }
  }
  std::fclose(f);
  return kib < 0 ? -1 : static_cast<std::int64_t>(kib) * 1024;
}

}  // namespace

std::int64_t peak_rss_bytes() {
  // getrusage's ru_maxrss survives exec: a process started by a large parent (a Python harness, a notebook)
  // reports the parent's size at fork. VmHWM belongs to this program's own address space.
  const std::int64_t hwm = status_high_water_mark();
  if (hwm >= 0) return hwm;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace dnmf::util
