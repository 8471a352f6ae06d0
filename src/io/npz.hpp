// dnmf internal: numpy's .npz archives as Python users write them: scipy.sparse.save_npz of a CSR or CSC matrix
// (members format, shape, data, indices, indptr), or numpy.savez / savez_compressed with one array, or the array
// that "A.npz:NAME" names. Members are .npy images, stored or deflated; an archive's members are compressed
// streams with no way to start in the middle, so a block is read by uncompressing the matrix's members whole
// (no streaming) and keeping the block.
#pragma once

#include <optional>
#include <string>

#include "dist/grid.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/member_path.hpp"

namespace dnmf::io {

/// Splits "A.npz:NAME" at the colon after the extension (".npz", any letter case); without one, no member.
[[nodiscard]] MemberPath split_npz_path(const std::string& path);

/// True when the file part of `path` ends with .npz.
[[nodiscard]] bool is_npz_path(const std::string& path);

/// Shape of the matrix `path` names, from the members' headers (and scipy's shape member) without the data.
/// Errors (not a zip archive, a missing member, several arrays and none named, a bad dtype or shape, ...) name
/// the file and, where one is at fault, the member.
MatrixShape npz_shape(const std::string& path);

/// The .npy header of the array `path` names (its dtype and order, for `dnmf info`), or nullopt when it names a
/// scipy sparse matrix. Errors as npz_shape().
std::optional<NpyHeader> npz_array_header(const std::string& path);

/// What read_npz_block holds besides a block of about `stored` entries (io::resident_read_footprint): the
/// uncompressed members it reads whole (a sparse matrix's indices and data with its pointers as int64, or the
/// array) and, once they are freed, a CSC block's transposed copy.
ReadFootprint npz_read_footprint(const std::string& path, std::int64_t stored, std::size_t scalar_bytes);

/// Rows `rows` x columns `cols` (global, half-open) of the matrix `path` names, in precision T: dense for an
/// array, CSR for a scipy sparse matrix (a CSC one transposed on the way). Uncompresses the matrix's members
/// into memory. Checks as the other readers do: indptr from 0 to nnz and never decreasing, indices in range,
/// and in the block's entries no negative, NaN or infinite value (named by global row and column; unless
/// `check_entries` is false: a masked run checks only the observed entries). Not collective.
template <class T>
LocalBlock<T> read_npz_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries = true);

}  // namespace dnmf::io
