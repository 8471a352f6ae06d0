// MpiCommunicator under mpirun: every collective against results computed by hand from the rank numbers
// (uneven and zero counts, in-place forms), split, the traffic counters, errors, and the grid's row and
// column communicators on a real world.
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dist/mpi_communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {
namespace {

Communicator& w() { return world(); }
int P() { return w().size(); }
int R() { return w().rank(); }

std::vector<std::size_t> counts_of(int p, std::size_t (*f)(int)) {
  std::vector<std::size_t> c;
  for (int q = 0; q < p; ++q) c.push_back(f(q));
  return c;
}

std::size_t offset_of(const std::vector<std::size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
}

// The message of the dnmf::Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MpiWorld, IsMpiUnderTheLauncher) {
  EXPECT_TRUE(mpi_built());
  EXPECT_EQ(w().name(), "mpi");
  int initialized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  MPI_Query_thread(&level);
  EXPECT_TRUE(initialized);
  EXPECT_GE(level, MPI_THREAD_FUNNELED);
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(P(), std::atoi(size));
  EXPECT_EQ(&world(), &w()) << "world() is one object";
}

TEST(MpiCollectives, AllreduceSumAndMaxOfEveryType) {
  const int p = P(), r = R();
  std::vector<double> d(5);
  for (int i = 0; i < 5; ++i) d[i] = r + 0.5 * i;
  w().allreduce_sum(d.data(), d.size());
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(d[i], p * (p - 1) / 2.0 + p * 0.5 * i);

  std::vector<float> f{static_cast<float>(r), 1.0f};
  w().allreduce_sum(f.data(), f.size());
  EXPECT_FLOAT_EQ(f[0], p * (p - 1) / 2.0f);
  EXPECT_FLOAT_EQ(f[1], static_cast<float>(p));

  // Beyond 32 bits: the i64 type must not be narrowed on the way.
  std::int64_t big = std::int64_t{1000000000000} * (r + 1);
  EXPECT_EQ(w().sum(big), std::int64_t{1000000000000} * p * (p + 1) / 2);

  unsigned char byte = static_cast<unsigned char>(r + 1);
  w().allreduce_max(&byte, 1, Scalar::u8);
  EXPECT_EQ(byte, p);
  EXPECT_DOUBLE_EQ(w().max(-1.0 * r), 0.0);
  EXPECT_DOUBLE_EQ(w().max(2.0 * r), 2.0 * (p - 1));

  // Nothing to reduce is still a (counted) collective and must not fail.
  w().reset_traffic();
  w().allreduce_sum(d.data(), 0);
  EXPECT_EQ(w().traffic().collectives, 1);
  EXPECT_EQ(w().traffic().bytes_sent, 0.0);
}

TEST(MpiCollectives, ReduceScatterUnevenAndZeroCounts) {
  const int p = P(), r = R();
  const auto counts = counts_of(p, [](int q) { return to_size(q % 3); });  // rank 0 gets nothing
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<double> send(std::max<std::size_t>(total, 1));
  for (std::size_t e = 0; e < total; ++e) send[e] = (r + 1) * static_cast<double>(e + 1);
  std::vector<double> recv(std::max<std::size_t>(counts[to_size(r)], 1), -1.0);
  w().reduce_scatter_sum(send.data(), recv.data(), counts, Scalar::f64);
  const std::size_t off = offset_of(counts, r);
  for (std::size_t t = 0; t < counts[to_size(r)]; ++t)
    EXPECT_DOUBLE_EQ(recv[t], static_cast<double>(off + t + 1) * p * (p + 1) / 2.0) << "element " << t;
  if (counts[to_size(r)] == 0) {
    EXPECT_EQ(recv[0], -1.0) << "a zero-count rank receives nothing";
  }

  std::vector<std::int64_t> isend(total + 1, r), irecv(counts[to_size(r)] + 1, -7);
  w().reduce_scatter_sum(isend.data(), irecv.data(), counts, Scalar::i64);
  for (std::size_t t = 0; t < counts[to_size(r)]; ++t) EXPECT_EQ(irecv[t], p * (p - 1) / 2);
}

TEST(MpiCollectives, AllgatherUnevenZeroAndInPlace) {
  const int p = P(), r = R();
  const auto counts = counts_of(p, [](int q) { return to_size((2 * q) % 5); });  // 0, 2, 4, 1, 3, 0
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t mine = counts[to_size(r)];
  std::vector<float> send(mine + 1);
  for (std::size_t t = 0; t < mine; ++t) send[t] = static_cast<float>(r * 100 + t);
  std::vector<float> expected;
  for (int q = 0; q < p; ++q)
    for (std::size_t t = 0; t < counts[to_size(q)]; ++t) expected.push_back(static_cast<float>(q * 100 + t));

  std::vector<float> recv(total + 1, -1.0f);
  w().allgather(send.data(), recv.data(), counts, Scalar::f32);
  EXPECT_EQ(std::vector<float>(recv.begin(), recv.begin() + static_cast<std::ptrdiff_t>(total)), expected);

  // In place: this rank's piece already sits at its offset of the receive buffer.
  std::vector<float> inplace(total + 1, -1.0f);
  const std::size_t off = offset_of(counts, r);
  for (std::size_t t = 0; t < mine; ++t) inplace[off + t] = send[t];
  w().allgather(inplace.data() + off, inplace.data(), counts, Scalar::f32);
  EXPECT_EQ(std::vector<float>(inplace.begin(), inplace.begin() + static_cast<std::ptrdiff_t>(total)), expected);
}

TEST(MpiCollectives, GatherToTheLastRank) {
  const int p = P(), r = R(), root = p - 1;
  const auto counts = counts_of(p, [](int q) { return to_size((q + 2) % 3); });  // 2, 0, 1, 2, 0, 1
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t mine = counts[to_size(r)];
  std::vector<std::int64_t> send(mine + 1);
  for (std::size_t t = 0; t < mine; ++t) send[t] = r * 10 + static_cast<std::int64_t>(t);
  std::vector<std::int64_t> recv(r == root ? total + 1 : 0, -1);
  w().gather(send.data(), r == root ? recv.data() : nullptr, counts, Scalar::i64, root);
  if (r == root) {
    std::size_t e = 0;
    for (int q = 0; q < p; ++q)
      for (std::size_t t = 0; t < counts[to_size(q)]; ++t, ++e)
        EXPECT_EQ(recv[e], q * 10 + static_cast<std::int64_t>(t)) << "rank " << q << " element " << t;
    EXPECT_EQ(recv[total], -1) << "nothing written past the pieces";
  }
  // Root in place.
  std::vector<std::int64_t> inplace(r == root ? total + 1 : 0, -1);
  const std::int64_t* source = send.data();
  if (r == root) {
    const std::size_t off = offset_of(counts, r);
    for (std::size_t t = 0; t < mine; ++t) inplace[off + t] = send[t];
    source = inplace.data() + off;
  }
  w().gather(source, r == root ? inplace.data() : nullptr, counts, Scalar::i64, root);
  if (r == root) {
    EXPECT_EQ(inplace, recv);
  }
}

TEST(MpiCollectives, BroadcastFromEveryRoot) {
  const int p = P(), r = R();
  for (int root = 0; root < p; ++root) {
    std::vector<double> data(7, -1.0);
    if (r == root)
      for (int i = 0; i < 7; ++i) data[i] = root * 7 + i + 0.25;
    w().broadcast(data.data(), data.size(), Scalar::f64, root);
    for (int i = 0; i < 7; ++i) EXPECT_DOUBLE_EQ(data[i], root * 7 + i + 0.25) << "root " << root;
    unsigned char flag = r == root ? 200 : 0;
    w().broadcast(&flag, 1, Scalar::u8, root);
    EXPECT_EQ(flag, 200);
  }
}

TEST(MpiCollectives, AlltoallvPersonalised) {
  const int p = P(), r = R();
  // r sends (r + q) % 3 elements to q, so q expects (q + r) % 3 from r: the counts agree on both ends.
  std::vector<std::size_t> send_counts, recv_counts;
  std::vector<double> send;
  for (int q = 0; q < p; ++q) {
    send_counts.push_back(to_size((r + q) % 3));
    recv_counts.push_back(to_size((q + r) % 3));
    for (int t = 0; t < (r + q) % 3; ++t) send.push_back(r * 1000 + q * 10 + t);
  }
  const std::size_t total = std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  send.push_back(0);
  std::vector<double> recv(total + 1, -1.0);
  w().reset_traffic();
  w().alltoallv(send.data(), send_counts, recv.data(), recv_counts, Scalar::f64);
  std::size_t e = 0;
  for (int q = 0; q < p; ++q)
    for (int t = 0; t < (q + r) % 3; ++t, ++e) EXPECT_DOUBLE_EQ(recv[e], q * 1000 + r * 10 + t);
  const std::size_t sent = send.size() - 1 - send_counts[to_size(r)];
  EXPECT_DOUBLE_EQ(w().traffic().bytes_sent, 8.0 * static_cast<double>(sent)) << "what a rank keeps is not sent";
}

TEST(MpiCollectives, SplitByParityInReverseOrder) {
  const int p = P(), r = R();
  // Key p - r: the new ranks run in reverse order of the world's.
  auto sub = w().split(r % 2, p - r);
  ASSERT_NE(sub, nullptr);
  int same = 0, above = 0;
  for (int q = 0; q < p; ++q)
    if (q % 2 == r % 2) {
      ++same;
      if (q > r) ++above;
    }
  EXPECT_EQ(sub->size(), same);
  EXPECT_EQ(sub->rank(), above);
  EXPECT_EQ(sub->name(), "mpi");
  w().reset_traffic();
  sub->reset_traffic();
  int expected = 0;
  for (int q = r % 2; q < p; q += 2) expected += q;
  EXPECT_EQ(sub->sum<std::int64_t>(r), expected);
  EXPECT_EQ(w().traffic().collectives, 0) << "a sub-communicator counts its own traffic";
  EXPECT_EQ(sub->traffic().collectives, 1);
  sub->barrier();
  // Splitting a split works too (grids split the world, NMFk splits it into groups first).
  auto single = sub->split(sub->rank(), 0);
  EXPECT_EQ(single->size(), 1);
  EXPECT_EQ(single->rank(), 0);
  EXPECT_NE(error_of([&] { (void)w().split(-1, 0); }).find("negative color"), std::string::npos);
}

TEST(MpiCollectives, TrafficCountersFollowTheBandwidthOptimalVolumes) {
  const int p = P(), r = R();
  const double f = static_cast<double>(p - 1) / p;
  Communicator& c = w();
  c.reset_traffic();
  std::vector<double> x(10, 1.0);
  c.allreduce_sum(x.data(), x.size());
  EXPECT_DOUBLE_EQ(c.traffic().bytes_sent, 2 * f * 80);

  c.reset_traffic();
  const auto counts = counts_of(p, [](int q) { return to_size(q + 1); });
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<double> big(total), piece(counts[to_size(r)]);
  c.reduce_scatter_sum(big.data(), piece.data(), counts, Scalar::f64);
  EXPECT_DOUBLE_EQ(c.traffic().bytes_sent, f * 8.0 * static_cast<double>(total));
  c.allgather(piece.data(), big.data(), counts, Scalar::f64);
  EXPECT_DOUBLE_EQ(c.traffic().bytes_sent, 2 * f * 8.0 * static_cast<double>(total));
  EXPECT_EQ(c.traffic().collectives, 2);

  c.reset_traffic();
  c.broadcast(x.data(), 10, Scalar::f64, 0);
  EXPECT_DOUBLE_EQ(c.traffic().bytes_sent, r == 0 && p > 1 ? 80.0 : 0.0);

  c.reset_traffic();
  std::vector<double> all(r == 0 ? total : 0);
  c.gather(piece.data(), r == 0 ? all.data() : nullptr, counts, Scalar::f64, 0);
  EXPECT_DOUBLE_EQ(c.traffic().bytes_sent, r == 0 ? 0.0 : 8.0 * static_cast<double>(counts[to_size(r)]));
}

TEST(MpiCollectives, CountsBeyondIntAreAClearError) {
  const int p = P();
  // Every rank passes the same counts, so every rank throws before any data moves (no hang, no access).
  std::vector<std::size_t> counts(to_size(p), 0);
  counts[0] = to_size(INT_MAX) + 1;
  unsigned char dummy[1] = {0};
  const std::string gather_error = error_of([&] { w().allgather(dummy, dummy, counts, Scalar::u8); });
  EXPECT_NE(gather_error.find("MPI Allgatherv"), std::string::npos) << gather_error;
  EXPECT_NE(gather_error.find("exceed"), std::string::npos) << gather_error;
  const std::string scatter_error = error_of([&] { w().reduce_scatter_sum(dummy, dummy, counts, Scalar::u8); });
  EXPECT_NE(scatter_error.find("exceed"), std::string::npos) << scatter_error;
  w().barrier();  // the job is still usable
}

TEST(MpiCollectives, MpiErrorsBecomeDnmfErrors) {
  // A root outside the communicator: MPI reports it (errors return), the communicator throws.
  double x = 1;
  const std::string e = error_of([&] { w().broadcast(&x, 1, Scalar::f64, P()); });
  EXPECT_NE(e.find("MPI Bcast"), std::string::npos) << e;
  w().barrier();
}

TEST(MpiGrid, RowAndColumnCommunicatorsOfEveryShape) {
  const int p = P(), r = R();
  for (int pr = 1; pr <= p; ++pr) {
    if (p % pr != 0) continue;
    const GridShape shape{pr, p / pr};
    Grid grid(w(), shape);
    SCOPED_TRACE(shape.str());
    EXPECT_EQ(grid.row(), r / shape.cols);
    EXPECT_EQ(grid.col(), r % shape.cols);
    EXPECT_EQ(grid.row_comm().size(), shape.cols);
    EXPECT_EQ(grid.row_comm().rank(), grid.col());
    EXPECT_EQ(grid.col_comm().size(), shape.rows);
    EXPECT_EQ(grid.col_comm().rank(), grid.row());
    // Gathering world ranks along each direction lists the grid row (j order) and the grid column (i order).
    std::vector<std::int64_t> along_row(to_size(shape.cols)), along_col(to_size(shape.rows));
    const std::int64_t me = r;
    grid.row_comm().allgather(&me, along_row.data(), std::vector<std::size_t>(along_row.size(), 1), Scalar::i64);
    grid.col_comm().allgather(&me, along_col.data(), std::vector<std::size_t>(along_col.size(), 1), Scalar::i64);
    for (int j = 0; j < shape.cols; ++j) EXPECT_EQ(along_row[to_size(j)], grid.row() * shape.cols + j);
    for (int i = 0; i < shape.rows; ++i) EXPECT_EQ(along_col[to_size(i)], i * shape.cols + grid.col());
    // The grid's traffic is the sum of its three communicators'.
    grid.reset_traffic();
    double one = 1;
    grid.row_comm().allreduce_sum(&one, 1);
    grid.col_comm().allreduce_sum(&one, 1);
    EXPECT_EQ(grid.traffic().collectives, 2);
  }
}

TEST(MpiGrid, RefusesAShapeThatDoesNotMatchTheJob) {
  const int p = P();
  const std::string e = error_of([&] { const Grid g(w(), {p + 1, 1}); });
  EXPECT_NE(e.find("needs " + std::to_string(p + 1) + " processes"), std::string::npos) << e;
  EXPECT_NE(e.find("has " + std::to_string(p)), std::string::npos) << e;
}

}  // namespace
}  // namespace dnmf::dist
