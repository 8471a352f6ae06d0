// Splitting "container:member" paths; see member_path.hpp.
#include "io/member_path.hpp"

#include <algorithm>
#include <cctype>

namespace dnmf::io {

bool has_extension(const std::string& file, std::span<const std::string_view> extensions) {
  std::string name = file.substr(file.find_last_of('/') + 1);  // npos + 1 == 0: no directory
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return std::any_of(extensions.begin(), extensions.end(), [&name](std::string_view extension) {
    return name.size() > extension.size() && name.ends_with(extension);
  });
}

MemberPath split_member_path(const std::string& path, std::span<const std::string_view> extensions) {
  for (std::size_t colon = path.find(':'); colon != std::string::npos; colon = path.find(':', colon + 1)) {
    std::string file = path.substr(0, colon);
    if (has_extension(file, extensions)) return {std::move(file), path.substr(colon + 1)};
  }
  return {path, {}};
}

}  // namespace dnmf::io
