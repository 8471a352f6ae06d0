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
  [[nodiscard]] int descriptor() const { return fd_; }
  [[nodiscard]] bool drop_behind() const { return drop_behind_; }
  /// Reads exactly `count` bytes at `offset` (a short file is an error naming the offset).
  void read(std::uint64_t offset, void* buffer, std::size_t count) const;
  /// Tells the kernel the whole file will be read sequentially (larger read-ahead).
  void advise_sequential() const;
  /// Drop-behind: after each read, ask the kernel to evict what it just read from the page cache, so that
  /// every pass reads from the device (cold-read benchmarks; files far larger than memory).
  void set_drop_behind(bool on) { drop_behind_ = on; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  bool drop_behind_ = false;
};

/// Asks the kernel to drop the file's clean pages from the page cache (benchmarks of cold reads).
/// Returns false where that is not possible.
bool evict_from_page_cache(const std::string& path);

}  // namespace dnmf::stream
