// A cancel that reaches every process of an NMFk sweep. Each group runs its jobs on its own collectives, so a
// cancel agreed inside one group (the solver shares it over the group only) left the other groups running their
// jobs and then waiting, at the next collective over all processes, for processes that had left: the job hung.
// A process that stops now tells the others with stop notices, which their jobs' hooks read; and at each phase
// boundary every process agrees on whether any stopped, so a signal that arrives between the phases (after a
// process's own jobs) stops the whole job instead of being swallowed.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "dist/communicator.hpp"

namespace dnmf::rank_search {

class SweepCancel {
 public:
  /// `user`: the caller's hook (FactorOptions::cancel; may be empty). Constructed on the thread that makes the
  /// MPI calls (MPI_THREAD_FUNNELED): only that thread sends or reads notices.
  SweepCancel(std::function<bool()> user, dist::Communicator& world);

  /// The jobs' hook: true once this process stops (its user hook said so, or another process's notice came).
  /// Callers on other threads serialise their calls (the user hook is not thread-safe).
  bool operator()();

  /// A job of this process stopped with dnmf::Cancelled saying `message`.
  void stopped(const std::string& message);

  /// Collective over the world: when any process stopped (or its hook says so now), every process throws
  /// dnmf::Cancelled together, with its own message where it stopped itself. Every notice sent is taken first.
  void agree();

 private:
  std::function<bool()> user_;
  dist::Communicator& world_;
  std::thread::id mpi_thread_;
  std::atomic<bool> stop_{false};
  bool told_ = false;  // notices sent (the MPI thread's)
  std::mutex message_mutex_;
  std::string message_;
};

}  // namespace dnmf::rank_search
