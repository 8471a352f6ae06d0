// The public API under mpirun: a Context on the host program's own MPI communicator (dnmf/mpi.hpp) runs the
// same factorisation as one process, for in-memory sources sliced per process (dense, row-major, CSR).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
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

// a's entries in row-major order (a C-order array's memory).
std::vector<double> row_major(const DenseMatrix<double>& a) {
  std::vector<double> rm(to_size(a.rows() * a.cols()));
  for (index_t i = 0; i < a.rows(); ++i)
    for (index_t j = 0; j < a.cols(); ++j) rm[to_size(i * a.cols() + j)] = a(i, j);
  return rm;
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
  const std::vector<double> rm = row_major(a);
  const Source source = Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols());
  const Factorization<double> one = factor<double>(source, options());
  const Factorization<double> grid = factor<double>(source, options(), context);
  if (context.rank() == 0) {
    EXPECT_LE(test::max_relative_difference(grid.result.W, one.result.W), 1e-8);
    EXPECT_LE(test::max_relative_difference(grid.result.H, one.result.H), 1e-8);
  }
}

// A given start is checked, and brought to A's scale, on every process alike: a process given a bad W made the
// others wait in the first collective (the job hung); processes given starts of different scales would have
// rescaled them differently. Both column-major (checked in the solver) and row-major sources (checked before
// the transposed run).
TEST(MpiApi, GivenStartsAreCheckedAndScaledAlikeOnEveryProcess) {
  const Context context = mpi_context(MPI_COMM_WORLD);
  const DenseMatrix<double> a = planted();
  const std::vector<double> rm = row_major(a);
  const Source sources[] = {Source::dense<double>(a.view()),
                            Source::dense_row_major<double>(rm.data(), a.rows(), a.cols(), a.cols())};
  FactorOptions o = options();
  o.init = InitMethod::given;
  const DenseMatrix<double> w0 = test::random_dense<double>(a.rows(), 4, 7);
  const DenseMatrix<double> h0 = test::random_dense<double>(4, a.cols(), 8);
  const bool last = context.rank() == context.size() - 1;
  for (const Source& source : sources) {
    // Far from A's scale on every process: the same fit as one process from the unscaled start.
    InitialFactors<double> tiny{w0, h0};
    for (double& v : tiny.W.storage()) v = std::ldexp(v, -500);
    for (double& v : tiny.H.storage()) v = std::ldexp(v, -500);
    InitialFactors<double> plain{w0, h0};
    const Factorization<double> one = factor<double>(source, o, Context(), Gather::to_root, &plain);
    const Factorization<double> grid = factor<double>(source, o, context, Gather::to_root, &tiny);
    EXPECT_NEAR(grid.result.initial_w_exponent, 500, 1);
    EXPECT_NEAR(grid.result.initial_h_exponent, 500, 1);
    if (context.rank() == 0) {
      EXPECT_NEAR(grid.result.rel_error, one.result.rel_error, 1e-10 * one.result.rel_error);
    }
    if (context.size() == 1) continue;
    // A bad entry on the last process only: an error on every process, none left waiting.
    InitialFactors<double> bad{w0, h0};
    if (last) bad.W(3, 1) = -1;
    try {
      (void)factor<double>(source, o, context, Gather::to_root, &bad);
      ADD_FAILURE() << "a bad start on one process was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data) << e.what();
      if (last) {
        EXPECT_NE(std::string(e.what()).find("entry at row 3, column 1"), std::string::npos) << e.what();
      }
    }
    // Starts of different scales (a different W on the last process): refused on every process.
    InitialFactors<double> skewed{w0, h0};
    if (last)
      for (double& v : skewed.W.storage()) v = std::ldexp(v, -60);
    try {
      (void)factor<double>(source, o, context, Gather::to_root, &skewed);
      ADD_FAILURE() << "different starts on the processes were taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("given different initial W or H"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dnmf
