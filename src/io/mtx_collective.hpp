// dnmf internal: reading one rank's block of a Matrix Market file together with the other ranks, so that no
// rank holds (or parses) the whole matrix.
#pragma once

#include <cstddef>
#include <string>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// Collective over `comm`; each rank passes its own rows x cols (global, half-open). Rank 0 reads the header
/// and broadcasts it; the data section is split into comm.size() byte ranges, rank r parses the lines that
/// start in range r and sends each entry (and its mirror in a symmetric file) to every rank whose block holds
/// it; each rank builds its CSR block (local indices, sorted columns, duplicates summed in file order).
/// Problems are reported the way a one-process read would, naming the file and the line: the first one in file
/// order (malformed line, index out of range, negative/NaN/infinite value, more entries than announced) is a
/// dnmf::Error on the rank that found it and a PeerError on the others; a problem every rank sees (header,
/// too few entries, a bad block range) is a CollectiveError everywhere. `chunk_bytes` is the read size (small
/// values exercise the chunk boundaries in tests). `check_entries` false: values are kept as stored, NaN and
/// negative ones included (a masked run checks only the observed entries).
/// Bytes of one entry in transit (local row, local column, value) for a value of `scalar_bytes`.
constexpr std::size_t mtx_record_bytes(std::size_t scalar_bytes) { return 8 + 4 + scalar_bytes; }

/// The read size read_block uses.
constexpr std::size_t kMtxChunkBytes = std::size_t{16} << 20;

template <class T>
CsrMatrix<T> read_mtx_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                            std::size_t chunk_bytes = std::size_t{16} << 20, bool check_entries = true);

}  // namespace dnmf::io
