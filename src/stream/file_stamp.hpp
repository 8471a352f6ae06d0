// What a streamed input looked like when its source opened it. A streamed run checks entries on its first pass
// only and reads the file again on every pass, so a write to the file during the run fed unchecked values to the
// iteration (negative entries: negative factors, exit 0). The sources compare the stamp after every pass.
#pragma once

#include <cstdint>
#include <string>

namespace dnmf::stream {

/// The size and modification time of an open file.
class FileStamp {
 public:
  FileStamp() = default;
  /// The stamp of `fd` now; IoError naming `path` when it cannot be read.
  FileStamp(const std::string& path, int fd);

  /// IoError naming `path` when `fd`'s size or modification time differs from this stamp: the file was written
  /// while the run read it, and the pass just read may hold unchecked values.
  void check_unchanged(const std::string& path, int fd) const;

 private:
  std::int64_t size_ = 0;
  std::int64_t seconds_ = 0;
  std::int64_t nanoseconds_ = 0;
};

}  // namespace dnmf::stream
