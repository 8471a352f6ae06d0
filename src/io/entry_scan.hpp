// dnmf internal: the all-good test over a run of entries that every input check starts with. The common case
// (every entry finite and >= 0) costs one vectorised pass; a caller scans a bad run again for its position.
#pragma once

#include <limits>

#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// Entries of v[0, n) that are negative, NaN or infinite: 0 when all are acceptable_entry(), else non-zero.
/// Written as an OpenMP SIMD reduction of comparison bits: g++ leaves the `good &= acceptable_entry(x)` loop
/// scalar (a compare and a flag move per entry), which made checking two initial factors of 480 000 entries
/// cost 0.9 ms, most of a one-iteration fit's start.
template <class T>
[[nodiscard]] inline unsigned unacceptable_bits(const T* v, index_t n) {
  unsigned bad = 0;
#pragma omp simd reduction(| : bad)
  for (index_t p = 0; p < n; ++p)
    bad |= static_cast<unsigned>(!(v[p] >= T(0))) | static_cast<unsigned>(!(v[p] <= std::numeric_limits<T>::max()));
  return bad;
}

/// True when every entry of v[0, n) is finite and >= 0 (-0.0 included).
template <class T>
[[nodiscard]] inline bool all_acceptable(const T* v, index_t n) {
  return unacceptable_bits(v, n) == 0;
}

/// What one pass over v[0, n) found: whether every entry is acceptable_entry(), and whether any is not zero.
struct EntryScan {
  bool all_acceptable = true;
  bool any_nonzero = false;
  double sum = 0;  // of the entries, where all are acceptable
};

/// all_acceptable(), "some entry is not zero" and the entries' sum in one vectorised pass (an initial factor's
/// checks and scale).
template <class T>
[[nodiscard]] inline EntryScan scan_entries(const T* v, index_t n) {
  unsigned bad = 0, nonzero = 0;
  double sum = 0;
#pragma omp simd reduction(| : bad, nonzero) reduction(+ : sum)
  for (index_t p = 0; p < n; ++p) {
    bad |= static_cast<unsigned>(!(v[p] >= T(0))) | static_cast<unsigned>(!(v[p] <= std::numeric_limits<T>::max()));
    nonzero |= static_cast<unsigned>(v[p] != T(0));
    sum += static_cast<double>(v[p]);
  }
  return {bad == 0, nonzero != 0, sum};
}

}  // namespace dnmf::io
