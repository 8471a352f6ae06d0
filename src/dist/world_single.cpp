// world() of a build without MPI: always one process.
#include "dist/communicator.hpp"

namespace dnmf::dist {

Communicator& world() {
  static SingleCommunicator single;
  return single;
}

bool mpi_built() { return false; }

}  // namespace dnmf::dist
