// dnmf internal: the all-good test over a run of entries that every input check starts with. The common case
// (every entry finite and >= 0) costs one vectorised pass; a caller scans a bad run again for its position.
#pragma once

#include <limits>

#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// 1 for a value that is negative, NaN or infinite (not acceptable_entry()), else 0: a bit to OR over a run.
/// The scans below OR these bits in OpenMP SIMD reductions: g++ leaves the `good &= acceptable_entry(x)` loop
/// scalar (a compare and a flag move per entry), which made checking two initial factors of 480 000 entries
/// cost 0.9 ms, most of a one-iteration fit's start.
template <class T>
[[nodiscard]] inline unsigned unacceptable_bit(T v) {
  return static_cast<unsigned>(!(v >= T(0))) | static_cast<unsigned>(!(v <= std::numeric_limits<T>::max()));
}

/// True when every entry of v[0, n) is finite and >= 0 (-0.0 included).
template <class T>
[[nodiscard]] inline bool all_acceptable(const T* v, index_t n) {
  unsigned bad = 0;
#pragma omp simd reduction(| : bad)
  for (index_t p = 0; p < n; ++p) bad |= unacceptable_bit(v[p]);
  return bad == 0;
}

/// What one pass over v[0, n) found: whether every entry is acceptable_entry(), and whether any is not zero.
struct EntryScan {
  bool all_acceptable = true;
  bool any_nonzero = false;
};

/// all_acceptable() and "some entry is not zero" in one vectorised pass (an initial factor's checks).
template <class T>
[[nodiscard]] inline EntryScan scan_entries(const T* v, index_t n) {
  unsigned bad = 0, nonzero = 0;
#pragma omp simd reduction(| : bad, nonzero)
  for (index_t p = 0; p < n; ++p) {
    bad |= unacceptable_bit(v[p]);
    nonzero |= static_cast<unsigned>(v[p] != T(0));
  }
  return {bad == 0, nonzero != 0};
}

}  // namespace dnmf::io
