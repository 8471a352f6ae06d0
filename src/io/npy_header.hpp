// dnmf internal: the .npy header parser (npy.cpp) for arrays that are not files of their own: the members of an
// .npz archive, held in memory, some of which are not matrices (a 0-D byte string, 1-D index arrays).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dnmf/io.hpp"

namespace dnmf::io {

/// A .npy header as written, before any check that the array is a matrix this library reads.
struct NpyArrayHeader {
  std::string descr;                 ///< numpy's dtype string: "<f8", "|S3", "<i4", ...
  bool fortran_order = false;        ///< true: column-major data
  std::vector<std::uint64_t> shape;  ///< empty for a 0-D (scalar) array
  std::size_t data_offset = 0;       ///< byte offset of the first element
};

/// numpy's short name of the header's element type: "f8", "f4", "i2", ...
std::string dtype_name(const NpyHeader& header);

/// Parses the magic, version and dict of the .npy image `bytes` (the data need not be complete); the errors
/// read_npy_header gives for a file, starting with `where` ("A.npz:data.npy").
NpyArrayHeader parse_npy_array_header(std::string_view bytes, const std::string& where);

/// `array` as read_npy_header describes a matrix: a supported numeric dtype, 1-D (read as n x 1) or 2-D, and
/// data within the image's `size` bytes; dnmf::Error starting with `where` otherwise.
NpyHeader matrix_header(const NpyArrayHeader& array, std::uint64_t size, const std::string& where);

}  // namespace dnmf::io
