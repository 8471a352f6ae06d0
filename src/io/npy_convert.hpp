// dnmf internal: element conversion from a .npy file's stored type to the compute type T, straight or
// transposed (C-order rows become columns of a column-major block on their way through a read buffer). Shared
// by the whole-file and block readers and the streamed tile source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"
#include "io/narrow.hpp"

namespace dnmf::io {

template <class T>
struct Converter {
  /// dst[i] = src[i] for `count` elements.
  void (*run)(const std::byte* src, std::size_t count, T* dst) = nullptr;
  /// dst[r + c*ld] = src[r*n + c] for an m x n row-major block of the file.
  void (*transposed)(const std::byte* src, index_t m, index_t n, T* dst, index_t ld) = nullptr;
  /// The stored type is T: bytes can be read straight into place.
  bool identity = false;
};

namespace convert_detail {

template <class S>
S load(const std::byte* p) {
  S v;
  std::memcpy(&v, p, sizeof(S));  // file data carries no alignment promise
  return v;
}

/// numpy's bool ('b1'): one byte, and any non-zero byte is True (ndarray.view(bool) of other bytes keeps them,
/// and numpy reads them as True), so it is 1 here too: read as its byte, 255 was a weight of 255.
struct Bool8 {
  std::uint8_t byte;
};

/// The stored value at p as a number.
template <class S>
auto value_at(const std::byte* p) {
  if constexpr (std::is_same_v<S, Bool8>) {
    return static_cast<std::uint8_t>(load<Bool8>(p).byte != 0 ? 1 : 0);
  } else {
    return load<S>(p);
  }
}

template <class S, class T>
void convert_run(const std::byte* src, std::size_t count, T* dst) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = narrow_entry<T>(value_at<S>(src + i * sizeof(S)));
}

template <class S, class T>
void convert_transposed(const std::byte* src, index_t m, index_t n, T* dst, index_t ld) {
  // Blocks of columns keep the rows' reads and the columns' writes within a few cache lines each.
  constexpr index_t kBlock = 32;
  for (index_t c0 = 0; c0 < n; c0 += kBlock) {
    const index_t c1 = c0 + kBlock < n ? c0 + kBlock : n;
    for (index_t r = 0; r < m; ++r) {
      const std::byte* row = src + to_size(r * n) * sizeof(S);
      for (index_t c = c0; c < c1; ++c) dst[r + c * ld] = narrow_entry<T>(value_at<S>(row + to_size(c) * sizeof(S)));
    }
  }
}

template <class S, class T>
Converter<T> make() {
  return {&convert_run<S, T>, &convert_transposed<S, T>, std::is_same_v<S, T>};
}

}  // namespace convert_detail

/// The converter from a numpy-style stored type ('f' 4/8, 'i' and 'u' 1/2/4/8 bytes, 'b' 1) to T; throws
/// dnmf::Error naming `source` for anything else.
template <class T>
Converter<T> converter_for(char kind, std::size_t word, const std::string& source) {
  using namespace convert_detail;
  if (kind == 'f' && word == 4) return make<float, T>();
  if (kind == 'f' && word == 8) return make<double, T>();
  if (kind == 'i' && word == 1) return make<std::int8_t, T>();
  if (kind == 'i' && word == 2) return make<std::int16_t, T>();
  if (kind == 'i' && word == 4) return make<std::int32_t, T>();
  if (kind == 'i' && word == 8) return make<std::int64_t, T>();
  if (kind == 'u' && word == 1) return make<std::uint8_t, T>();
  if (kind == 'u' && word == 2) return make<std::uint16_t, T>();
  if (kind == 'u' && word == 4) return make<std::uint32_t, T>();
  if (kind == 'u' && word == 8) return make<std::uint64_t, T>();
  if (kind == 'b' && word == 1) return make<Bool8, T>();
  throw Error(source + ": cannot convert stored type '" + std::string(1, kind) + std::to_string(word) + "'");
}

}  // namespace dnmf::io
