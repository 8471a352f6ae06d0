// The public API under mpirun: a Context on the host program's own MPI communicator (dnmf/mpi.hpp) runs the
// same factorisation as one process, for in-memory sources sliced per process (dense, row-major, CSR).
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "dnmf/dnmf.hpp"
#include "dnmf/index.hpp"
#include "dnmf/mpi.hpp"
#include "support/random_matrices.hpp"

namespace dnmf {
namespace {

DenseMatrix<double> planted() {
  PlantedOptions p;
  p.rows = 60;
  p.cols = 40;
  p.rank = 4;
  p.noise = 0.01;
  p.seed = 5;
  return make_planted<double>(p).dense;
}

FactorOptions options() {
  FactorOptions o;
  o.rank = 4;
  o.algorithm = Algorithm::mu;
  o.max_iterations = 30;
  o.tol = 0;
  return o;
}

TEST(MpiApi, HostCommunicatorContextEqualsOneProcess) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Context context = mpi_context(MPI_COMM_WORLD);
  ASSERT_EQ(context.size(), size);
  const DenseMatrix<double> a = planted();
  const CsrMatrix<double> s = test::to_csr(a);
  const Factorization<double> one = factor<double>(Source::dense<double>(a.view()), options());

  const Factorization<double> dense = factor<double>(Source::dense<double>(a.view()), options(), context);
  Factorization<double> sparse = factor<double>(Source::csr<double>(s.view()), options(), context, Gather::none);
  EXPECT_TRUE(sparse.result.W.storage().empty());
  gather(sparse, context);
  EXPECT_EQ(dense.communication.processes, size);
  if (context.rank() == 0) {
    EXPECT_LE(test::max_relative_difference(dense.result.W, one.result.W), 1e-8);
    EXPECT_LE(test::max_relative_difference(dense.result.H, one.result.H), 1e-8);
    EXPECT_LE(test::max_relative_difference(sparse.result.W, one.result.W), 1e-8);
    EXPECT_LE(test::max_relative_difference(sparse.result.H, one.result.H), 1e-8);
    EXPECT_EQ(dense.communication.bytes_per_iteration_per_rank.size(), to_size(size));
  }
}

TEST(MpiApi, RowMajorSourceOnAGridEqualsOneProcess) {
  const Context context = mpi_context(MPI_COMM_WORLD);
  const DenseMatrix<double> a = planted();
  std::vector<double> rm(to_size(a.rows() * a.cols()));
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t j = 0; j < a.cols(); ++j) rm[to_size(i * a.cols() + j)] = a(i, j);
  const Source source = Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols());
  const Factorization<double> one = factor<double>(source, options());
  const Factorization<double> grid = factor<double>(source, options(), context);
  if (context.rank() == 0) {
    EXPECT_LE(test::max_relative_difference(grid.result.W, one.result.W), 1e-8);
    EXPECT_LE(test::max_relative_difference(grid.result.H, one.result.H), 1e-8);
  }
}

}  // namespace
}  // namespace dnmf
