// dnmf: one index convention. Counts and positions are signed index_t (std::int64_t), so that differences and
// reverse loops read as arithmetic; containers from the standard library take std::size_t. to_size() is the one
// place where the two meet: a checked conversion instead of a static_cast at every subscript.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dnmf {

/// Row/column counts, leading dimensions and CSR row pointers.
using index_t = std::int64_t;

/// `i` as a std::size_t (a subscript, an element count or a byte count). Integral arguments only; a negative
/// value is a bug and stops the program in Debug and AddressSanitizer builds (Release pays nothing).
template <class I>
[[nodiscard]] constexpr std::size_t to_size(I i) noexcept {
  static_assert(std::is_integral_v<I>, "to_size converts integers; convert floating point explicitly");
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
  if constexpr (std::is_signed_v<I>) {
    if (i < 0) __builtin_trap();
  }
#endif
  return static_cast<std::size_t>(i);
}

}  // namespace dnmf
