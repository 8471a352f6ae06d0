// See thread_count.hpp: the fork guard's state and its handler.

#include "util/thread_count.hpp"

#include <pthread.h>

#include <atomic>

namespace dnmf::util {
namespace {

std::atomic<bool> threads_used{false};
std::atomic<bool> forked_child{false};

void on_fork_child() {
  if (!threads_used.load()) return;  // no pool yet: the child may start its own
  forked_child.store(true);
  omp_set_num_threads(1);
}

// Registered when the library is loaded, before any fork a host program can make after calling it.
const bool registered = pthread_atfork(nullptr, nullptr, on_fork_child) == 0;

}  // namespace

void note_threads_used() { threads_used.store(true); }

bool forked_after_threads() {
  (void)registered;
  return forked_child.load();
}

}  // namespace dnmf::util
