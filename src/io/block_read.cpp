// Per-rank block reads and the shape probe: dispatch by format to the .npy block reader (positioned reads),
// the collective Matrix Market reader, the HDF5 reader, the .dcsr reader and the .npz reader. See block_read.hpp.
#include "io/block_read.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/collective_failure.hpp"
#include "io/dcsr.hpp"
#include "io/hdf5_io.hpp"
#include "io/input_file.hpp"
#include "io/mtx_collective.hpp"
#include "io/mtx_parse.hpp"
#include "io/npy_block.hpp"
#include "io/npz.hpp"
#include "util/memory.hpp"

namespace dnmf::io {
namespace {

MatrixShape shape_here(const std::string& path) {
  switch (format_of(path)) {
    case FileFormat::npy: {
      const NpyHeader h = read_npy_header(path);
      return {h.rows, h.cols, h.rows * h.cols, false};
    }
    case FileFormat::matrix_market: {
      const mtx::Header h = mtx::read_header(detail::InputFile(path));
      // Stored entries as the file lists them (a symmetric file's mirrored entries are not counted).
      return {h.rows, h.cols, h.entries, true};
    }
    case FileFormat::hdf5:
      return hdf5_shape(path);
    case FileFormat::dcsr:
      return read_dcsr_shape(path);
    case FileFormat::npz:
      return npz_shape(path);
  }
  throw UsageError(path + ": unknown input format");
}

}  // namespace

MatrixShape read_shape(const std::string& path, dist::Communicator& comm) {
  // Rank 0 decides; the others learn the answer or the error's text.
  std::optional<Error> failure;
  MatrixShape s;
  if (comm.rank() == 0) {
    try {
      s = shape_here(path);
    } catch (const Error& e) {
      failure = e;
    }
  }
  if (comm.size() == 1) {
    if (failure) throw CollectiveError(*failure);
    return s;
  }
  std::int64_t fields[5] = {s.rows, s.cols, s.stored, s.sparse ? 1 : 0, failure ? 1 : 0};
  comm.broadcast(fields, 5, dist::Scalar::i64, 0);
  if (fields[4] != 0)
    detail::raise_everywhere(comm, 0, failure ? failure->what() : std::string(),
                             failure ? failure->kind() : ErrorKind::general);
  return {fields[0], fields[1], fields[2], fields[3] != 0};
}

template <class T>
LocalBlock<T> read_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                         bool check_entries) {
  // The format is known from the name alike on every rank, so the branch taken is the same everywhere.
  const FileFormat format = detail::run_agreed(comm, path, [&] {
    const FileFormat f = format_of(path);
    if (f != FileFormat::npy) check_row_pointers_fit(path, rows.size());  // a dense read checks its size itself
    return f;
  });
  switch (format) {
    case FileFormat::npy: {
      LocalBlock<T> block;
      block.dense = detail::run_agreed(comm, path, [&] { return read_npy_block<T>(path, rows, cols, check_entries); });
      return block;
    }
    case FileFormat::matrix_market: {
      LocalBlock<T> block;
      block.sparse = true;
      block.csr = read_mtx_block<T>(path, rows, cols, comm, kMtxChunkBytes, check_entries);
      return block;
    }
    case FileFormat::hdf5:
      return read_hdf5_block<T>(path, rows, cols, comm, check_entries);
    case FileFormat::dcsr:
      // Row ranges by positioned reads (the row index), like .npy: no exchange between ranks.
      return detail::run_agreed(comm, path, [&] { return read_dcsr_block<T>(path, rows, cols, check_entries); });
    case FileFormat::npz:
      // Each rank uncompresses the matrix's members on its own and keeps its block: a compressed member cannot be
      // entered in the middle, and reading the file on every rank costs no exchange.
      return detail::run_agreed(comm, path, [&] { return read_npz_block<T>(path, rows, cols, check_entries); });
  }
  throw CollectiveError(path + ": unknown input format", ErrorKind::usage);
}

ReadFootprint resident_read_footprint(const std::string& path, std::int64_t stored, std::size_t scalar_bytes,
                                      int processes) {
  switch (format_of(path)) {
    case FileFormat::npy:
    case FileFormat::dcsr:
      return {1.0, 0};  // read straight into the block
    case FileFormat::matrix_market: {
      // One process: its records, then the CSR built from them. Several: a rank's records by destination and
      // their packed copy for the exchange, then the records received beside the CSR (about a block's worth each).
      const auto records = static_cast<double>(stored) * static_cast<double>(mtx_record_bytes(scalar_bytes));
      return {1.0, static_cast<std::int64_t>(records * (processes == 1 ? 1 : 2)) +
                       static_cast<std::int64_t>(kMtxChunkBytes)};
    }
    case FileFormat::npz:
      return npz_read_footprint(path, stored, scalar_bytes);
    case FileFormat::hdf5:
      break;
  }
  return {2.0, 0};  // a slab beside the block
}

void check_row_pointers_fit(const std::string& path, index_t rows) {
  const double bytes = (static_cast<double>(rows) + 1) * static_cast<double>(sizeof(index_t));
  const double memory = util::physical_memory_bytes();
  // Half: the row pointers are not all a read holds (entries, W), and the kernel's OOM killer, not a failed
  // allocation, answers an over-committed one.
  if (memory > 0 && bytes > memory / 2) {
    char need[32], have[32];
    std::snprintf(need, sizeof need, "%.1f GiB", bytes / (1 << 30));
    std::snprintf(have, sizeof have, "%.1f GiB", memory / (1 << 30));
    throw Error(path + ": out of memory while reading: its " + std::to_string(rows) + " rows need " + need +
                " of row pointers, more than half of this machine's " + have);
  }
}

template LocalBlock<float> read_block<float>(const std::string&, dist::Range, dist::Range, dist::Communicator&, bool);
template LocalBlock<double> read_block<double>(const std::string&, dist::Range, dist::Range, dist::Communicator&, bool);

}  // namespace dnmf::io
