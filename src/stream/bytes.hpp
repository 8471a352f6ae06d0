// Byte counts as people write them ("256M", "2GiB") and as reports print them.
#pragma once

#include <cstdint>
#include <string>

namespace dnmf::stream {

/// Parses a byte count: a non-negative number with an optional suffix K, M, G or T (powers of 1024, with or
/// without "i" and "B": "256M", "2G", "1.5GiB", "64KB", "1048576"). Throws dnmf::Error naming the text
/// when it is not such a count or is zero.
[[nodiscard]] std::int64_t parse_bytes(const std::string& text);

/// "268435456 bytes (256.0 MiB)": exact and human-readable, for messages.
[[nodiscard]] std::string describe_bytes(std::int64_t bytes);

/// "256.0 MiB": the human-readable part only.
[[nodiscard]] std::string human_bytes(double bytes);

}  // namespace dnmf::stream
