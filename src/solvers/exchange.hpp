// Collectives on the backend's buffers: a host communicator gets device buffers through a host copy, and a
// communicator of one rank moves nothing (the caller aliases its pieces and blocks instead). Where a device
// communicator (NCCL) is paired with a host one (DevicePeers), device buffers go over it directly.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "backend/kernels.hpp"
#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::solvers {

/// Device communicators paired with the host communicators of a grid (e.g. NCCL beside MPI's world, row and
/// column communicators): the host one stays for host values, the device one takes the device buffers.
struct DevicePeers {
  std::vector<std::pair<const dist::Communicator*, dist::Communicator*>> pairs;  ///< (host, device)
  void add(const dist::Communicator& host, dist::Communicator& device) { pairs.emplace_back(&host, &device); }
  /// The device communicator paired with `host`, or nullptr.
  [[nodiscard]] dist::Communicator* find(const dist::Communicator& host) const {
    for (const auto& [h, d] : pairs)
      if (h == &host) return d;
    return nullptr;
  }
};

template <class T>
class Exchange {
 public:
  /// `peers` (optional, must outlive the exchange) routes device buffers to paired device communicators.
  explicit Exchange(backend::Kernels<T>& kernels, const DevicePeers* peers = nullptr)
      : kernels_(kernels), peers_(peers) {}

  /// data (count elements, backend memory) = Σ over the communicator.
  void allreduce(dist::Communicator& host_or_device, T* data, std::size_t count) {
    dist::Communicator& c = route(host_or_device);
    if (c.size() == 1) return;
    if (direct(c)) {
      c.allreduce_sum(data, count);
      return;
    }
    stage_.resize(count);
    kernels_.copy_to_host(data, stage_.data(), count);
    c.allreduce_sum(stage_.data(), count);
    kernels_.copy_to_backend(stage_.data(), data, count);
  }

  /// recv = this rank's piece of Σ send (pieces of counts[r] elements, in rank order).
  void reduce_scatter(dist::Communicator& host_or_device, const T* send, T* recv,
                      const std::vector<std::size_t>& counts) {
    dist::Communicator& c = route(host_or_device);
    if (c.size() == 1) return require_alias(send, recv);
    const std::size_t total = sum(counts), mine = counts[to_size(c.rank())];
    if (direct(c)) {
      c.reduce_scatter_sum(send, recv, counts, dist::scalar_of<T>());
      return;
    }
    stage_.resize(total + mine);
    kernels_.copy_to_host(send, stage_.data(), total);
    c.reduce_scatter_sum(stage_.data(), stage_.data() + total, counts, dist::scalar_of<T>());
    kernels_.copy_to_backend(stage_.data() + total, recv, mine);
  }

  /// recv = every rank's piece in rank order.
  void allgather(dist::Communicator& host_or_device, const T* send, T* recv, const std::vector<std::size_t>& counts) {
    dist::Communicator& c = route(host_or_device);
    if (c.size() == 1) return require_alias(send, recv);
    const std::size_t total = sum(counts), mine = counts[to_size(c.rank())];
    if (direct(c)) {
      c.allgather(send, recv, counts, dist::scalar_of<T>());
      return;
    }
    stage_.resize(total + mine);
    kernels_.copy_to_host(send, stage_.data() + total, mine);
    c.allgather(stage_.data() + total, stage_.data(), counts, dist::scalar_of<T>());
    kernels_.copy_to_backend(stage_.data(), recv, total);
  }

 private:
  /// The device peer of `c` when the kernels' buffers are device memory and one is paired, else `c`.
  [[nodiscard]] dist::Communicator& route(dist::Communicator& c) const {
    if (peers_ == nullptr || kernels_.host_memory()) return c;
    dist::Communicator* device = peers_->find(c);
    return device != nullptr ? *device : c;
  }
  [[nodiscard]] bool direct(const dist::Communicator& c) const {
    return (c.memory() == dist::Memory::host) == kernels_.host_memory();
  }
  static std::size_t sum(const std::vector<std::size_t>& counts) {
    std::size_t s = 0;
    for (std::size_t c : counts) s += c;
    return s;
  }
  static void require_alias(const T* send, const T* recv) {
    if (send != recv) throw Error("internal: a one-rank exchange expects its send and receive blocks aliased");
  }

  backend::Kernels<T>& kernels_;
  const DevicePeers* peers_ = nullptr;
  std::vector<T> stage_;
};

}  // namespace dnmf::solvers
