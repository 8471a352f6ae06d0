// Process and machine memory figures: for reports, and for refusing work that cannot fit.
#pragma once

#include <cstdint>

namespace dnmf::util {

/// Peak resident set size of this program since its exec, in bytes (VmHWM, else getrusage), 0 where unknown.
std::int64_t peak_rss_bytes();

/// The machine's physical memory in bytes (sysconf), 0 where the system does not say.
double physical_memory_bytes();

}  // namespace dnmf::util
