// dnmf internal: naming an object inside an HDF5 file on the command line ("A.h5:/group/X").
// Compiled in every build (format detection needs it), with or without the HDF5 library.
#pragma once

#include <string>

namespace dnmf::io {

/// An HDF5 input path split into the file and the object inside it.
struct Hdf5Path {
  std::string file;    ///< the file system path ("A.h5")
  std::string object;  ///< the object ("/group/X"); empty: choose the default object
};

/// Splits "A.h5:/X" (or "A.hdf5:X", "A.h5ad:/layers/counts") at the colon after the extension; a path without one
/// is just the file.
[[nodiscard]] Hdf5Path split_hdf5_path(const std::string& path);

/// True when the file part of `path` ends with .h5, .hdf5 or .h5ad (any letter case).
[[nodiscard]] bool is_hdf5_path(const std::string& path);

/// True for an AnnData file (.h5ad), whose matrix is /X: the default object without a search.
[[nodiscard]] bool is_anndata_file(const std::string& file);

}  // namespace dnmf::io
