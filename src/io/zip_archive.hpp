// dnmf internal: reading the members of a zip archive, the container of numpy's .npz files, through libzip.
// Every failure is a dnmf::Error naming the archive and, where one is involved, the member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

struct zip;  // libzip's archive handle; its header stays out of the readers that use this class

namespace dnmf::io::detail {

/// An archive opened for reading. Members are addressed by their index in the archive's directory.
class ZipArchive {
 public:
  /// Opens `path`; a missing file, a file that is not a zip archive (or one cut short, which loses the directory
  /// at its end) is an error.
  explicit ZipArchive(const std::string& path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }
  /// The members' names, in directory order.
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  /// The index of the member called `name`, if there is one.
  [[nodiscard]] std::optional<std::size_t> find(const std::string& name) const;
  /// The member's uncompressed size as the directory states it.
  [[nodiscard]] std::uint64_t size(std::size_t index) const;

  /// The whole member, uncompressed; its checksum is verified, and data that ends early or runs past the size
  /// the directory states is an error.
  [[nodiscard]] std::string read(std::size_t index) const;
  /// The member's first min(count, size) bytes (no checksum: the rest is not read).
  [[nodiscard]] std::string read_prefix(std::size_t index, std::size_t count) const;

 private:
  [[nodiscard]] std::string read_bytes(std::size_t index, std::uint64_t count, bool whole) const;

  std::string path_;
  zip* archive_ = nullptr;
  std::vector<std::string> names_;
};

}  // namespace dnmf::io::detail
