// Splitting "file.h5:/object" paths; see hdf5_path.hpp.
#include "io/hdf5_path.hpp"

#include "util/text.hpp"

namespace dnmf::io {
namespace {

bool has_hdf5_extension(const std::string& file) {
  const std::string name = util::lower_file_name(file);
  return name.size() > 3 && (name.ends_with(".h5") || name.ends_with(".hdf5"));
}

}  // namespace

Hdf5Path split_hdf5_path(const std::string& path) {
  // The first colon that ends a name with an HDF5 extension separates file and object; a colon elsewhere
  // (a directory called "run:1") stays part of the file name.
  for (std::size_t colon = path.find(':'); colon != std::string::npos; colon = path.find(':', colon + 1)) {
    const std::string file = path.substr(0, colon);
    if (has_hdf5_extension(file)) return {file, path.substr(colon + 1)};
  }
  return {path, {}};
}

bool is_hdf5_path(const std::string& path) { return has_hdf5_extension(split_hdf5_path(path).file); }

}  // namespace dnmf::io
