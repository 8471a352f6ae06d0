// What the in-memory masked path holds beside its copies of A, for the memory plan of a masked run under
// --memory-budget (factor_masked_stream.cpp): the mask as read beside a sparse A, and the Gram lists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dist/grid.hpp"
#include "dnmf/io.hpp"
#include "dnmf/options.hpp"

namespace dnmf::api {

/// Bytes the in-memory masked path holds at its peak beyond the copies of A that in_memory_copies() counts:
/// - beside a sparse A (--unstored missing), the mask as read: its CSR, or every entry of a dense mask;
/// - for a dense problem, the Gram lists both halves keep (masked_block.cpp, choose_gram_lists): a row and a
///   coefficient for each of min(entries of weight other than 1, observed entries).
/// `mask_shape`: the mask file's header, read by the caller (set exactly when missing.mask is). `count` false
/// bounds the lists from the headers (the mask's stored entries, or m·n/2 for NaN alone); true counts them in one
/// streamed pass over A and the mask where both are dense .npy files cut in the same stripes (the bound
/// otherwise).
template <class T>
std::int64_t masked_resident_extra_bytes(const std::string& a_name, const io::MatrixShape& a_shape,
                                         const std::optional<io::MatrixShape>& mask_shape, const MissingValues& missing,
                                         const dist::Layout& layout, bool count);

}  // namespace dnmf::api
