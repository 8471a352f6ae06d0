// The MPI implementation of the communicator (host buffers): each collective is the matching MPI call on
// one MPI_Comm. Only compiled when the build has MPI (DNMF_HAVE_MPI).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.hpp"

namespace dnmf::dist {

/// A communicator over an MPI_Comm. MPI errors are returned (MPI_ERRORS_RETURN) and thrown as dnmf::Error;
/// a count or displacement that does not fit MPI's int is an error (allreduce and broadcast are chunked).
class MpiCommunicator final : public Communicator {
 public:
  /// Wraps `comm`; frees it on destruction when `owned` (communicators made by split()).
  MpiCommunicator(MPI_Comm comm, bool owned);
  ~MpiCommunicator() override;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string name() const override { return "mpi"; }
  void barrier() override;
  /// MPI_Comm_split; `color` must be >= 0 (every rank gets a communicator).
  [[nodiscard]] std::unique_ptr<Communicator> split(int color, int key) override;
  [[noreturn]] void abort(int code) override;
  void send_stop_notices() override;
  [[nodiscard]] int stop_notices() override;
  void wait_stop_notices(int count) override;
  /// The wrapped communicator (for libraries that take one, e.g. parallel HDF5).
  [[nodiscard]] MPI_Comm comm() const { return comm_; }

 protected:
  void do_allreduce(void* data, std::size_t count, Scalar type, bool max) override;
  void do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) override;
  void do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type, int root) override;
  void do_broadcast(void* data, std::size_t count, Scalar type, int root) override;
  void do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                    const std::vector<std::size_t>& recv_counts, Scalar type) override;

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
  int notices_taken_ = 0;
};

/// Throws dnmf::Error "MPI <what>: <MPI's message>" when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* what);

}  // namespace dnmf::dist
