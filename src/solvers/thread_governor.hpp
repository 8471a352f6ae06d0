// The thread count of the cpu backend's iterations, chosen by measurement (issue 14, item 3). The cpu
// backend's results do not depend on the thread count (its sums run in an order fixed by the problem), so an
// iteration may run on all threads or on one at no cost to the numbers. A team only pays when its work
// outweighs starting and joining it, which is ~10 µs on an idle machine and several milliseconds on a busy
// one, where a thread waiting at a join may lose a whole scheduler time slice; no fixed threshold fits both.
// So the governor times one iteration on all threads against one on a single thread, keeps the faster, and
// times them again after a while; each time one thread wins, the next trial waits twice as long.
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
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (phase_ == Phase::many) {
      many_seconds_ = seconds;
      return;
    }
    const bool one_wins = seconds < many_seconds_;
    chosen_ = one_wins ? 1 : threads_;
    period_ = one_wins ? std::min(period_ * 2, kMaxPeriod) : kFirstPeriod;
    next_trial_ = it + period_;
  }

  /// The thread count chosen last (the caller's count before the first choice).
  [[nodiscard]] int chosen() const { return chosen_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { steady, many, one };
  // Iteration 1 pays for first touches and allocations on whichever count it runs with: the trials start at 2.
  static constexpr int kFirstTrial = 2;
  static constexpr int kFirstPeriod = 32;
  static constexpr int kMaxPeriod = 4096;
  static constexpr double kTrialFlops = 4e6;

  const int threads_;
  const bool enabled_;
  int chosen_;
  int next_trial_ = kFirstTrial;
  int period_ = kFirstPeriod;
  double many_seconds_ = 0;
  Phase phase_ = Phase::steady;
  Clock::time_point start_;
};

}  // namespace dnmf::solvers
