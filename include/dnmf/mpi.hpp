// dnmf: a context on an MPI communicator that the host program created (e.g. mpi4py's under mpirun).
// Only in builds with MPI (DNMF_HAVE_MPI); includes <mpi.h>.
#pragma once

#include <mpi.h>

#include "dnmf/context.hpp"

namespace dnmf {

/// A context over the processes of `comm`. MPI must be initialised (by the host program, which also finalises
/// it). The communicator is duplicated, so dnmf's collectives never mix with the host program's messages;
/// throws dnmf::Error when MPI is not initialised or `comm` is MPI_COMM_NULL.
Context mpi_context(MPI_Comm comm);

}  // namespace dnmf
