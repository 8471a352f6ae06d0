// Splitting "file.h5:/object" paths; see hdf5_path.hpp.
#include "io/hdf5_path.hpp"

#include <array>
#include <string_view>

#include "io/member_path.hpp"

namespace dnmf::io {
namespace {

constexpr std::array<std::string_view, 3> kHdf5Extensions = {".h5", ".hdf5", ".h5ad"};
constexpr std::array<std::string_view, 1> kAnnDataExtension = {".h5ad"};

}  // namespace

Hdf5Path split_hdf5_path(const std::string& path) {
  MemberPath parts = split_member_path(path, kHdf5Extensions);
  return {std::move(parts.file), std::move(parts.member)};
}

bool is_hdf5_path(const std::string& path) { return has_extension(split_hdf5_path(path).file, kHdf5Extensions); }

bool is_anndata_file(const std::string& file) { return has_extension(file, kAnnDataExtension); }

}  // namespace dnmf::io
