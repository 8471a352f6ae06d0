// dnmf internal: opening an input that must be a regular file. A FIFO without a writer would block open() and
// read() forever, a directory or a device reads as garbage or never ends; all of them are refused up front.
#pragma once

#include <cstdint>
#include <string>

namespace dnmf::io::detail {

/// Throws IoError naming `path` unless it is a regular file (following symbolic links); used where the file is
/// opened by another library (HDF5).
void require_regular_file(const std::string& path);

/// Opens `path` read-only and returns the descriptor, or throws IoError naming it: cannot open, or not a regular
/// file. The open is non-blocking, so a FIFO swapped in after a check cannot hang it; the descriptor returned
/// is blocking again.
[[nodiscard]] int open_regular_file(const std::string& path);

/// Throws the IoError for a file that a read at `offset` found shorter than the `size_when_opened` it had when
/// opened (changed under the run), with the size it has now (from `fd`).
[[noreturn]] void throw_shrank(const std::string& path, int fd, std::uint64_t size_when_opened, std::uint64_t offset);

}  // namespace dnmf::io::detail
