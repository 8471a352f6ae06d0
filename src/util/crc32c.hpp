// CRC-32C (Castagnoli polynomial, reflected, as in iSCSI, ext4 and SQLite's WAL option): the checksum of our
// own binary files (.dcsr, NMFk job files). x86-64 CPUs with SSE4.2 compute it in hardware; elsewhere a
// table-driven loop gives the same values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dnmf::util {

/// Continues a CRC-32C over `size` more bytes: crc32c(b, crc32c(a)) equals the checksum of a followed by b.
/// Start with 0 (the checksum of no bytes).
[[nodiscard]] std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

/// The portable table-driven version (what crc32c uses without SSE4.2); exposed so tests compare both.
[[nodiscard]] std::uint32_t crc32c_portable(const void* data, std::size_t size, std::uint32_t crc = 0);

}  // namespace dnmf::util
