// solvers::Exchange with DevicePeers (NCCL beside MPI): when the kernels' buffers are device memory and a
// device communicator is paired with the host one asked for, the buffers go over the device communicator
// directly (no host staging); otherwise behaviour is unchanged. Tested without a GPU: "device" kernels are
// host kernels that say otherwise, and the communicators are recorders that fake a two-rank sum.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/reference/reference_kernels.hpp"
#include "dist/communicator.hpp"
#include "solvers/exchange.hpp"

namespace dnmf {
namespace {

// Reference kernels that report device memory, so Exchange takes its device paths; copies count.
class PretendDeviceKernels final : public backend::Kernels<double> {
 public:
  std::string name() const override { return "pretend-device"; }
  bool host_memory() const override { return false; }
  double* allocate(std::size_t count) override { return inner_.allocate(count); }
  void deallocate(double* p) noexcept override { inner_.deallocate(p); }
  void copy_to_backend(const double* host, double* dst, std::size_t count) override {
    ++copies;
    inner_.copy_to_backend(host, dst, count);
  }
  void copy_to_host(const double* src, double* host, std::size_t count) override {
    ++copies;
    inner_.copy_to_host(src, host, count);
  }
  void multiply(const MatrixRef<double>& a, backend::Side s, backend::CView<double> y, backend::View<double> out,
                double beta) override {
    inner_.multiply(a, s, y, out, beta);
  }
  backend::KlSums kl_multiply(const MatrixRef<double>& a, backend::Side s, backend::CView<double> y,
                              backend::CView<double> x, backend::View<double> out, double beta) override {
    return inner_.kl_multiply(a, s, y, x, out, beta);
  }
  backend::MatrixStats stats(const MatrixRef<double>& a) override { return inner_.stats(a); }
  void gram(backend::CView<double> x, backend::View<double> g, double beta) override { inner_.gram(x, g, beta); }
  void fill(backend::View<double> x, double v) override { inner_.fill(x, v); }
  double dot(backend::CView<double> x, backend::CView<double> y) override { return inner_.dot(x, y); }
  void row_sums(backend::CView<double> x, double* out) override { inner_.row_sums(x, out); }
  int update(const backend::UpdateRule& r, backend::View<double> x, backend::CView<double> n, backend::CView<double> g,
             const double* s) override {
    return inner_.update(r, x, n, g, s);
  }
  int copies = 0;

 private:
  backend::ReferenceKernels<double> inner_;
};

// Rank 0 of a pretend two-rank group whose other rank holds the same data: a sum doubles, a gather repeats.
class Recorder final : public dist::Communicator {
 public:
  explicit Recorder(dist::Memory memory) : memory_(memory) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return memory_ == dist::Memory::host ? "host" : "device"; }
  dist::Memory memory() const override { return memory_; }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }
  [[noreturn]] void abort(int) override { std::abort(); }
  int calls = 0;

 protected:
  void do_allreduce(void* data, std::size_t count, dist::Scalar, bool) override {
    ++calls;
    auto* d = static_cast<double*>(data);
    for (std::size_t i = 0; i < count; ++i) d[i] *= 2;
  }
  void do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, dist::Scalar) override {
    ++calls;
    for (std::size_t i = 0; i < counts[0]; ++i) static_cast<double*>(recv)[i] = 2 * static_cast<const double*>(send)[i];
  }
  void do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, dist::Scalar) override {
    ++calls;
    std::memcpy(recv, send, counts[0] * sizeof(double));
    std::memcpy(static_cast<double*>(recv) + counts[0], send, counts[1] * sizeof(double));
  }
  void do_gather(const void*, void*, const std::vector<std::size_t>&, dist::Scalar, int) override { ++calls; }
  void do_broadcast(void*, std::size_t, dist::Scalar, int) override { ++calls; }
  void do_alltoallv(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&,
                    dist::Scalar) override {
    ++calls;
  }

 private:
  dist::Memory memory_;
};

TEST(DeviceExchange, PairedDeviceCommunicatorTakesDeviceBuffersDirectly) {
  PretendDeviceKernels kernels;
  Recorder host(dist::Memory::host), device(dist::Memory::device);
  solvers::DevicePeers peers;
  peers.add(host, device);
  solvers::Exchange<double> exchange(kernels, &peers);
  std::vector<double> data{1, 2, 3};
  exchange.allreduce(host, data.data(), 3);
  EXPECT_EQ(data, (std::vector<double>{2, 4, 6}));
  std::vector<double> piece(2), all(4);
  exchange.reduce_scatter(host, std::vector<double>{1, 2, 3, 4}.data(), piece.data(), {2, 2});
  EXPECT_EQ(piece, (std::vector<double>{2, 4}));
  exchange.allgather(host, piece.data(), all.data(), {2, 2});
  EXPECT_EQ(all, (std::vector<double>{2, 4, 2, 4}));
  EXPECT_EQ(device.calls, 3);
  EXPECT_EQ(host.calls, 0);
  EXPECT_EQ(kernels.copies, 0);  // nothing staged through the host
  EXPECT_GT(device.traffic().bytes_sent, 0);
}

TEST(DeviceExchange, WithoutAPeerDeviceBuffersAreStagedThroughTheHostAsBefore) {
  PretendDeviceKernels kernels;
  Recorder host(dist::Memory::host), other(dist::Memory::host), device(dist::Memory::device);
  solvers::DevicePeers peers;
  peers.add(other, device);  // paired with another communicator, not this one
  solvers::Exchange<double> exchange(kernels, &peers);
  std::vector<double> data{1, 2};
  exchange.allreduce(host, data.data(), 2);
  EXPECT_EQ(data, (std::vector<double>{2, 4}));
  EXPECT_EQ(host.calls, 1);
  EXPECT_EQ(device.calls, 0);
  EXPECT_EQ(kernels.copies, 2);  // down and up again
  solvers::Exchange<double> plain(kernels);
  plain.allreduce(host, data.data(), 2);
  EXPECT_EQ(host.calls, 2);
}

TEST(DeviceExchange, HostKernelsKeepTheHostCommunicatorEvenWithPeers) {
  backend::ReferenceKernels<double> kernels;
  Recorder host(dist::Memory::host), device(dist::Memory::device);
  solvers::DevicePeers peers;
  peers.add(host, device);
  solvers::Exchange<double> exchange(kernels, &peers);
  std::vector<double> data{1};
  exchange.allreduce(host, data.data(), 1);
  EXPECT_EQ(host.calls, 1);
  EXPECT_EQ(device.calls, 0);
  EXPECT_EQ(peers.find(device), nullptr);
  EXPECT_EQ(peers.find(host), &device);
}

}  // namespace
}  // namespace dnmf
