// Runs of Philox-4x32-10 uniforms, several counters per instruction (see random.hpp). Each lane performs
// philox4x32's operations on its own counter, so every value has the bits uniform01 gives it.

#include "util/random.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace dnmf::util {
namespace {

constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

// The key words of every round, so that the lanes only broadcast them.
struct RoundKeys {
  std::uint32_t k0[kRounds], k1[kRounds];
  explicit RoundKeys(std::uint64_t seed) {
    std::uint32_t a = static_cast<std::uint32_t>(seed), b = static_cast<std::uint32_t>(seed >> 32);
    for (int r = 0; r < kRounds; ++r) {
      k0[r] = a;
      k1[r] = b;
      a += kWeyl0;
      b += kWeyl1;
    }
  }
};

#if defined(__AVX2__)
// Four counters per 256-bit register, each word in the low half of a 64-bit lane (the form _mm256_mul_epu32
// multiplies), the high halves kept zero.
struct Lanes4 {
  __m256i c0, c1, c2, c3;
};

inline __m256i low32(__m256i x) { return _mm256_and_si256(x, _mm256_set1_epi64x(0xFFFFFFFFLL)); }

inline void philox_rounds(Lanes4& s, const RoundKeys& keys) {
  const __m256i m0 = _mm256_set1_epi64x(kMul0), m1 = _mm256_set1_epi64x(kMul1);
  for (int r = 0; r < kRounds; ++r) {
    const __m256i p0 = _mm256_mul_epu32(s.c0, m0);
    const __m256i p1 = _mm256_mul_epu32(s.c2, m1);
    const __m256i k0 = _mm256_set1_epi64x(keys.k0[r]), k1 = _mm256_set1_epi64x(keys.k1[r]);
    const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32), s.c1), k0);
    const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32), s.c3), k1);
    s.c1 = low32(p1);
    s.c3 = low32(p0);
    s.c0 = n0;
    s.c2 = n2;
  }
}

// unit_from_words in four lanes: bits < 2^53 + 1 is converted as its two 32-bit halves (each exact through the 2^52
// exponent trick), whose recombination hi·2^32 + lo is an integer below 2^53 + 1 and so exact too.
inline __m256d lanes_to_unit(const Lanes4& s) {
  const __m256i bits = _mm256_add_epi64(_mm256_srli_epi64(_mm256_or_si256(_mm256_slli_epi64(s.c0, 32), s.c1), 11),
                                        _mm256_set1_epi64x(1));
  const __m256i exponent = _mm256_castpd_si256(_mm256_set1_pd(0x1.0p52));
  const __m256d hi = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(bits, 32), exponent)),
                                   _mm256_set1_pd(0x1.0p52));
  const __m256d lo =
      _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(low32(bits), exponent)), _mm256_set1_pd(0x1.0p52));
  return _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(hi, _mm256_set1_pd(0x1.0p32)), lo), _mm256_set1_pd(0x1.0p-53));
}

inline Lanes4 start_lanes(__m256i index, std::uint64_t stream) {
  return {low32(index), _mm256_srli_epi64(index, 32), _mm256_set1_epi64x(static_cast<std::uint32_t>(stream)),
          _mm256_set1_epi64x(static_cast<std::uint32_t>(stream >> 32))};
}

// Eight counters at a time as two independent sets of four, so that one set's multiplies run while the other's
// wait; index_at(c) gives counter c's index.
template <class IndexAt>
std::size_t vector_part(const RoundKeys& keys, std::uint64_t stream, std::size_t count, double* out, IndexAt index_at) {
  std::size_t c = 0;
  for (; c + 8 <= count; c += 8) {
    Lanes4 a = start_lanes(index_at(c), stream);
    Lanes4 b = start_lanes(index_at(c + 4), stream);
    philox_rounds(a, keys);
    philox_rounds(b, keys);
    _mm256_storeu_pd(out + c, lanes_to_unit(a));
    _mm256_storeu_pd(out + c + 4, lanes_to_unit(b));
  }
  return c;
}
#endif

}  // namespace

void uniform01_run(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count, double* out) {
  std::size_t c = 0;
#if defined(__AVX2__)
  const RoundKeys keys(seed);
  c = vector_part(keys, stream, count, out, [&](std::size_t at) {
    const std::uint64_t i0 = first + at, i1 = i0 + 1, i2 = i0 + 2, i3 = i0 + 3;
    using Word = long long;  // NOLINT(google-runtime-int): the intrinsic's type
    return _mm256_set_epi64x(static_cast<Word>(i3), static_cast<Word>(i2), static_cast<Word>(i1),
                             static_cast<Word>(i0));
  });
#endif
  for (; c < count; ++c) {
    const auto r = philox4x32(seed, stream, first + c);
    out[c] = unit_from_words(r[0], r[1]);
  }
}

void uniform01_at(std::uint64_t seed, std::uint64_t stream, const std::uint64_t* index, std::size_t count,
                  double* out) {
  std::size_t c = 0;
#if defined(__AVX2__)
  const RoundKeys keys(seed);
  c = vector_part(keys, stream, count, out,
                  [&](std::size_t at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + at)); });
#endif
  for (; c < count; ++c) {
    const auto r = philox4x32(seed, stream, index[c]);
    out[c] = unit_from_words(r[0], r[1]);
  }
}

}  // namespace dnmf::util
