// dnmf internal: an entry converted to the compute type. A double that float cannot hold (finite but beyond
// float's range, or non-zero but so small that it becomes 0) becomes a NaN carrying a marker: the entry
// checks reject it like any NaN, and describe_bad_entry reads the marker to say what happened and what to do
// (--precision f64, or rescale), instead of reporting an inf or silently keeping a 0 the file does not hold.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace dnmf::io {

/// Quiet NaNs with payloads that no arithmetic produces.
inline constexpr std::uint32_t kOverflowMarker = 0x7FC00F10u;
inline constexpr std::uint32_t kUnderflowMarker = 0x7FC00F20u;
/// A negative double beyond float's range either way: refused as negative, which it is in any precision (reported as
/// "too large/small for single precision", its remedy --precision f64 led to "is negative"; and -1e-300 would
/// otherwise become -0.0, which passes as zero).
inline constexpr std::uint32_t kNegativeMarker = 0x7FC00F30u;

/// v as T; see above for the values float cannot hold.
template <class T, class S>
T narrow_entry(S v) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<S, double>) {
    // Compared before converting: a double beyond float's range has no defined float value.
    if (std::abs(v) >= 0x1.ffffffp127 && std::isfinite(v))  // rounds to infinity as a float
      return std::bit_cast<float>(v < 0 ? kNegativeMarker : kOverflowMarker);
    const auto f = static_cast<float>(v);
    if (f == 0.0f && v != 0.0) return std::bit_cast<float>(v < 0 ? kNegativeMarker : kUnderflowMarker);
    return f;
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && std::is_unsigned_v<S> &&
                       sizeof(S) >= sizeof(T)) {
    // An unsigned 64-bit count or index beyond int64's range saturates, so that the range checks that follow
    // see a huge value and refuse it, where a wrapped one was a negative number that no file holds.
    return v > static_cast<S>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max() : static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

/// Which marker `value` carries: 1 overflow, 2 underflow, 3 negative (beyond float's range), 0 none.
template <class T>
int narrow_marker(T value) {
  if constexpr (std::is_same_v<T, float>) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    return bits == kOverflowMarker ? 1 : bits == kUnderflowMarker ? 2 : bits == kNegativeMarker ? 3 : 0;
  } else {
    return 0;
  }
}

}  // namespace dnmf::io
