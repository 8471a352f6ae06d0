#include "dist/communicator.hpp"

#include <cstdlib>
#include <cstring>
#include <numeric>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {

std::size_t size_of(Scalar s) {
  switch (s) {
    case Scalar::f32:
      return 4;
    case Scalar::f64:
    case Scalar::i64:
      return 8;
    case Scalar::u8:
      return 1;
  }
  return 1;
}

namespace {

double total_bytes(const std::vector<std::size_t>& counts, Scalar type) {
  return static_cast<double>(std::accumulate(counts.begin(), counts.end(), std::size_t{0})) *
         static_cast<double>(size_of(type));
}

void check_counts(const Communicator& c, const std::vector<std::size_t>& counts, const char* what) {
  if (counts.size() != to_size(c.size()))
    throw Error(std::string("internal: ") + what + " given " + std::to_string(counts.size()) + " counts for " +
                std::to_string(c.size()) + " ranks");
}

}  // namespace

void Communicator::allreduce_sum(void* data, std::size_t count, Scalar type) {
  const double p = size();
  traffic_.bytes_sent += 2 * (p - 1) / p * static_cast<double>(count * size_of(type));
  ++traffic_.collectives;
  do_allreduce(data, count, type, false);
}

void Communicator::allreduce_max(void* data, std::size_t count, Scalar type) {
  const double p = size();
  traffic_.bytes_sent += 2 * (p - 1) / p * static_cast<double>(count * size_of(type));
  ++traffic_.collectives;
  do_allreduce(data, count, type, true);
}

void Communicator::reduce_scatter_sum(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                      Scalar type) {
  check_counts(*this, counts, "reduce_scatter");
  const double p = size();
  traffic_.bytes_sent += (p - 1) / p * total_bytes(counts, type);
  ++traffic_.collectives;
  do_reduce_scatter(send, recv, counts, type);
}

void Communicator::allgather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type) {
  check_counts(*this, counts, "allgather");
  const double p = size();
  traffic_.bytes_sent += (p - 1) / p * total_bytes(counts, type);
  ++traffic_.collectives;
  do_allgather(send, recv, counts, type);
}

void Communicator::gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type, int root) {
  check_counts(*this, counts, "gather");
  if (rank() != root) traffic_.bytes_sent += static_cast<double>(counts[to_size(rank())] * size_of(type));
  ++traffic_.collectives;
  do_gather(send, recv, counts, type, root);
}

void Communicator::broadcast(void* data, std::size_t count, Scalar type, int root) {
  if (rank() == root && size() > 1) traffic_.bytes_sent += static_cast<double>(count * size_of(type));
  ++traffic_.collectives;
  do_broadcast(data, count, type, root);
}

void Communicator::alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                             const std::vector<std::size_t>& recv_counts, Scalar type) {
  check_counts(*this, send_counts, "alltoallv");
  check_counts(*this, recv_counts, "alltoallv");
  const double kept = static_cast<double>(send_counts[to_size(rank())] * size_of(type));
  traffic_.bytes_sent += total_bytes(send_counts, type) - kept;
  ++traffic_.collectives;
  do_alltoallv(send, send_counts, recv, recv_counts, type);
}

std::unique_ptr<Communicator> SingleCommunicator::split(int color, int key) {
  (void)color;
  (void)key;
  return std::make_unique<SingleCommunicator>();
}

void SingleCommunicator::abort(int code) { std::exit(code); }

void SingleCommunicator::do_allreduce(void* data, std::size_t count, Scalar type, bool max) {
  (void)data;
  (void)count;
  (void)type;
  (void)max;
}

void SingleCommunicator::do_reduce_scatter(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                           Scalar type) {
  if (send != recv && counts[0] > 0) std::memmove(recv, send, counts[0] * size_of(type));
}

void SingleCommunicator::do_allgather(const void* send, void* recv, const std::vector<std::size_t>& counts,
                                      Scalar type) {
  if (send != recv && counts[0] > 0) std::memmove(recv, send, counts[0] * size_of(type));
}

void SingleCommunicator::do_gather(const void* send, void* recv, const std::vector<std::size_t>& counts, Scalar type,
                                   int root) {
  (void)root;
  do_allgather(send, recv, counts, type);
}

void SingleCommunicator::do_broadcast(void* data, std::size_t count, Scalar type, int root) {
  (void)data;
  (void)count;
  (void)type;
  (void)root;
}

void SingleCommunicator::do_alltoallv(const void* send, const std::vector<std::size_t>& send_counts, void* recv,
                                      const std::vector<std::size_t>& recv_counts, Scalar type) {
  if (send_counts[0] != recv_counts[0]) throw Error("internal: alltoallv on one rank with unequal counts");
  if (send != recv && send_counts[0] > 0) std::memmove(recv, send, send_counts[0] * size_of(type));
}

void throw_root_error(Communicator& comm, int root, std::string error, ErrorKind kind) {
  if (comm.size() > 1) {
    std::int64_t fields[2] = {comm.rank() == root ? static_cast<std::int64_t>(error.size()) : 0,
                              static_cast<std::int64_t>(kind)};
    comm.broadcast(fields, 2, Scalar::i64, root);
    error.resize(to_size(fields[0]));
    kind = static_cast<ErrorKind>(fields[1]);
    if (fields[0] > 0) comm.broadcast(error.data(), error.size(), Scalar::u8, root);
  }
  if (!error.empty()) throw CollectiveError(error, kind);
}

}  // namespace dnmf::dist
