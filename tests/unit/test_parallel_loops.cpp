// util/parallel_loops.hpp: every index visited once, on the team or in the plain loop, and the counts summed,
// with the team's size checked where OpenMP can give more than one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
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

// An exception leaving an OpenMP region calls std::terminate: a float32 masked BPP whose NNLS refused an infinite
// right-hand side aborted the CLI (exit 134) and killed a Python interpreter. Every loop, in both modes, hands
// the item's exception to its caller instead (on the team: the first one thrown); the run would abort otherwise.
TEST(ParallelLoops, AnItemsExceptionReachesTheCaller) {
  for (const bool parallel : {false, true}) {
    const auto throw_at = [](index_t i) {
      if (i == 37) throw std::runtime_error("item " + std::to_string(i));
    };
    EXPECT_THROW(util::for_each_index(100, parallel, throw_at), std::runtime_error) << parallel;
    EXPECT_THROW(util::for_each_index_dynamic(100, parallel, throw_at), std::runtime_error) << parallel;
    const auto state = [] { return std::vector<int>(3); };
    EXPECT_THROW(util::for_each_index_with(100, parallel, state, [&](index_t i, std::vector<int>&) { throw_at(i); }),
                 std::runtime_error);
    EXPECT_THROW(
        util::for_each_index_dynamic_with(100, parallel, state, [&](index_t i, std::vector<int>&) { throw_at(i); }),
        std::runtime_error);
    EXPECT_THROW(util::count_over(100, parallel,
                                  [&](index_t i) {
                                    throw_at(i);
                                    return index_t{1};
                                  }),
                 std::runtime_error);
    // A per-thread state that cannot be built fails the loop the same way.
    EXPECT_THROW(util::for_each_index_with(
                     100, parallel, []() -> std::vector<int> { throw std::length_error("no state"); },
                     [](index_t, std::vector<int>&) {}),
                 std::length_error);
  }
  // The message is the item's own, and a loop after a failed one runs every item.
  try {
    util::for_each_index(100, true, [](index_t i) {
      if (i == 5) throw std::runtime_error("item five");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item five");
  }
  std::atomic<int> visited{0};
  util::for_each_index(100, true, [&](index_t) { ++visited; });
  EXPECT_EQ(visited.load(), 100);
}

// A state that cannot move (a guard) is built in place on each thread.
TEST(ParallelLoops, StatesThatCannotMoveAreBuiltInPlace) {
  struct Pinned {
    int calls = 0;
    Pinned() = default;
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
  };
  std::atomic<int> total{0};
  util::for_each_index_dynamic_with(
      50, true, [] { return Pinned{}; },
      [&](index_t, Pinned& p) {
        ++p.calls;
        ++total;
      });
  EXPECT_EQ(total.load(), 50);
}

}  // namespace
}  // namespace dnmf
