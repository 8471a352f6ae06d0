// The grid a factorisation ran on, kept in its Factorization for gather() and write_factors_h5().
#pragma once

#include "dist/grid.hpp"
#include "dnmf/context.hpp"

namespace dnmf::detail {

/// The grid factor() ran on and this process's ranges, with the context that keeps its communicator alive.
template <class T>
struct Distribution {
  Context context;
  dist::GridShape shape;
  dist::Layout layout;
  bool transposed = false;  ///< the run factored Aᵀ: layout and blocks are those of Aᵀ's run
};

}  // namespace dnmf::detail
