// The communicator interface (DESIGN §4): every collective a solver needs, with byte accounting. Solvers
// and NMFk talk to this interface only; MPI (host buffers) and NCCL (device buffers) implement it, and a
// single-process implementation makes one process without mpirun an ordinary 1x1 grid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"

namespace dnmf::dist {

/// Element type of a collective's buffers.
enum class Scalar { f32, f64, i64, u8 };

/// Bytes per element of a Scalar.
[[nodiscard]] std::size_t size_of(Scalar s);

template <class T>
[[nodiscard]] constexpr Scalar scalar_of();
template <>
constexpr Scalar scalar_of<float>() {
  return Scalar::f32;
}
template <>
constexpr Scalar scalar_of<double>() {
  return Scalar::f64;
}
template <>
constexpr Scalar scalar_of<std::int64_t>() {
  return Scalar::i64;
}
template <>
constexpr Scalar scalar_of<unsigned char>() {
  return Scalar::u8;
}

/// Where the buffers handed to a communicator must live.
enum class Memory { host, device };

/// What this rank has sent, counted per collective by the bandwidth-optimal algorithm's volume (ring or
/// recursive halving: allreduce 2(p-1)/p·B, reduce-scatter and allgather (p-1)/p·B, broadcast B at the root),
/// so the totals compare with the model of DESIGN §4 independently of the MPI library's choice.
struct Traffic {
  double bytes_sent = 0;
  long long collectives = 0;
  Traffic& operator+=(const Traffic& o) {
    bytes_sent += o.bytes_sent;
    collectives += o.collectives;
    return *this;
  }
};

/// A group of processes and the collectives between them. Buffers are in memory() space. The public
/// calls count traffic and forward to the do_* implementations; all counts are in elements.
class Communicator {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual Memory memory() const { return Memory::host; }

  /// In place: data = Σ over ranks of data.
  void allreduce_sum(void* data, std::size_t count, Scalar type);
  /// In place: data = max over ranks of data.
  void allreduce_max(void* data, std::size_t count, Scalar type);
  /// Sums `send` (Σ counts elements, identical layout on every rank) over ranks; rank r receives the r-th
  /// consecutive piece (counts[r] elements) in `recv`. `send` and `recv` must not overlap.
  void reduce_scatter_sum(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type);
  /// Concatenates every rank's piece (counts[r] elements from `send` on rank r) in rank order into `recv`
  /// on every rank.
  void allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type);
  /// Like allgather, but only `root` receives (recv may be null elsewhere).
  void gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type, int root);
  /// Copies root's `count` elements to every rank.
  void broadcast(void* data, std::size_t count, Scalar type, int root);
  /// Personalised exchange: this rank sends send_counts[q] elements (consecutive in `send`, ordered by q) to
  /// each rank q and receives recv_counts[q] elements from each (consecutive in `recv`, ordered by q).
  /// Entries a rank keeps for itself count as not sent.
  void alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                 const std::vector<std::size_t>& recv_counts, Scalar type);
  /// Waits for every rank.
  virtual void barrier() = 0;
  /// Ranks with the same color form a new communicator, ordered by key (then by rank here).
  [[nodiscard]] virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  /// Ends every process of the job with `code`: the way out when one rank fails, so no other rank hangs.
  [[noreturn]] virtual void abort(int code) = 0;

  // Stop notices: how a rank that stops tells ranks it shares no collective with at the moment (one NMFk group
  // cancelled while the others run their own jobs). Point to point, never waiting on the receivers; every notice
  // sent must be taken (wait_stop_notices) before the ranks next meet. One process: nothing to tell.
  /// Sends every other rank one stop notice.
  virtual void send_stop_notices() {}
  /// Notices this rank has taken so far, taking those that have arrived (without waiting).
  [[nodiscard]] virtual int stop_notices() { return 0; }
  /// Waits until `count` notices have been taken in all.
  virtual void wait_stop_notices(int /*count*/) {}

  /// Bytes sent by this rank since construction or the last reset_traffic().
  [[nodiscard]] const Traffic& traffic() const { return traffic_; }
  void reset_traffic() { traffic_ = {}; }

  // Typed conveniences.
  template <class T>
  void allreduce_sum(T* data, std::size_t count) {
    allreduce_sum(static_cast<void*>(data), count, scalar_of<T>());
  }
  template <class T>
  T sum(T value) {
    allreduce_sum(&value, 1);
    return value;
  }
  template <class T>
  T max(T value) {
    allreduce_max(static_cast<void*>(&value), 1, scalar_of<T>());
    return value;
  }

 protected:
  virtual void do_allreduce(void* data, std::size_t count, Scalar type, bool max) = 0;
  virtual void do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) = 0;
  virtual void do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) = 0;
  virtual void do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type,
                         int root) = 0;
  virtual void do_broadcast(void* data, std::size_t count, Scalar type, int root) = 0;
  virtual void do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                            const std::vector<std::size_t>& recv_counts, Scalar type) = 0;

 private:
  Traffic traffic_;
};

/// The one-process communicator: every collective is a copy (or nothing).
class SingleCommunicator final : public Communicator {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  [[nodiscard]] std::string name() const override { return "single"; }
  void barrier() override {}
  [[nodiscard]] std::unique_ptr<Communicator> split(int color, int key) override;
  [[noreturn]] void abort(int code) override;

 protected:
  void do_allreduce(void* data, std::size_t count, Scalar type, bool max) override;
  void do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type, int root) override;
  void do_broadcast(void* data, std::size_t count, Scalar type, int root) override;
  void do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                    const std::vector<std::size_t>& recv_counts, Scalar type) override;
};

/// The job's communicator: MPI's world when the build has MPI and the process was started by mpirun (or
/// MPI is otherwise initialised), else a SingleCommunicator. Initialises MPI on first use; finalised at exit.
[[nodiscard]] Communicator& world();

/// Collective over `comm`: rank `root`'s `error` (the other ranks' is ignored) reaches every rank, and when it
/// is not empty every rank throws CollectiveError with it; otherwise returns. The one way ranks agree on a
/// failure of one rank's step (Context::on_root, nmfk's checkpoint scan, io's failed reads).
/// `kind` (root's) travels with the text, so the CLI's exit status names the same class on every rank.
void throw_root_error(Communicator& comm, int root, std::string error, ErrorKind kind = ErrorKind::general);

/// Runs `check`, a test every rank of `comm` makes on the same (allreduced) figures, so every rank fails alike
/// or not at all. On more than one rank its dnmf::Error becomes a CollectiveError, which the job reports once
/// instead of once per rank; alone, the error passes unchanged. Not collective itself.
template <class Check>
void check_shared_figures(const Communicator& comm, Check&& check) {
  try {
    std::forward<Check>(check)();
  } catch (const Error& e) {
    if (comm.size() == 1) throw;
    throw CollectiveError(e);
  }
}

/// True when this build contains the MPI communicator.
[[nodiscard]] bool mpi_built();

}  // namespace dnmf::dist
