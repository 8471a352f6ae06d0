// dnmf internal: the MPI communicator behind a dist::Communicator, for libraries that need one themselves
// (parallel HDF5 opens files through MPI-IO). Only in builds with MPI.
#pragma once

#include <mpi.h>

#include "dist/communicator.hpp"

namespace dnmf::dist {

/// The MPI_Comm of `comm`: its own for an MPI communicator, MPI_COMM_SELF for a one-process communicator that
/// is not MPI's (MPI must then be initialised before the handle is used). Throws dnmf::Error for a
/// multi-process communicator without an MPI handle.
[[nodiscard]] MPI_Comm mpi_handle(const Communicator& comm);

}  // namespace dnmf::dist
