// See signals.hpp.

#include "signals.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"

namespace dnmf::cli {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_stop_signal(int signal) { received = signal; }

// end_writes_on_signals()'s line, formatted before any signal can come (a handler may not allocate).
char interrupted_line[512] = {};

// remove_on_signals()'s paths, copied before any signal can come.
char removed_paths[4][4096] = {};

extern "C" void on_signal_during_write(int signal) {
  io::remove_temporaries_in_flight();
  for (const char* path : removed_paths)
    if (path[0] != '\0') ::unlink(path);
  const ssize_t written = ::write(STDERR_FILENO, interrupted_line, std::strlen(interrupted_line));
  (void)written;
  ::_exit(128 + signal);
}

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

void end_writes_on_signals(const std::string& output) {
  const std::string line = "dnmf: error: interrupted; " + output + " is as it was\n";
  line.copy(interrupted_line, std::min(line.size(), sizeof interrupted_line - 1));
  struct sigaction action {};
  action.sa_handler = on_signal_during_write;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);  // one handler at a time
  sigaddset(&action.sa_mask, SIGTERM);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void remove_on_signals(const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < std::size(removed_paths); ++i) {
    const std::string path = i < paths.size() && paths[i].size() < sizeof removed_paths[i] ? paths[i] : std::string();
    path.copy(removed_paths[i], path.size());
    removed_paths[i][path.size()] = '\0';
  }
}

bool gone_process(std::string_view digits) {
  long long pid = 0;
  const auto [last, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (error != std::errc() || last != digits.data() + digits.size() || pid <= 0 ||
      pid > std::numeric_limits<pid_t>::max())
    return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void report_file_size_limits() {
  std::signal(SIGXFSZ, SIG_IGN);
  std::signal(SIGPIPE, SIG_IGN);
}

void commit_unless_stopped(OutputSet& out, const std::vector<std::string>& carry) {
  if (stop_signal() != 0) throw Cancelled("interrupted before the output was committed");
  out.commit(carry, [] { return stop_signal() != 0; });
  if (stop_signal() != 0) throw Cancelled("interrupted while the output was committed: the new results are in place");
}

}  // namespace dnmf::cli
