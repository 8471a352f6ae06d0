// Loops that run on the OpenMP team only where the caller has judged that the work pays for one, and that
// otherwise enter no OpenMP construct at all. A parallel region whose `if` clause is false is not free: libgomp
// still sets up and tears down a one-thread team for it, about a microsecond here, and small solves run such
// loops very often (the masked BPP calls the NNLS once per column; NMFk's side-by-side jobs entered ~219,000
// regions in a 500 x 400 sweep).
//
// An exception may not leave an OpenMP region: it calls std::terminate, which aborted the CLI (exit 134, its
// staging folder left behind) and killed a Python interpreter where a numerical breakdown should have been
// reported (a float32 masked BPP whose weights overflowed the NNLS's right-hand side). Every parallel loop here
// catches what its items throw and rethrows the first after the region.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

#include "dnmf/index.hpp"

namespace dnmf::util {

/// Multiply-adds below which a loop is not worth a team: starting one and joining it costs a few microseconds on a
/// quiet machine, and on a loaded one a thread waiting at the join can cost a scheduler time slice (a 20 x 20
/// fit's final error took 1.3 ms on 2 threads against 3 µs of work). Measured by bench_threads
/// (docs/benchmarks.md, "Threads on small problems").
inline constexpr double kMinParallelMultiplyAdds = 1e5;

/// The first exception thrown inside a parallel region, for its caller to rethrow once the region has ended.
/// run() calls its function unless an earlier item has failed (the rest of the region's items are then
/// skipped, though every thread still reaches the region's worksharing constructs and barriers).
class ParallelFailure {
 public:
  template <class F>
  void run(F&& f) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      std::forward<F>(f)();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  /// Whether an item has thrown (read by items that can stop early).
  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  /// Rethrows the first exception caught, if any; called after the region.
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::exception_ptr error_;
};

namespace detail {
/// Builds a setup()'s prvalue in place in an optional (no move: per-thread states may hold guards that cannot).
template <class Setup>
struct InPlace {
  Setup& setup;
  operator decltype(std::declval<Setup&>()())() const { return setup(); }  // NOLINT(google-explicit-constructor)
};
}  // namespace detail

/// body(i) for every i in [0, n): split evenly over the team when `parallel`, else in a plain loop.
template <class Body>
void for_each_index(index_t n, bool parallel, Body&& body) {
  if (parallel) {
    ParallelFailure failure;
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) failure.run([&] { body(i); });
    failure.rethrow();
  } else {
    for (index_t i = 0; i < n; ++i) body(i);
  }
}

/// As for_each_index, but handing out one index at a time, for items of uneven cost.
template <class Body>
void for_each_index_dynamic(index_t n, bool parallel, Body&& body) {
  if (parallel) {
    ParallelFailure failure;
#pragma omp parallel for schedule(dynamic, 1)
    for (index_t i = 0; i < n; ++i) failure.run([&] { body(i); });
    failure.rethrow();
  } else {
    for (index_t i = 0; i < n; ++i) body(i);
  }
}

/// As for_each_index, with per-thread state: each thread that takes part builds its own by setup() (a prvalue)
/// and passes it to body(i, state); without `parallel`, one state serves the plain loop.
template <class Setup, class Body>
void for_each_index_with(index_t n, bool parallel, Setup&& setup, Body&& body) {
  if (parallel) {
    ParallelFailure failure;
#pragma omp parallel
    {
      std::optional<decltype(setup())> state;
      failure.run([&] { state.emplace(detail::InPlace<Setup>{setup}); });
#pragma omp for schedule(static)
      for (index_t i = 0; i < n; ++i) {
        if (state) failure.run([&] { body(i, *state); });
      }
    }
    failure.rethrow();
  } else {
    auto state = setup();
    for (index_t i = 0; i < n; ++i) body(i, state);
  }
}

/// As for_each_index_dynamic, with per-thread state: each thread that takes part builds its own by setup() (a
/// prvalue, so guards that cannot move are fine) before its first index and passes it to body(i, state).
/// Without `parallel`, one state serves the plain loop. `chunk`: indices handed out at a time (more than one
/// where items are many and cheap, such as the masked solvers' columns, so that threads do not queue for them).
template <class Setup, class Body>
void for_each_index_dynamic_with(index_t n, bool parallel, Setup&& setup, Body&& body, index_t chunk = 1) {
  if (parallel) {
    ParallelFailure failure;
#pragma omp parallel
    {
      std::optional<decltype(setup())> state;
      failure.run([&] { state.emplace(detail::InPlace<Setup>{setup}); });
#pragma omp for schedule(dynamic, chunk)
      for (index_t i = 0; i < n; ++i) {
        if (state) failure.run([&] { body(i, *state); });
      }
    }
    failure.rethrow();
  } else {
    auto state = setup();
    for (index_t i = 0; i < n; ++i) body(i, state);
  }
}

/// Σ count(i) over i in [0, n), on the team when `parallel`. The counts are integers, so any order gives the
/// same total.
template <class Count>
index_t count_over(index_t n, bool parallel, Count&& count) {
  index_t total = 0;
  if (parallel) {
    ParallelFailure failure;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (index_t i = 0; i < n; ++i) failure.run([&] { total += count(i); });
    failure.rethrow();
  } else {
    for (index_t i = 0; i < n; ++i) total += count(i);
  }
  return total;
}

}  // namespace dnmf::util
