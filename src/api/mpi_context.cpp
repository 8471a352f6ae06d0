// dnmf::mpi_context: a context on a host program's MPI communicator (builds with MPI only).

#include "api/context_state.hpp"
#include "dist/mpi_communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/mpi.hpp"

namespace dnmf {

Context mpi_context(MPI_Comm comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!initialized || finalized) throw Error("mpi_context: MPI is not initialised (or already finalised)");
  if (comm == MPI_COMM_NULL) throw Error("mpi_context: the communicator is MPI_COMM_NULL");
  MPI_Comm own = MPI_COMM_NULL;
  // A duplicate: our collectives must never match a message of the host program's on the same communicator.
  if (MPI_Comm_dup(comm, &own) != MPI_SUCCESS) throw Error("mpi_context: MPI_Comm_dup failed");
  auto state = std::make_shared<detail::ContextState>();
  state->owned = std::make_unique<dist::MpiCommunicator>(own, true);
  state->comm = state->owned.get();
  return Context(std::move(state));
}

}  // namespace dnmf
