#include "dist/mpi_communicator.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(std::string("MPI ") + what + ": " +
              (length > 0 ? std::string(text, to_size(length)) : "error code " + std::to_string(code)));
}

namespace {

MPI_Datatype mpi_type(Scalar s) {
  switch (s) {
    case Scalar::f32:
      return MPI_FLOAT;
    case Scalar::f64:
      return MPI_DOUBLE;
    case Scalar::i64:
      return MPI_INT64_T;
    case Scalar::u8:
      return MPI_UNSIGNED_CHAR;
  }
  throw Error("internal: unknown scalar type in an MPI collective");
}

int to_int(std::size_t value, const char* what) {
  if (value > to_size(INT_MAX))
    throw Error(std::string("MPI ") + what + ": " + std::to_string(value) +
                " elements exceed the largest count MPI takes (" + std::to_string(INT_MAX) +
                "); use more processes so that each piece is smaller");
  return static_cast<int>(value);
}

// MPI's int counts and displacements (in elements) of consecutive pieces.
struct Pieces {
  std::vector<int> counts, displs;
};

Pieces pieces(const std::vector<std::size_t>& counts, const char* what) {
  Pieces p;
  std::size_t offset = 0;
  for (std::size_t c : counts) {
    p.counts.push_back(to_int(c, what));
    p.displs.push_back(to_int(offset, what));
    offset += c;
  }
  return p;
}

// The largest piece an unchunked call moves: MPI counts are int.
constexpr std::size_t chunk_elements = to_size(INT_MAX);

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  if (!owned_ || comm_ == MPI_COMM_NULL) return;
  // A communicator that outlives MPI (a static destroyed after finalisation) has nothing left to free.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::barrier() { check_mpi(MPI_Barrier(comm_), "Barrier"); }

namespace {
// Within MPI's guaranteed tag range (at least 32767); no other point-to-point message uses this communicator (the
// context's is a duplicate of the host program's).
constexpr int kStopNoticeTag = 31871;
}  // namespace

void MpiCommunicator::send_stop_notices() {
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    // Empty and freed at once: the sender never waits for a receiver that is busy elsewhere.
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, q, kStopNoticeTag, comm_, &request), "Isend");
    check_mpi(MPI_Request_free(&request), "Request_free");
  }
}

int MpiCommunicator::stop_notices() {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kStopNoticeTag, comm_, &arrived, &status), "Iprobe");
    if (arrived == 0) return notices_taken_;
    check_mpi(MPI_Recv(nullptr, 0, MPI_BYTE, status.MPI_SOURCE, kStopNoticeTag, comm_, MPI_STATUS_IGNORE), "Recv");
    ++notices_taken_;
  }
}

void MpiCommunicator::wait_stop_notices(int count) {
  while (notices_taken_ < count) {
    check_mpi(MPI_Recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, kStopNoticeTag, comm_, MPI_STATUS_IGNORE), "Recv");
    ++notices_taken_;
  }
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  if (color < 0) throw Error("internal: communicator split with a negative color " + std::to_string(color));
  MPI_Comm out = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(comm_, color, key, &out), "Comm_split");
  return std::make_unique<MpiCommunicator>(out, true);
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(comm_, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest if it ever did
}

void MpiCommunicator::do_allreduce(void* data, std::size_t count, Scalar type, bool max) {
  auto* bytes = static_cast<char*>(data);
  const std::size_t element = size_of(type);
  for (std::size_t done = 0; done < count; done += chunk_elements) {
    const std::size_t n = std::min(chunk_elements, count - done);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes + done * element, static_cast<int>(n), mpi_type(type),
                            max ? MPI_MAX : MPI_SUM, comm_),
              "Allreduce");
  }
}

void MpiCommunicator::do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                        Scalar type) {
  const Pieces p = pieces(counts, "Reduce_scatter");
  check_mpi(MPI_Reduce_scatter(send, recv, p.counts.data(), mpi_type(type), MPI_SUM, comm_), "Reduce_scatter");
}

void MpiCommunicator::do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) {
  const Pieces p = pieces(counts, "Allgatherv");
  const auto r = to_size(rank_);
  // The caller's piece may already sit at its place in recv: MPI then wants MPI_IN_PLACE.
  const void* own = static_cast<const char*>(recv) + to_size(p.displs[r]) * size_of(type);
  const void* source = send == own ? MPI_IN_PLACE : send;
  check_mpi(MPI_Allgatherv(source, p.counts[r], mpi_type(type), recv, p.counts.data(), p.displs.data(), mpi_type(type),
                           comm_),
            "Allgatherv");
}

void MpiCommunicator::do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type,
                                int root) {
  const Pieces p = pieces(counts, "Gatherv");
  const auto r = to_size(rank_);
  const void* source = send;
  if (rank_ == root && send == static_cast<const char*>(recv) + to_size(p.displs[r]) * size_of(type))
    source = MPI_IN_PLACE;
  check_mpi(MPI_Gatherv(source, p.counts[r], mpi_type(type), recv, p.counts.data(), p.displs.data(), mpi_type(type),
                        root, comm_),
            "Gatherv");
}

void MpiCommunicator::do_broadcast(void* data, std::size_t count, Scalar type, int root) {
  auto* bytes = static_cast<char*>(data);
  const std::size_t element = size_of(type);
  for (std::size_t done = 0; done < count; done += chunk_elements) {
    const std::size_t n = std::min(chunk_elements, count - done);
    check_mpi(MPI_Bcast(bytes + done * element, static_cast<int>(n), mpi_type(type), root, comm_), "Bcast");
  }
}

void MpiCommunicator::do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                                   const std::vector<std::size_t>& recv_counts, Scalar type) {
  const Pieces s = pieces(send_counts, "Alltoallv");
  const Pieces r = pieces(recv_counts, "Alltoallv");
  check_mpi(MPI_Alltoallv(send, s.counts.data(), s.displs.data(), mpi_type(type), recv, r.counts.data(),
                          r.displs.data(), mpi_type(type), comm_),
            "Alltoallv");
}

}  // namespace dnmf::dist
