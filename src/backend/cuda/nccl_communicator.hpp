// The NCCL implementation of the communicator (DESIGN §4): collectives between GPUs on device buffers,
// queued on the solver's CUDA stream. Bootstrapped over a host communicator (MPI): rank 0 makes the NCCL id,
// the host communicator broadcasts it, every rank joins on its current CUDA device. Uneven reduce-scatter and
// allgather go through padded device scratch (NCCL's are even only); gather and alltoallv are grouped
// point-to-point sends. The library is loaded at run time (dlopen of libnccl.so.2), so binaries built with
// NCCL still start on machines without it, and only making a communicator fails there.
//
// Compiled into the CUDA module, libdnmf_cuda.so, where CUDA, MPI and NCCL's header are all found
// (DNMF_WITH_NCCL). This header is plain C++; the padding arithmetic below is inline so that it is tested in
// every build.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"

struct ncclComm;  // NCCL's opaque communicator (ncclComm_t is a pointer to it)

namespace dnmf::dist {

/// Pieces of uneven size laid out for an even collective: every rank's piece padded to the largest.
struct PaddedPieces {
  std::size_t piece = 0;             ///< the largest count: the padded piece of every rank
  std::vector<std::size_t> offsets;  ///< where rank r's piece starts in the unpadded (packed) buffer
  bool even = true;                  ///< all counts equal: the collective runs on the buffers as they are
};

/// The packed offsets and the padded piece size of `counts`.
[[nodiscard]] inline PaddedPieces padded_pieces(const std::vector<std::size_t>& counts) {
  PaddedPieces p;
  std::size_t at = 0;
  for (std::size_t c : counts) {
    p.offsets.push_back(at);
    at += c;
    if (c > p.piece) p.piece = c;
    if (c != counts.front()) p.even = false;
  }
  return p;
}

/// A communicator between GPUs. Buffers are device memory (memory() == Memory::device). Every collective
/// is queued on the communicator's stream and returns once queued: its result is ready for later work on
/// that stream (the kernels' stream), and for the host after that stream is synchronised.
class NcclCommunicator final : public Communicator {
 public:
  /// Collective over `host` (which must outlive this): joins an NCCL communicator of host.size() ranks with
  /// rank host.rank(), on the current CUDA device. `stream` is the cudaStream_t collectives are queued on
  /// (Kernels::stream(); nullptr: the legacy default stream). Throws dnmf::Error when NCCL cannot be loaded or
  /// initialisation fails (two ranks on one GPU among the reasons NCCL gives).
  NcclCommunicator(Communicator& host, void* stream);
  ~NcclCommunicator() override;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] Memory memory() const override { return Memory::device; }
  /// Waits for the stream, then for every rank (over the host communicator).
  void barrier() override;
  /// ncclCommSplit beside a split of the host communicator; `color` >= 0.
  [[nodiscard]] std::unique_ptr<Communicator> split(int color, int key) override;
  /// ncclCommAbort, then the host communicator's abort.
  [[noreturn]] void abort(int code) override;

  /// The stream collectives are queued on.
  [[nodiscard]] void* stream() const { return stream_; }
  /// The host communicator it was bootstrapped over (same ranks, same order).
  [[nodiscard]] Communicator& host() const { return *host_; }

  /// Whether NCCL can be loaded here; otherwise `why_not` says what the loader said.
  [[nodiscard]] static bool available(std::string* why_not = nullptr);
  /// The loaded library's version, "2.28.9"; throws dnmf::Error when it cannot be loaded.
  [[nodiscard]] static std::string version();

 protected:
  void do_allreduce(void* data, std::size_t count, Scalar type, bool max) override;
  void do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type, int root) override;
  void do_broadcast(void* data, std::size_t count, Scalar type, int root) override;
  void do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                    const std::vector<std::size_t>& recv_counts, Scalar type) override;

 private:
  struct Scratch;
  NcclCommunicator(std::unique_ptr<Communicator> host, ncclComm* comm, void* stream);
  /// Device scratch of at least `bytes` (grown with cudaFree, which waits for the device).
  void* scratch(std::size_t bytes);

  std::unique_ptr<Communicator> owned_host_;  // split() children own their host communicator
  Communicator* host_;
  ncclComm* comm_ = nullptr;
  void* stream_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dnmf::dist
