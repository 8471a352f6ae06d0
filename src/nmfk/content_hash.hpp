// The content hash of a distributed matrix, for the checkpoint manifest: the sum (mod 2^64) of a 64-bit mix
// of (row, column, value bits) over the non-zero entries. A sum does not depend on how the matrix is cut into
// blocks or in which order they are visited, so any grid or process count gives the same hash, while moving,
// adding or changing any entry changes it (a random 64-bit collision aside): a row-permuted matrix with the
// same shape, sum and sum of squares does not match.
#pragma once

#include <cstdint>
#include <string>

#include "dist/communicator.hpp"
#include "dnmf/index.hpp"
#include "io/block_read.hpp"

namespace dnmf::rank_search {

/// The hash of one entry a(row, col) = value (value != 0), as the content hash sums it.
[[nodiscard]] std::uint64_t entry_hash(index_t row, index_t col, double value);

/// The block's share of the content hash; the block starts at global (row0, col0). Zeros do not count, so a
/// dense and a sparse copy of a matrix hash alike; values count in double precision.
template <class T>
[[nodiscard]] std::uint64_t block_content_hash(const io::LocalBlock<T>& block, index_t row0, index_t col0);

/// Sums every rank's share (mod 2^64) over `comm`; every rank gets the total.
[[nodiscard]] std::uint64_t sum_content_hash(std::uint64_t share, dist::Communicator& comm);

/// The hash as 16 hex digits (the manifest's text).
[[nodiscard]] std::string content_hash_text(std::uint64_t hash);

}  // namespace dnmf::rank_search
