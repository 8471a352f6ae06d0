// util/radix_sort.hpp against std::sort: keys shaped like the NNLS's (a passive set above a column index),
// keys that differ only in their top or bottom byte, repeated keys, and sizes around the std::sort cut-off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "util/radix_sort.hpp"

namespace dnmf {
namespace {

void expect_sorted_like_std(std::vector<std::uint64_t> keys, const char* what) {
  std::vector<std::uint64_t> want = keys;
  std::sort(want.begin(), want.end());
  std::vector<std::uint64_t> scratch;
  util::radix_sort(keys, scratch);
  EXPECT_EQ(keys, want) << what << ", " << keys.size() << " keys";
}

TEST(RadixSort, MatchesStdSort) {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {0u, 1u, 255u, 256u, 257u, 5000u, 70000u}) {
    std::vector<std::uint64_t> nnls(n), top(n), bottom(n), full(n), repeated(n);
    std::vector<std::uint64_t> columns(n);
    for (std::size_t c = 0; c < n; ++c) columns[c] = c;
    std::shuffle(columns.begin(), columns.end(), rng);
    for (std::size_t c = 0; c < n; ++c) {
      nnls[c] = ((rng() & 0xFFFFu) << 32) | columns[c];  // k = 16 passive sets, distinct columns
      top[c] = (rng() & 0xFF00000000000000u) | 0x1234u;
      bottom[c] = 0xABCD000000000000u | (rng() & 0xFFu);
      full[c] = rng();
      repeated[c] = rng() % 3;
    }
    expect_sorted_like_std(nnls, "passive set and column");
    expect_sorted_like_std(top, "top byte only");
    expect_sorted_like_std(bottom, "bottom byte only");
    expect_sorted_like_std(full, "64 random bits");
    expect_sorted_like_std(repeated, "three values");
  }
}

}  // namespace
}  // namespace dnmf
