// util/parallel_loops.hpp: every index visited once, on the team or in the plain loop, and the counts summed,
// with the team's size checked where OpenMP can give more than one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "util/parallel_loops.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dnmf {
namespace {

int team_size() {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

TEST(ParallelLoops, EveryIndexOnceInBothModes) {
  for (const bool parallel : {false, true}) {
    for (const index_t n : {index_t{0}, index_t{1}, index_t{7}, index_t{1000}}) {
      std::vector<std::atomic<int>> seen(static_cast<std::size_t>(n));
      util::for_each_index(n, parallel, [&](index_t i) { seen[static_cast<std::size_t>(i)]++; });
      std::vector<std::atomic<int>> seen_dynamic(static_cast<std::size_t>(n));
      util::for_each_index_dynamic(n, parallel, [&](index_t i) { seen_dynamic[static_cast<std::size_t>(i)]++; });
      for (index_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen[static_cast<std::size_t>(i)].load(), 1) << "static, parallel " << parallel << ", i " << i;
        EXPECT_EQ(seen_dynamic[static_cast<std::size_t>(i)].load(), 1) << "dynamic, parallel " << parallel;
      }
    }
  }
}

TEST(ParallelLoops, CountsSumTheSameInBothModes) {
  const auto odd = [](index_t i) { return i % 2; };
  EXPECT_EQ(util::count_over(1001, false, odd), 500);
  EXPECT_EQ(util::count_over(1001, true, odd), 500);
  EXPECT_EQ(util::count_over(0, true, odd), 0);
}

// The plain loop enters no OpenMP region (the point of the helpers); the parallel one runs on the whole team.
TEST(ParallelLoops, OnlyTheParallelModeStartsATeam) {
  std::atomic<int> widest{0};
  const auto note = [&](index_t) {
    int t = team_size();
    int seen = widest.load();
    while (t > seen && !widest.compare_exchange_weak(seen, t)) {
    }
  };
  util::for_each_index(64, false, note);
  EXPECT_EQ(widest.load(), 1);
#ifdef _OPENMP
  util::for_each_index(64, true, note);
  EXPECT_EQ(widest.load(), omp_get_max_threads());
#endif
}

}  // namespace
}  // namespace dnmf
