// Without a launcher, world() of an MPI build is a single process that never starts the MPI runtime, so
// `dnmf` run by hand needs no mpirun (and no MPI daemon, network or environment).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"

namespace dnmf::dist {
namespace {

TEST(WorldWithoutLauncher, IsASingleProcessAndLeavesMpiAlone) {
  ASSERT_EQ(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr) << "this test must run without mpirun";
  EXPECT_TRUE(mpi_built());
  Communicator& w = world();
  EXPECT_EQ(w.name(), "single");
  EXPECT_EQ(w.size(), 1);
  EXPECT_EQ(w.rank(), 0);
  int initialized = 1;
  MPI_Initialized(&initialized);
  EXPECT_FALSE(initialized) << "world() initialised MPI without a launcher";
  const Grid grid(w, {1, 1});
  EXPECT_EQ(grid.row_comm().size(), 1);
  EXPECT_DOUBLE_EQ(w.sum(2.5), 2.5);
}

}  // namespace
}  // namespace dnmf::dist
