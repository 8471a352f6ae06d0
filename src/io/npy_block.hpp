// dnmf internal: one rank's block of a .npy file, reading exactly the block's bytes (implemented in npy.cpp,
// with the whole-file and stripe readers it shares its run reader with).
#pragma once

#include <string>

#include "dist/grid.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// Rows `rows` x columns `cols` (global, half-open) of the 2-D array in `path`, converted to T. Reads only the
/// block's bytes: one read per block column of a Fortran-order file, one per block row of a C-order file
/// (adjacent runs are merged when the block spans the whole other dimension). A range outside the array, a
/// truncated file, or a negative, NaN or infinite entry (named by its global row and column) is a
/// dnmf::Error naming the file. Not collective. `check_entries` false: entries are returned as stored (a masked
/// run checks only the observed ones).
template <class T>
DenseMatrix<T> read_npy_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries = true);

}  // namespace dnmf::io
