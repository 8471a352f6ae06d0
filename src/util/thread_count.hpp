// dnmf internal: a call's thread count, for the call only.
#pragma once

#include <omp.h>

namespace dnmf::util {

/// Notes that this process has run (or is about to run) dnmf's OpenMP threads.
void note_threads_used();

/// True in a process forked (without exec) from one in which dnmf had run its threads. GNU OpenMP's thread pool
/// does not survive fork(): such a child hung for good in its first parallel region (Python's multiprocessing
/// with the 'fork' start method after a fit in the parent), so there every call runs on one thread; a fork
/// handler also sets OpenMP's default to one thread, for the BLAS's own regions.
bool forked_after_threads();

/// Sets OpenMP's thread count for the calling thread while in scope (when `threads` > 0) and puts the caller's
/// back at its end: FactorOptions::threads = 1 once left every later call of the host program, dnmf's with
/// threads = 0 ("OpenMP's default") included, on one thread.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads) : saved_(omp_get_max_threads()), set_(threads > 0) {
    // One thread starts no OpenMP pool: a process forked after such calls only may use threads.
    if (set_ ? threads > 1 : saved_ > 1) note_threads_used();
    if (set_) omp_set_num_threads(forked_after_threads() ? 1 : threads);
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
