// What this process holds in memory now (the planner's baseline; getrusage gives only the peak).
#pragma once

#include <cstdint>

namespace dnmf::stream {

/// Current resident set size in bytes (/proc/self/statm); 0 where it cannot be read.
[[nodiscard]] std::int64_t current_rss_bytes();

}  // namespace dnmf::stream
