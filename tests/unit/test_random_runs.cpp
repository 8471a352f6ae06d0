// The counter-based generator (util/random.hpp): Philox-4x32-10 against the published known-answer vectors of
// its authors (Random123's kat_vectors), and the vectorised runs (random.cpp) against uniform01 value by value,
// on counts that leave every remainder and counters and streams that use their high words.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "util/random.hpp"

namespace dnmf {
namespace {

std::uint64_t words(std::uint32_t low, std::uint32_t high) { return static_cast<std::uint64_t>(high) << 32 | low; }

TEST(RandomRuns, PhiloxMatchesThePublishedKnownAnswers) {
  using Block = std::array<std::uint32_t, 4>;
  // counter (c0..c3), key (k0, k1), expected output
  EXPECT_EQ(util::philox4x32(0, 0, 0), (Block{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(util::philox4x32(words(0xffffffffu, 0xffffffffu), words(0xffffffffu, 0xffffffffu),
                             words(0xffffffffu, 0xffffffffu)),
            (Block{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(util::philox4x32(words(0xa4093822u, 0x299f31d0u), words(0x13198a2eu, 0x03707344u),
                             words(0x243f6a88u, 0x85a308d3u)),
            (Block{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(RandomRuns, RunsGiveUniform01sBitsForEveryCounter) {
  const std::uint64_t seeds[] = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0x123456789ABCDEFull};
  const std::uint64_t streams[] = {1, 4 | (7ull << 8) | (3ull << 40), 0xFFFFFFFF00000005ull};
  const std::uint64_t firsts[] = {0, 5, (1ull << 32) - 3, 0xFFFFFFFFFFFFFF00ull};
  for (const std::uint64_t seed : seeds)
    for (const std::uint64_t stream : streams)
      for (const std::uint64_t first : firsts)
        for (const std::size_t count : {0, 1, 7, 8, 9, 31, 100}) {
          std::vector<double> out(count + 1, -1.0);
          util::uniform01_run(seed, stream, first, count, out.data());
          for (std::size_t c = 0; c < count; ++c)
            ASSERT_EQ(out[c], util::uniform01(seed, static_cast<util::Stream>(stream), first + c))
                << seed << " " << stream << " " << first << " +" << c;
          EXPECT_EQ(out[count], -1.0) << "wrote past the run";
        }
}

TEST(RandomRuns, ScatteredCountersGiveUniform01sBits) {
  std::vector<std::uint64_t> index;
  for (std::uint64_t i = 0; i < 203; ++i) index.push_back(i * 0x9E3779B97F4A7C15ull ^ (i << 33));
  for (const std::uint64_t seed : {3ull, 0xDEADBEEFCAFEull}) {
    for (const std::size_t count : {0, 3, 8, 13, 203}) {
      std::vector<double> out(count + 1, -1.0);
      util::uniform01_at(seed, 2, index.data(), count, out.data());
      for (std::size_t c = 0; c < count; ++c)
        ASSERT_EQ(out[c], util::uniform01(seed, util::Stream::init_h, index[c])) << seed << " at " << c;
      EXPECT_EQ(out[count], -1.0) << "wrote past the run";
    }
  }
}

}  // namespace
}  // namespace dnmf
