// The NCCL communicator on one GPU (one rank; two NCCL ranks cannot share a GPU, so the multi-rank test is
// test_nccl_mpi.cpp under mpirun on a machine with as many GPUs): bootstrapped over the single-process
// communicator, every collective on device buffers queued on the cuda backend's stream, split, traffic
// counters, the device memory kind. Skips with the reason without a GPU, without NCCL in the build, or
// when libnccl.so.2 cannot be loaded.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#if DNMF_WITH_CUDA
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_query.hpp"
#include "cuda/device_matrix.hpp"
#endif
#if DNMF_WITH_NCCL
#include "backend/cuda/nccl_communicator.hpp"
#endif

namespace dnmf {
namespace {

std::string why_no_nccl() {
#if DNMF_WITH_CUDA && DNMF_WITH_NCCL
  std::string why;
  if (!backend::cuda::device_present(&why)) return "no CUDA device: " + why;
  if (!dist::NcclCommunicator::available(&why)) return "NCCL cannot be loaded: " + why;
  return "";
#elif DNMF_WITH_CUDA
  return "this build has no NCCL communicator (NCCL or MPI not found)";
#else
  return "this build has no CUDA backend";
#endif
}

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = why_no_nccl();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

#if DNMF_WITH_CUDA && DNMF_WITH_NCCL

using Matrix = test::BackendMatrix<double>;

DenseMatrix<double> column(std::vector<double> v) {
  DenseMatrix<double> m(static_cast<index_t>(v.size()), 1);
  std::memcpy(m.data(), v.data(), v.size() * sizeof(double));
  return m;
}

std::vector<double> values(const Matrix& m) {
  const DenseMatrix<double> host = m.download();
  return {host.storage().begin(), host.storage().end()};
}

TEST_F(Nccl, OneRankCollectivesOnDeviceBuffers) {
  backend::CudaKernels<double> gpu;
  dist::SingleCommunicator self;
  dist::NcclCommunicator nccl(self, gpu.stream());
  EXPECT_EQ(nccl.rank(), 0);
  EXPECT_EQ(nccl.size(), 1);
  EXPECT_EQ(nccl.name(), "nccl");
  EXPECT_EQ(nccl.memory(), dist::Memory::device);
  EXPECT_EQ(nccl.stream(), gpu.stream());
  EXPECT_EQ(dist::NcclCommunicator::version().rfind("2.", 0), 0u);

  const std::vector<double> v{1, 2, 3, 4, 5};
  Matrix x(gpu, column(v)), y(gpu, column({0, 0, 0, 0, 0}));
  nccl.allreduce_sum(x.data(), 5);  // queued on the backend's stream; download() waits for it
  EXPECT_EQ(values(x), v);
  nccl.allreduce_max(x.data(), 5, dist::Scalar::f64);
  EXPECT_EQ(values(x), v);
  nccl.reduce_scatter_sum(x.data(), y.data(), {5}, dist::Scalar::f64);
  EXPECT_EQ(values(y), v);
  Matrix z(gpu, column({0, 0, 0, 0, 0}));
  nccl.allgather(x.data(), z.data(), {5}, dist::Scalar::f64);
  EXPECT_EQ(values(z), v);
  Matrix g(gpu, column({0, 0, 0, 0, 0}));
  nccl.gather(x.data(), g.data(), {5}, dist::Scalar::f64, 0);
  EXPECT_EQ(values(g), v);
  nccl.broadcast(x.data(), 5, dist::Scalar::f64, 0);
  EXPECT_EQ(values(x), v);
  Matrix t(gpu, column({0, 0, 0, 0, 0}));
  nccl.alltoallv(x.data(), {5}, t.data(), {5}, dist::Scalar::f64);
  EXPECT_EQ(values(t), v);
  // 64-bit integers travel as themselves (the buffer is only bytes to NCCL).
  const std::vector<std::int64_t> big{std::int64_t{1} << 53, -7};
  DenseMatrix<double> bits(2, 1);
  std::memcpy(bits.data(), big.data(), sizeof(big[0]) * 2);
  Matrix b(gpu, bits);
  nccl.allreduce_sum(reinterpret_cast<std::int64_t*>(b.data()), 2);
  std::vector<std::int64_t> back(2);
  std::memcpy(back.data(), b.download().data(), sizeof(back[0]) * 2);
  EXPECT_EQ(back, big);

  EXPECT_EQ(nccl.traffic().collectives, 9);
  EXPECT_EQ(nccl.traffic().bytes_sent, 0.0);  // one rank sends nothing
  nccl.barrier();

  const auto child = nccl.split(0, 0);
  EXPECT_EQ(child->size(), 1);
  EXPECT_EQ(child->memory(), dist::Memory::device);
  child->allreduce_sum(x.data(), 5);
  EXPECT_EQ(values(x), v);
  EXPECT_THROW((void)nccl.split(-1, 0), Error);
}

#endif

#if DNMF_WITH_CUDA && DNMF_WITH_NCCL

// Loading the library needs no GPU: where libnccl.so.2 is found, its version is reported, and without a GPU
// joining a communicator fails with a dnmf::Error naming NCCL instead of crashing.
TEST(NcclLibrary, LoadsAtRunTimeAndFailsCleanlyWithoutAGpu) {
  std::string why;
  if (!dist::NcclCommunicator::available(&why)) GTEST_SKIP() << "NCCL cannot be loaded: " << why;
  EXPECT_EQ(dist::NcclCommunicator::version().rfind("2.", 0), 0u) << dist::NcclCommunicator::version();
  if (backend::cuda::device_present()) GTEST_SKIP() << "a GPU is present: the failure path is not reachable";
  dist::SingleCommunicator self;
  try {
    dist::NcclCommunicator nccl(self, nullptr);
    FAIL() << "an NCCL communicator came up without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nccl"), std::string::npos) << e.what();
  }
}

#else

TEST_F(Nccl, NotBuilt) {}

#endif

}  // namespace
}  // namespace dnmf
