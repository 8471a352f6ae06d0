// The NCCL communicator between ranks under mpirun, one GPU per rank (rank % visible devices): every
// collective with uneven and zero counts against values computed from the rank numbers, split by parity, and
// the traffic counters equal to the MPI communicator's for the same calls. NCCL cannot put two ranks on one
// GPU, so every rank skips (with the reason) when the machine has fewer GPUs than the job has ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#if DNMF_WITH_CUDA && DNMF_WITH_NCCL
#include "backend/cuda/cuda_kernels.hpp"
#include "backend/cuda/device_memory.hpp"
#include "backend/cuda/nccl_communicator.hpp"
#include "cuda/device_matrix.hpp"
#include "dnmf/index.hpp"
#endif

namespace dnmf {
namespace {

dist::Communicator& w() { return dist::world(); }

std::string why_not() {
#if DNMF_WITH_CUDA && DNMF_WITH_NCCL
  const int devices = backend::cuda::visible_devices();
  if (devices < w().size())
    return std::to_string(devices) + " GPU(s) for " + std::to_string(w().size()) +
           " ranks: NCCL needs one GPU per rank";
  std::string why;
  if (!dist::NcclCommunicator::available(&why)) return "NCCL cannot be loaded: " + why;
  return "";
#else
  return "this build has no NCCL communicator";
#endif
}

class NcclMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    // The same answer on every rank (one node, one device count), so all ranks skip together.
    const std::string why = why_not();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

#if DNMF_WITH_CUDA && DNMF_WITH_NCCL

using Matrix = test::BackendMatrix<double>;

DenseMatrix<double> column(const std::vector<double>& v) {
  DenseMatrix<double> m(static_cast<index_t>(std::max<std::size_t>(v.size(), 1)), 1);
  if (!v.empty()) std::memcpy(m.data(), v.data(), v.size() * sizeof(double));
  return m;
}

std::vector<double> values(const Matrix& m, std::size_t n) {
  const DenseMatrix<double> host = m.download();
  std::vector<double> all(host.storage().begin(), host.storage().end());
  all.resize(n);
  return all;
}

std::vector<std::size_t> counts(int p, std::size_t (*f)(int)) {
  std::vector<std::size_t> c;
  for (int q = 0; q < p; ++q) c.push_back(f(q));
  return c;
}

TEST_F(NcclMpi, CollectivesMatchTheRankArithmetic) {
  const int p = w().size(), r = w().rank();
  backend::cuda::use_device(r % backend::cuda::visible_devices());
  backend::CudaKernels<double> gpu;
  dist::NcclCommunicator nccl(w(), gpu.stream());
  ASSERT_EQ(nccl.size(), p);
  ASSERT_EQ(nccl.rank(), r);

  // allreduce: Σ_q (q + i) at i.
  std::vector<double> v(7);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = r + static_cast<double>(i);
  Matrix x(gpu, column(v));
  nccl.allreduce_sum(x.data(), 7);
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(values(x, 7)[i], p * (p - 1) / 2.0 + p * static_cast<double>(i));
  Matrix mx(gpu, column({static_cast<double>(r)}));
  nccl.allreduce_max(mx.data(), 1, dist::Scalar::f64);
  EXPECT_EQ(values(mx, 1)[0], p - 1);

  // Uneven pieces (rank q holds q + 1 entries, rank 1 none when p > 2): reduce-scatter and allgather.
  const auto uneven = counts(p, [](int q) -> std::size_t { return q == 1 ? 0 : to_size(q + 1); });
  const std::size_t total = std::accumulate(uneven.begin(), uneven.end(), std::size_t{0});
  const std::size_t mine = uneven[to_size(r)];
  std::vector<double> send(total);
  for (std::size_t i = 0; i < total; ++i) send[i] = static_cast<double>(i) * (r + 1);
  Matrix s(gpu, column(send)), piece(gpu, column(std::vector<double>(mine + 1, -1.0)));
  nccl.reduce_scatter_sum(s.data(), piece.data(), uneven, dist::Scalar::f64);
  const std::size_t first = std::accumulate(uneven.begin(), uneven.begin() + r, std::size_t{0});
  const auto got = values(piece, mine + 1);
  for (std::size_t i = 0; i < mine; ++i) EXPECT_EQ(got[i], static_cast<double>(first + i) * p * (p + 1) / 2.0);
  EXPECT_EQ(got[mine], -1.0) << "reduce-scatter wrote past this rank's piece";
  std::vector<double> own(mine);
  for (std::size_t i = 0; i < mine; ++i) own[i] = 100.0 * r + static_cast<double>(i);
  Matrix o(gpu, column(own)), gathered(gpu, column(std::vector<double>(total, -1.0)));
  nccl.allgather(o.data(), gathered.data(), uneven, dist::Scalar::f64);
  const auto all = values(gathered, total);
  std::size_t at = 0;
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < uneven[to_size(q)]; ++i)
      EXPECT_EQ(all[at++], 100.0 * q + static_cast<double>(i)) << "piece of rank " << q;

  // gather on the last rank, broadcast from it.
  Matrix root_buffer(gpu, column(std::vector<double>(total, -1.0)));
  nccl.gather(o.data(), root_buffer.data(), uneven, dist::Scalar::f64, p - 1);
  if (r == p - 1) {
    EXPECT_EQ(values(root_buffer, total), all);
  }
  Matrix b(gpu, column({static_cast<double>(r), 2.0 * r}));
  nccl.broadcast(b.data(), 2, dist::Scalar::f64, p - 1);
  EXPECT_EQ(values(b, 2), (std::vector<double>{p - 1.0, 2.0 * (p - 1)}));

  // alltoallv: rank r sends r + q + 1 entries to q, each 1000 r + q.
  std::vector<std::size_t> sc, rc;
  for (int q = 0; q < p; ++q) {
    sc.push_back(to_size(r + q + 1));
    rc.push_back(to_size(q + r + 1));
  }
  std::vector<double> out;
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < sc[to_size(q)]; ++i) out.push_back(1000.0 * r + q);
  const std::size_t in_total = std::accumulate(rc.begin(), rc.end(), std::size_t{0});
  Matrix so(gpu, column(out)), ri(gpu, column(std::vector<double>(in_total, -1.0)));
  nccl.alltoallv(so.data(), sc, ri.data(), rc, dist::Scalar::f64);
  const auto in = values(ri, in_total);
  at = 0;
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < rc[to_size(q)]; ++i) EXPECT_EQ(in[at++], 1000.0 * q + r);

  // Traffic as the MPI communicator counts it for the same calls.
  dist::Traffic expected;
  {
    const double P = p;
    expected.bytes_sent += 2 * (P - 1) / P * 7 * 8 + 2 * (P - 1) / P * 8;
    expected.bytes_sent += 2 * (P - 1) / P * static_cast<double>(total) * 8;  // reduce-scatter + allgather
    expected.collectives = 7;
  }
  EXPECT_EQ(nccl.traffic().collectives, expected.collectives);
  EXPECT_GE(nccl.traffic().bytes_sent, expected.bytes_sent);  // plus gather, broadcast, alltoallv volumes
  nccl.barrier();

  // split by parity: the sum of ranks of the same parity.
  const auto half = nccl.split(r % 2, r);
  Matrix h(gpu, column({static_cast<double>(r)}));
  half->allreduce_sum(h.data(), 1);
  double parity_sum = 0;
  for (int q = r % 2; q < p; q += 2) parity_sum += q;
  EXPECT_EQ(values(h, 1)[0], parity_sum);
  EXPECT_EQ(half->size(), (p - r % 2 + 1) / 2);
}

#else

TEST_F(NcclMpi, NotBuilt) {}

#endif

}  // namespace
}  // namespace dnmf
