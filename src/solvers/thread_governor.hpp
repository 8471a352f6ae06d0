// The thread count of the cpu backend's iterations, chosen by measurement (issue 14, item 3). The cpu
// backend's results do not depend on the thread count (its sums run in an order fixed by the problem), so an
// iteration may run on all threads or on one at no cost to the numbers. A team only pays when its work
// outweighs starting and joining it, which is ~10 µs on an idle machine and several milliseconds on a busy
// one, where a thread waiting at a join may lose a whole scheduler time slice; no fixed threshold fits both.
// So the governor times one iteration on all threads against one on a single thread, keeps the faster, and
// times them again after a while. A trial's one-thread iteration costs about one more iteration where the team
// pays, so when the same count wins again (all threads by a clear margin, or one thread) the next trial waits
// twice as long: a long run's trials then cost a few iterations in all, not one in every 32.
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace dnmf::solvers {

class ThreadGovernor {
 public:
  /// `threads`: the most the caller allows; `host`: the backend runs on host threads; `iteration_flops`: the
  /// work of one iteration. Iterations below kTrialFlops run on one thread without trials: even on an idle
  /// machine they are shorter than the ~5 teams they start would cost.
  ThreadGovernor(int threads, bool host, double iteration_flops)
      : threads_(threads), enabled_(host && threads > 1), chosen_(iteration_flops < kTrialFlops ? 1 : threads) {
    if (enabled_ && chosen_ == 1) next_trial_ = -1;
    if (enabled_) omp_set_num_threads(chosen_);
  }
  ThreadGovernor(const ThreadGovernor&) = delete;
  ThreadGovernor& operator=(const ThreadGovernor&) = delete;
  /// Puts back the caller's thread count.
  ~ThreadGovernor() {
    if (enabled_) omp_set_num_threads(threads_);
  }

  /// Before iteration `it` (1-based): sets the thread count it runs with and starts its clock.
  void begin(int it) {
    if (!enabled_) return;
    phase_ = Phase::steady;
    if (it == next_trial_) phase_ = Phase::many;
    if (it == next_trial_ + 1) phase_ = Phase::one;
    omp_set_num_threads(phase_ == Phase::many ? threads_ : phase_ == Phase::one ? 1 : chosen_);
    start_ = Clock::now();
  }

  /// After iteration `it`: records a trial's time and, after the second, chooses.
  void end(int it) {
    if (!enabled_ || phase_ == Phase::steady) return;
    record(it, std::chrono::duration<double>(Clock::now() - start_).count());
  }

  /// The thread count chosen last (the caller's count before the first choice).
  [[nodiscard]] int chosen() const { return chosen_; }
  /// The iteration that next runs on all threads for a trial (-1: none).
  [[nodiscard]] int next_trial() const { return next_trial_; }

  /// end()'s bookkeeping, given the iteration's seconds (public for the tests' clock).
  void record(int it, double seconds) {
    if (!enabled_ || phase_ == Phase::steady) return;
    if (phase_ == Phase::many) {
      many_seconds_ = seconds;
      return;
    }
    const bool one_wins = seconds < many_seconds_;
    const int winner = one_wins ? 1 : threads_;
    // A narrow win for the team may turn with the machine's load: it is timed again at the first period.
    const bool clear = one_wins || seconds > kClearMargin * many_seconds_;
    const bool again = clear && winner == chosen_ && trials_ > 0;
    chosen_ = winner;
    if (again) {
      period_ = std::min(period_ * 2, one_wins ? kMaxPeriod : kMaxTeamPeriod);
    } else {
      period_ = one_wins ? 2 * kFirstPeriod : kFirstPeriod;
    }
    next_trial_ = it + period_;
    ++trials_;
  }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { steady, many, one };
  // Iteration 1 pays for first touches and allocations on whichever count it runs with: the trials start at 2.
  static constexpr int kFirstTrial = 2;
  static constexpr int kFirstPeriod = 32;
  static constexpr int kMaxPeriod = 4096;
  // The team's trials stay more frequent than one thread's: a machine that turns busy is noticed within
  // 512 iterations.
  static constexpr int kMaxTeamPeriod = 512;
  // One thread slower than the team by more than this: the team's win is clear.
  static constexpr double kClearMargin = 1.25;
  static constexpr double kTrialFlops = 4e6;

  const int threads_;
  const bool enabled_;
  int chosen_;
  int next_trial_ = kFirstTrial;
  int period_ = kFirstPeriod;
  int trials_ = 0;
  double many_seconds_ = 0;
  Phase phase_ = Phase::steady;
  Clock::time_point start_;
};

}  // namespace dnmf::solvers
