// Counter-based random numbers: a value depends only on (seed, stream, index), never on call order,
// so results do not depend on how A is split across threads, tiles, processes or devices (DESIGN §4).
// The generator is Philox-4x32 with 10 rounds (Salmon et al., SC'11).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "dnmf/index.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::util {

/// Streams in use; each purpose draws from its own so that adding one never shifts another.
enum class Stream : std::uint64_t { init_w = 1, init_h = 2, svd_sketch = 3, perturbation = 4, holdout = 5 };

/// Philox-4x32-10 block for counter (index, stream) and key seed.
inline std::array<std::uint32_t, 4> philox4x32(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  std::uint32_t c0 = static_cast<std::uint32_t>(index), c1 = static_cast<std::uint32_t>(index >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(stream), c3 = static_cast<std::uint32_t>(stream >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

/// A block's first two words as a double in (0, 1]: their top 53 bits plus one, times 2^-53.
inline double unit_from_words(std::uint32_t r0, std::uint32_t r1) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(r0) << 32 | r1) >> 11;
  return static_cast<double>(bits + 1) * 0x1.0p-53;
}

/// Uniform double in (0, 1]: never exactly zero, so a random factor has no entry stuck at zero under MU.
inline double uniform01(std::uint64_t seed, Stream stream, std::uint64_t index) {
  const auto r = philox4x32(seed, static_cast<std::uint64_t>(stream), index);
  return unit_from_words(r[0], r[1]);
}

/// out[c] = uniform01(seed, stream, first + c) for c in [0, count), with the same bits, several counters per
/// instruction (random.cpp): random starts, sketches and hold-outs draw hundreds of thousands at a time. `stream`
/// is a Stream's value or another stream word (the perturbations').
void uniform01_run(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t count, double* out);

/// out[c] = uniform01(seed, stream, index[c]) for c in [0, count), as uniform01_run for counters that are not
/// consecutive (a sparse matrix's entries).
void uniform01_at(std::uint64_t seed, std::uint64_t stream, const std::uint64_t* index, std::size_t count, double* out);

/// use(q, u) for every q in [0, count) with u = uniform01(seed, stream, first + q): runs of uniform01_run, on the
/// team where there are enough of them (each value depends on its counter alone, so not on the threads; use
/// must be safe to call from several threads for distinct q).
template <class Use>
void for_each_uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, index_t count, Use&& use) {
  constexpr index_t kRun = 2048;
  constexpr index_t kParallelCount = index_t{1} << 16;
  const index_t runs = (count + kRun - 1) / kRun;
  for_each_index(runs, count >= kParallelCount, [&](index_t r) {
    double u[kRun];
    const index_t begin = r * kRun, len = std::min(kRun, count - begin);
    uniform01_run(seed, stream, first + static_cast<std::uint64_t>(begin), static_cast<std::size_t>(len), u);
    for (index_t q = 0; q < len; ++q) use(begin + q, u[q]);
  });
}

}  // namespace dnmf::util
