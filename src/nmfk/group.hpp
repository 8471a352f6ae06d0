// One process group of an NMFk run: its communicator, its grid and this rank's block of the original A.
#pragma once

#include <memory>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/provider.hpp"

namespace dnmf::rank_search {

/// What every rank knows about its group.
template <class T>
struct GroupContext {
  int index = 0;                             ///< the group's number
  int count = 1;                             ///< number of groups
  std::unique_ptr<dist::Communicator> comm;  ///< the group's ranks
  std::unique_ptr<dist::Grid> grid;          ///< over comm
  dist::Layout layout;                       ///< this rank's ranges
  MatrixBlock<T> block;                      ///< this rank's block of A (unperturbed)
  [[nodiscard]] bool root() const { return comm->rank() == 0; }
};

}  // namespace dnmf::rank_search
