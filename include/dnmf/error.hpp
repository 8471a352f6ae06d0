// dnmf: error types shared by the library, the CLI and the bindings.
#pragma once

#include <stdexcept>
#include <string>

namespace dnmf {

/// The class of a failure: what the user has to fix. The CLI turns it into its exit status (docs/reliability.md).
enum class ErrorKind {
  general,    ///< anything not classified below
  usage,      ///< a bad option or argument
  data,       ///< the input's content is unusable (malformed, negative, NaN, wrong shape)
  io,         ///< a file or directory cannot be opened, read, written or is not a regular file
  numerical,  ///< the computation broke down (non-finite iterates, singular systems)
};

/// Every failure the library reports to its caller: bad input, bad options, I/O problems.
/// The message is one line that names the file (where there is one), the place and the problem.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::general)
      : std::runtime_error(message), kind_(kind) {}
  explicit Error(const char* message, ErrorKind kind = ErrorKind::general) : std::runtime_error(message), kind_(kind) {}
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

/// A bad option or argument (ErrorKind::usage).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, ErrorKind::usage) {}
};

/// Input whose content is unusable (ErrorKind::data).
class DataError : public Error {
 public:
  explicit DataError(const std::string& message) : Error(message, ErrorKind::data) {}
};

/// A file system failure: open, read, write, rename, or a path that is not a regular file (ErrorKind::io).
class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(message, ErrorKind::io) {}
};

/// The computation broke down (ErrorKind::numerical).
class NumericalError : public Error {
 public:
  explicit NumericalError(const std::string& message) : Error(message, ErrorKind::numerical) {}
};

/// A failure every process of a distributed job detects identically and together (a grid that does not match
/// the process count, a bad option, an unreadable header read on rank 0 and broadcast): it is reported once and
/// the processes end normally. It keeps the kind of the failure it stands for.
class CollectiveError : public Error {
 public:
  using Error::Error;
  explicit CollectiveError(const Error& e) : Error(e.what(), e.kind()) {}
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

/// Throws the class of `kind` (UsageError, DataError, IoError, NumericalError; Error for general) with `message`:
/// for callers that add where a failure happened, so that `catch (const DataError&)` still sees it.
[[noreturn]] inline void throw_as(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::usage:
      throw UsageError(message);
    case ErrorKind::data:
      throw DataError(message);
    case ErrorKind::io:
      throw IoError(message);
    case ErrorKind::numerical:
      throw NumericalError(message);
    default:
      throw Error(message, kind);
  }
}

}  // namespace dnmf
