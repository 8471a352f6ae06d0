#include "stream/process_memory.hpp"

#include <unistd.h>

#include <cstdio>

namespace dnmf::stream {

std::int64_t current_rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int fields = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (fields != 2) return 0;
  return static_cast<std::int64_t>(resident) * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace dnmf::stream
