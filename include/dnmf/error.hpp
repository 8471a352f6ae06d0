// dnmf: error type shared by the library, the CLI and the bindings.
#pragma once

#include <stdexcept>
#include <string>

namespace dnmf {

/// Every failure the library reports to its caller: bad input, bad options, I/O problems.
/// The message is one line that names the file (where there is one), the place and the problem.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A failure every process of a distributed job detects identically and together (a grid that does not match
/// the process count, a bad option, an unreadable header read on rank 0 and broadcast): it is reported once and
/// the processes end normally.
class CollectiveError : public Error {
 public:
  using Error::Error;
  explicit CollectiveError(const Error& e) : Error(e.what()) {}
};

/// The run was stopped by FactorOptions::cancel (every process throws it together).
class Cancelled : public CollectiveError {
 public:
  using CollectiveError::CollectiveError;
};

/// This process stopped because another one failed (learnt through a collective); the failing process
/// reports the cause, so this one adds nothing to the output.
class PeerError : public Error {
 public:
  using Error::Error;
};

}  // namespace dnmf
