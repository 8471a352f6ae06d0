// Loops that run on the OpenMP team only where the caller has judged that the work pays for one, and that
// otherwise enter no OpenMP construct at all. A parallel region whose `if` clause is false is not free: libgomp
// still sets up and tears down a one-thread team for it, about a microsecond here, and small solves run such
// loops very often (the masked BPP calls the NNLS once per column; NMFk's side-by-side jobs entered ~219,000
// regions in a 500 x 400 sweep).
#pragma once

#include "dnmf/index.hpp"

namespace dnmf::util {

/// body(i) for every i in [0, n): split evenly over the team when `parallel`, else in a plain loop.
template <class Body>
void for_each_index(index_t n, bool parallel, Body&& body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) body(i);
  } else {
    for (index_t i = 0; i < n; ++i) body(i);
  }
}

/// As for_each_index, but handing out one index at a time, for items of uneven cost.
template <class Body>
void for_each_index_dynamic(index_t n, bool parallel, Body&& body) {
  if (parallel) {
#pragma omp parallel for schedule(dynamic, 1)
    for (index_t i = 0; i < n; ++i) body(i);
  } else {
    for (index_t i = 0; i < n; ++i) body(i);
  }
}

/// As for_each_index, with per-thread state: each thread that takes part builds its own by setup() (a prvalue)
/// and passes it to body(i, state); without `parallel`, one state serves the plain loop.
template <class Setup, class Body>
void for_each_index_with(index_t n, bool parallel, Setup&& setup, Body&& body) {
  if (parallel) {
#pragma omp parallel
    {
      auto state = setup();
#pragma omp for schedule(static)
      for (index_t i = 0; i < n; ++i) body(i, state);
    }
  } else {
    auto state = setup();
    for (index_t i = 0; i < n; ++i) body(i, state);
  }
}

/// As for_each_index_dynamic, with per-thread state: each thread that takes part builds its own by setup() (a
/// prvalue, so guards that cannot move are fine) before its first index and passes it to body(i, state).
/// Without `parallel`, one state serves the plain loop.
template <class Setup, class Body>
void for_each_index_dynamic_with(index_t n, bool parallel, Setup&& setup, Body&& body) {
  if (parallel) {
#pragma omp parallel
    {
      auto state = setup();
#pragma omp for schedule(dynamic, 1)
      for (index_t i = 0; i < n; ++i) body(i, state);
    }
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
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (index_t i = 0; i < n; ++i) total += count(i);
  } else {
    for (index_t i = 0; i < n; ++i) total += count(i);
  }
  return total;
}

}  // namespace dnmf::util
