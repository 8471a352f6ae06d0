// Reading one rank's block of a matrix file (DESIGN §4: each rank reads only its own block).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// Shape of `path` (any format of format_of); read on rank 0 of `comm` and broadcast, so every rank gets the
/// same answer or the same dnmf::Error (naming the file) together.
MatrixShape read_shape(const std::string& path, dist::Communicator& comm);

/// One rank's block of a matrix file, owning its storage: dense for .npy, .npz arrays and dense HDF5 datasets,
/// CSR for .mtx, .dcsr, scipy .npz archives and HDF5 CSR and CSC groups.
template <class T>
struct LocalBlock {
  bool sparse = false;
  DenseMatrix<T> dense;
  CsrMatrix<T> csr;
  [[nodiscard]] MatrixRef<T> ref() const { return sparse ? MatrixRef<T>{csr.view()} : MatrixRef<T>{dense.view()}; }
};

/// Reads rows [rows.first, rows.last) x columns [cols.first, cols.last) of `path` (global indices) in
/// precision T. Collective over `comm` (every rank of it calls, each with its own ranges): Matrix Market is
/// parsed by byte ranges and entries are sent to their owners, so no rank holds the whole matrix.
/// A negative, NaN or infinite entry is a dnmf::Error naming the file and the entry's global row and column.
/// `check_entries` false: entries are returned as stored, in every format (a masked run checks only the observed
/// ones, and NaN may mean missing).
template <class T>
LocalBlock<T> read_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                         bool check_entries = true);

/// What read_block holds at its peak while it reads a block resident, for the memory plan: `copies` of the block
/// at once (2 where a CSC is transposed on the way, or an HDF5 slab lies beside it) and `beside` bytes besides
/// them (a .npz's uncompressed members, Matrix Market records in transit and the parse chunk).
struct ReadFootprint {
  double copies = 1;
  std::int64_t beside = 0;
};

/// read_block's footprint for a block of about `stored` entries of `path` in a T of `scalar_bytes` on one of
/// `processes` processes. Opens a .npz's directory (its members' sizes); the other formats need no read.
ReadFootprint resident_read_footprint(const std::string& path, std::int64_t stored, std::size_t scalar_bytes,
                                      int processes);

/// Throws dnmf::Error "<path>: out of memory while reading ..." when the row pointers of a CSR of `rows` rows (8
/// bytes each) would take more than half of the machine's memory: a 10 KB file declaring 2**31 rows was read until the
/// kernel killed the process (23.9 GB, no message).
void check_row_pointers_fit(const std::string& path, index_t rows);

/// Rows x cols (global indices) of a matrix in memory as a block of precision T: a copy, converted when the
/// matrix holds U, with block-local column indices for CSR.
template <class T, class U>
LocalBlock<T> slice_block(const MatrixRef<U>& a, dist::Range rows, dist::Range cols);

}  // namespace dnmf::io
