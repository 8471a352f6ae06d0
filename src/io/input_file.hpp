// dnmf internal: a read-only file with positioned reads whose errors name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dnmf::io::detail {

/// An open input file. Reads are positioned (pread), so one object can serve any access order
/// without seeking, and every failure throws dnmf::Error starting with the path.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  /// Size in bytes when the file was opened.
  [[nodiscard]] std::uint64_t size() const { return size_; }
  /// The open descriptor (for fstat).
  [[nodiscard]] int descriptor() const { return fd_; }

  /// Reads exactly `count` bytes at `offset`; a short file is an error.
  void read_exact(std::uint64_t offset, void* buffer, std::size_t count) const;
  /// The whole file (as sized when opened).
  [[nodiscard]] std::string read_all() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace dnmf::io::detail
