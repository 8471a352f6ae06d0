// Agreeing on a read failure across ranks; see collective_failure.hpp.
#include "io/collective_failure.hpp"

#include <cstdint>

namespace dnmf::io::detail {

void agree_on_failure(dist::Communicator& comm, const std::string& path, const std::optional<Error>& failure) {
  if (comm.size() == 1) {
    if (failure) throw CollectiveError(*failure);
    return;
  }
  // One small allreduce on the way that succeeds.
  const std::int64_t failed = comm.sum<std::int64_t>(failure ? 1 : 0);
  if (failed == 0) return;
  const std::string message = failure ? failure->what() : std::string();
  const ErrorKind kind = failure ? failure->kind() : ErrorKind::general;
  if (failed == comm.size()) raise_everywhere(comm, 0, message, kind);
  // The others learn the failure's kind, so that their PeerError is of its class (Python's DataError on every
  // rank, not the base Error on all but one).
  const auto shared = static_cast<ErrorKind>(comm.max<std::int64_t>(static_cast<std::int64_t>(kind)));
  raise_on(comm, failure ? comm.rank() : -1, path, message, failure ? kind : shared);
}

void raise_on(dist::Communicator& comm, int reporter, const std::string& path, const std::string& message,
              ErrorKind kind) {
  if (comm.size() == 1) throw CollectiveError(message, kind);
  if (comm.rank() == reporter) throw Error(message, kind);
  throw PeerError(path + ": failed on another rank", kind);
}

void raise_everywhere(dist::Communicator& comm, int root, std::string message, ErrorKind kind) {
  if (comm.rank() == root && message.empty()) message = "a rank failed while reading (no message)";
  dist::throw_root_error(comm, root, std::move(message), kind);
  throw CollectiveError("a rank failed while reading (no message)");  // not reached: root's text is not empty
}

}  // namespace dnmf::io::detail
