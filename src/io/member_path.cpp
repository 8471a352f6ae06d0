// Splitting "container:member" paths; see member_path.hpp.
#include "io/member_path.hpp"

#include <algorithm>

#include "util/text.hpp"

namespace dnmf::io {

bool has_extension(const std::string& file, std::span<const std::string_view> extensions) {
  const std::string name = util::lower_file_name(file);
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
