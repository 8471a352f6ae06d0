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

}  // namespace dnmf
