// A scope in which the calling thread's BLAS calls run on one thread.
#pragma once

#include <omp.h>

namespace dnmf::backend::cpu {

/// OpenBLAS threads a call made outside an active team by itself, and a threaded product may round differently
/// from a serial one; within this scope the calling thread's BLAS calls run serial, so that every sum is the
/// same for any thread count (the CPU kernels and the masked iteration rely on it).
class SerialBlas {
 public:
  SerialBlas() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
  ~SerialBlas() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

}  // namespace dnmf::backend::cpu
