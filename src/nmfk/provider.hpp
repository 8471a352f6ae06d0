// NMFk's distributed entry: a matrix delivered block by block to the processes of a communicator (files
// read per rank, or slices of a matrix in memory). The public nmfk(Source, ...) is built on it.
#pragma once

#include <functional>

#include "dist/communicator.hpp"
#include "dnmf/nmfk.hpp"
#include "io/block_read.hpp"

namespace dnmf {

/// A rank's block of A, owning its storage (dense column-major or CSR with block-local indices).
template <class T>
using MatrixBlock = io::LocalBlock<T>;

/// Rows [row_first, row_last) x columns [col_first, col_last) of A (global indices), requested collectively by
/// every rank of `group`.
struct BlockRequest {
  index_t row_first = 0, row_last = 0;
  index_t col_first = 0, col_last = 0;
  dist::Communicator* group = nullptr;
};

/// Supplies blocks of A: the CLI reads them from the file, tests slice a matrix in memory.
template <class T>
using BlockProvider = std::function<MatrixBlock<T>(const BlockRequest&)>;

/// The block of an in-memory matrix (a copy): the provider for matrices already in memory.
template <class T>
MatrixBlock<T> slice_block(const MatrixRef<T>& a, const BlockRequest& r) {
  return io::slice_block<T>(a, {r.row_first, r.row_last}, {r.col_first, r.col_last});
}

/// Runs NMFk on the m x n matrix that `provider` delivers. Collective over `world`: every rank calls it; the
/// ranks are split into options.groups groups that run the (k, perturbation) jobs, largest k first, each job
/// on its group's grid. Finished jobs are checkpointed under options.checkpoint_dir and reused by a rerun with
/// the same data and options. Throws dnmf::Error for bad options, for checkpoints made with other data or
/// options (unless options.restart), and for bad data (negative entries, an all-zero matrix).
template <class T>
NmfkResult<T> nmfk(index_t m, index_t n, const BlockProvider<T>& provider, const NmfkOptions& options,
                   dist::Communicator& world);

}  // namespace dnmf
