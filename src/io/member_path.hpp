// dnmf internal: paths that name something inside a container file on the command line ("A.h5:/group/X",
// "A.npz:counts"). Compiled in every build: format detection needs it.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace dnmf::io {

/// A path split into the container file and the member inside it.
struct MemberPath {
  std::string file;    ///< the file system path ("A.h5")
  std::string member;  ///< what follows the colon ("/group/X"); empty: the container's default
};

/// True when the last component of `file` ends with one of `extensions` (".h5"; any letter case) after at least
/// one other character.
[[nodiscard]] bool has_extension(const std::string& file, std::span<const std::string_view> extensions);

/// Splits `path` at the first colon that ends a file name with one of `extensions`; a colon elsewhere (a directory
/// called "run:1") stays part of the file name. Without such a colon the whole path is the file.
[[nodiscard]] MemberPath split_member_path(const std::string& path, std::span<const std::string_view> extensions);

}  // namespace dnmf::io
