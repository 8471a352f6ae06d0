// See fault_injection.hpp.

#include "io/fault_injection.hpp"

#include <csignal>
#include <cstdlib>
#include <string>

#include "dnmf/error.hpp"

namespace dnmf::io {

void fault_point(const char* step) {
  const char* fail = std::getenv("DNMF_TEST_FAIL_AT");
  if (fail != nullptr && std::string(fail) == step)
    throw IoError(std::string("injected failure at step '") + step + "' (DNMF_TEST_FAIL_AT)");
  const char* kill = std::getenv("DNMF_TEST_KILL_AT");
  if (kill != nullptr && std::string(kill) == step) std::raise(SIGKILL);
  const char* signal = std::getenv("DNMF_TEST_SIGNAL_AT");
  if (signal != nullptr && std::string(signal) == step) std::raise(SIGTERM);
}

bool exchange_disabled_for_test() { return std::getenv("DNMF_TEST_NO_EXCHANGE") != nullptr; }

}  // namespace dnmf::io
