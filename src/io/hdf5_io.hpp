// dnmf internal: HDF5 matrices (DESIGN §7). Input: a dense 2-D dataset, read by hyperslab, or a CSR or CSC
// group (datasets data, indices, indptr and a "shape" attribute, as AnnData and scipy-based writers store it),
// read by row ranges (CSC: column ranges, each block transposed into CSR). Output: the same layouts (serial, for tests
// and `dnmf gen`) and the factors W and H written by all ranks into one file. This header needs no HDF5 headers;
// without the HDF5 library every function throws a dnmf::Error saying so.
#pragma once

#include <string>

#include "dist/grid.hpp"
#include "dnmf/matrix.hpp"
#include "io/block_read.hpp"

namespace dnmf::io {

/// True when this build reads and writes HDF5.
[[nodiscard]] bool hdf5_built();

/// Shape of the matrix that `path` names: "A.h5:/group/name", or "A.h5" for the default object ("/X" when
/// present, as in AnnData files; else the only 2-D dataset or CSR/CSC group at the root; an .h5ad file means
/// /X only). Serial: one rank calls. Errors (missing object, several candidates, a bad shape attribute, ...)
/// name the file and object; "no matrix" errors list what the file holds.
MatrixShape hdf5_shape(const std::string& path);

/// Rows `rows` x columns `cols` (global, half-open) of the matrix `path` names. Collective over `comm` (with
/// comm.size() > 1 the file is opened through MPI-IO on comm's MPI communicator); every rank reads only its
/// own rows. Any rank's failure (an index out of range, a decreasing indptr, a negative/NaN/infinite entry
/// named by its global row and column, I/O) is a dnmf::Error on that rank and a PeerError on the others; one
/// every rank shares (missing object, bad shape attribute, ...) is a CollectiveError everywhere.
/// `check_entries` false returns the values as stored (a masked run checks only the observed ones).
template <class T>
LocalBlock<T> read_hdf5_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                              bool check_entries = true);

/// Writes W (m x k, dataset "W") and H (k x n, dataset "H") of a factorisation on `grid` into one file, every
/// rank writing its pieces (Wt: k x layout.w_rows.size(), the transposed rows of W it owns; H: k x
/// layout.h_cols.size()) by hyperslab, collectively. Atomic: the file is written under a temporary name and
/// renamed by rank 0 once every rank has closed it. Collective over grid.world(); failures are reported as
/// read_hdf5_block reports them.
template <class T>
void write_factors_h5(const std::string& path, const dist::Grid& grid, const dist::Layout& layout,
                      DenseView<const T> wt, DenseView<const T> h);

}  // namespace dnmf::io
