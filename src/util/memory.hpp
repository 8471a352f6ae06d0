// Process memory figures for reports.
#pragma once

#include <cstdint>

namespace dnmf::util {

/// Peak resident set size of this program since its exec, in bytes (VmHWM, else getrusage), 0 where unknown.
std::int64_t peak_rss_bytes();

}  // namespace dnmf::util
