// dnmf internal: a call's thread count, for the call only.
#pragma once

#include <omp.h>

namespace dnmf::util {

/// Sets OpenMP's thread count for the calling thread while in scope (when `threads` > 0) and puts the caller's
/// back at its end: FactorOptions::threads = 1 once left every later call of the host program, dnmf's with
/// threads = 0 ("OpenMP's default") included, on one thread.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads) : saved_(omp_get_max_threads()), set_(threads > 0) {
    if (set_) omp_set_num_threads(threads);
  }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;
  ~ThreadCountScope() {
    if (set_) omp_set_num_threads(saved_);
  }

 private:
  int saved_;
  bool set_;
};

}  // namespace dnmf::util
