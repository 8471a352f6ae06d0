// Text helpers for file names: the one letter-case folding that format detection compares extensions with.
// (Case-sensitive suffix tests are std::string::ends_with.)
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace dnmf::util {

/// `text` in lower case, byte by byte (std::tolower).
[[nodiscard]] inline std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// The file name of `path` (what follows its last '/'; all of it when there is none) in lower case.
[[nodiscard]] inline std::string lower_file_name(const std::string& path) {
  return lower_case(path.substr(path.find_last_of('/') + 1));  // npos + 1 == 0: no directory part
}

}  // namespace dnmf::util
