// A file read by position from the producer thread: pread loops (a large read may come back short) and
// errors that name the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dnmf::stream {

class ReadFile {
 public:
  /// Opens `path` read-only; throws dnmf::Error naming it.
  explicit ReadFile(const std::string& path);
  ~ReadFile();
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  /// Reads exactly `count` bytes at `offset` (a short file is an error naming the offset).
  void read(std::uint64_t offset, void* buffer, std::size_t count) const;
  /// Tells the kernel the whole file will be read sequentially (larger read-ahead).
  void advise_sequential() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Asks the kernel to drop the file's clean pages from the page cache (benchmarks of cold reads).
/// Returns false where that is not possible.
bool evict_from_page_cache(const std::string& path);

}  // namespace dnmf::stream
