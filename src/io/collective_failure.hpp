// dnmf internal: one rank's failure while reading, made known to every rank at a point where all ranks meet
// anyway, so that no rank is left waiting in a later collective. The conventions of dnmf/error.hpp: the rank
// that failed throws its own dnmf::Error (the CLI prints it with the rank and ends the job), the others a
// PeerError; a failure every rank shares is a CollectiveError (printed once).
#pragma once

#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "dist/communicator.hpp"
#include "dnmf/error.hpp"

namespace dnmf::io::detail {

/// Collective over `comm`. Nothing happens when no rank passes a failure. When every rank failed, each throws
/// a CollectiveError with rank 0's message. Otherwise a failing rank throws dnmf::Error with its own message
/// and the others PeerError("<path>: failed on another rank") of the same ErrorKind.
void agree_on_failure(dist::Communicator& comm, const std::string& path, const std::optional<Error>& failure);

/// Runs `step` on this rank, catching dnmf::Error and allocation failures, then agrees with the other ranks of
/// `comm` as agree_on_failure does. Returns the step's result. An allocation failure reads "<path>: out of memory
/// while <doing>".
template <class Step>
auto run_agreed(dist::Communicator& comm, const std::string& path, Step&& step, const std::string& doing = "reading") {
  std::optional<Error> failure;
  const auto failed = [&](const Error& e) { failure = e; };
  using Result = decltype(step());
  if constexpr (std::is_void_v<Result>) {
    try {
      std::forward<Step>(step)();
    } catch (const Error& e) {
      failed(e);
    } catch (const std::bad_alloc&) {
      failed(Error(path + ": out of memory while " + doing));
    }
    agree_on_failure(comm, path, failure);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(std::forward<Step>(step)());
    } catch (const Error& e) {
      failed(e);
    } catch (const std::bad_alloc&) {
      failed(Error(path + ": out of memory while " + doing));
    }
    agree_on_failure(comm, path, failure);
    return std::move(*result);
  }
}

/// Every rank calls with the same `reporter`: that rank throws dnmf::Error(message), the others PeerError.
[[noreturn]] void raise_on(dist::Communicator& comm, int reporter, const std::string& path, const std::string& message,
                           ErrorKind kind = ErrorKind::general);

/// Collective: rank `root` passes the message; every rank throws a CollectiveError with it (dist::throw_root_error
/// with a default text for an empty message).
[[noreturn]] void raise_everywhere(dist::Communicator& comm, int root, std::string message,
                                   ErrorKind kind = ErrorKind::general);

}  // namespace dnmf::io::detail
