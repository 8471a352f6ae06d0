// Agreeing on a read failure across ranks; see collective_failure.hpp.
#include "io/collective_failure.hpp"

#include <cstdint>

namespace dnmf::io::detail {

void agree_on_failure(dist::Communicator& comm, const std::string& path, const std::optional<std::string>& failure) {
  if (comm.size() == 1) {
    if (failure) throw CollectiveError(*failure);
    return;
  }
  // One small allreduce on the way that succeeds.
  const std::int64_t failed = comm.sum<std::int64_t>(failure ? 1 : 0);
  if (failed == 0) return;
  if (failed == comm.size()) raise_everywhere(comm, 0, failure.value_or(std::string()));
  raise_on(comm, failure ? comm.rank() : -1, path, failure.value_or(std::string()));
}

void raise_on(dist::Communicator& comm, int reporter, const std::string& path, const std::string& message) {
  if (comm.size() == 1) throw CollectiveError(message);
  if (comm.rank() == reporter) throw Error(message);
  throw PeerError(path + ": failed on another rank");
}

void raise_everywhere(dist::Communicator& comm, int root, std::string message) {
  if (comm.rank() == root && message.empty()) message = "a rank failed while reading (no message)";
  dist::throw_root_error(comm, root, std::move(message));
  throw CollectiveError("a rank failed while reading (no message)");  // not reached: root's text is not empty
}

}  // namespace dnmf::io::detail
