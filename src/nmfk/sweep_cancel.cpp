// See sweep_cancel.hpp.

#include "nmfk/sweep_cancel.hpp"

#include <utility>

#include "dnmf/error.hpp"

namespace dnmf::rank_search {

SweepCancel::SweepCancel(std::function<bool()> user, dist::Communicator& world)
    : user_(std::move(user)), world_(world), mpi_thread_(std::this_thread::get_id()) {}

bool SweepCancel::operator()() {
  bool stop = stop_.load() || (user_ && user_());
  if (std::this_thread::get_id() == mpi_thread_) {
    if (stop && !told_) {
      world_.send_stop_notices();
      told_ = true;
    } else if (!stop && world_.stop_notices() > 0) {
      stop = true;
    }
  }
  if (stop) stop_ = true;
  return stop;
}

void SweepCancel::stopped(const std::string& message) {
  stop_ = true;
  const std::lock_guard<std::mutex> lock(message_mutex_);
  if (message_.empty()) message_ = message;
}

void SweepCancel::agree() {
  // A stop seen by a job thread, or by a group peer through the group's own collectives, is told now: the other
  // groups may still be running jobs, which would otherwise all finish before they reach the collective below.
  if (stop_.load() && !told_) {
    world_.send_stop_notices();
    told_ = true;
  }
  const bool here = stop_.load() || (user_ && user_());
  double figures[2] = {here ? 1.0 : 0.0, told_ ? 1.0 : 0.0};
  world_.allreduce_sum(figures, 2);
  // A notice still in flight would otherwise meet the next phase's messages (or MPI's end).
  world_.wait_stop_notices(static_cast<int>(figures[1]) - (told_ ? 1 : 0));
  if (figures[0] == 0) return;
  if (!here) throw Cancelled("cancelled: another process of the job was stopped");
  const std::lock_guard<std::mutex> lock(message_mutex_);
  throw Cancelled(message_.empty() ? "cancelled between the phases of the sweep" : message_);
}

}  // namespace dnmf::rank_search
