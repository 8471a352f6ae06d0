// mpi_handle(): see dist/mpi_handle.hpp. Lives with the I/O code, its only user.
#include "dist/mpi_handle.hpp"

#include "dist/mpi_communicator.hpp"
#include "dnmf/error.hpp"

namespace dnmf::dist {

MPI_Comm mpi_handle(const Communicator& comm) {
  if (const auto* mpi = dynamic_cast<const MpiCommunicator*>(&comm)) return mpi->comm();
  if (comm.size() == 1) return MPI_COMM_SELF;
  throw Error("communicator '" + comm.name() + "' of " + std::to_string(comm.size()) +
              " processes has no MPI handle (parallel HDF5 needs one)");
}

}  // namespace dnmf::dist
