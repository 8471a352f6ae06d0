// world() of a build with MPI. MPI is initialised only for a process a launcher started (mpirun, srun, a PMI
// or PMIx launcher) or when the host program already did it, so `dnmf` run by hand never touches the MPI
// runtime and stays an ordinary 1x1 grid.
#include <mpi.h>

#include <cstdlib>
#include <memory>

#include "dist/mpi_communicator.hpp"
#include "dnmf/error.hpp"

namespace dnmf::dist {
namespace {

// Environment variables a launcher sets in the processes it starts (Open MPI, PMI-1/2, PMIx).
bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

// Registered right after MPI_Init_thread, hence run after world's communicator is destroyed (atexit runs in
// reverse order of registration and static construction); a host program that finalised first is left alone.
void finalise_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::unique_ptr<Communicator> make_world() {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "Initialized");
  if (!initialized) {
    if (!started_by_launcher()) return std::make_unique<SingleCommunicator>();
    // FUNNELED: only the main thread calls MPI (OpenMP teams and the streaming producer thread never do).
    int provided = MPI_THREAD_SINGLE;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "Init_thread");
    std::atexit(finalise_at_exit);
    if (provided < MPI_THREAD_FUNNELED)
      throw Error("MPI: the library provides thread level " + std::to_string(provided) +
                  ", dnmf needs MPI_THREAD_FUNNELED (OpenMP threads run beside the MPI calls)");
  }
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
}

}  // namespace

Communicator& world() {
  static const std::unique_ptr<Communicator> instance = make_world();
  return *instance;
}

bool mpi_built() { return true; }

}  // namespace dnmf::dist
