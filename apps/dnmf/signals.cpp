// See signals.hpp.

#include "signals.hpp"

#include <csignal>

namespace dnmf::cli {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_stop_signal(int signal) { received = signal; }

}  // namespace

void stop_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the handler runs once; a second Ctrl-C gets the default action, for a user who will not wait.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() { return received; }

}  // namespace dnmf::cli
