// solvers/thread_governor.hpp on a scripted clock: which count each trial keeps, and when the next trial comes.
#include <gtest/gtest.h>
#include <omp.h>

#include <functional>
#include <vector>

#include "solvers/thread_governor.hpp"

namespace dnmf::solvers {
namespace {

struct Trial {
  int many_iteration;  // the trial's all-threads iteration
  int chosen;          // the count it kept
};

// Runs `iterations` iterations, timing an all-threads iteration `team` seconds and a one-thread iteration
// `one(trial index)` seconds, and lists the trials.
std::vector<Trial> run(int iterations, double team, const std::function<double(int)>& one) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  std::vector<Trial> trials;
  {
    ThreadGovernor governor(2, true, 1e9);
    for (int it = 1; it <= iterations; ++it) {
      const int trial = governor.next_trial();
      governor.begin(it);
      const bool alone = omp_get_max_threads() == 1;
      governor.record(it, alone ? one(static_cast<int>(trials.size())) : team);
      if (it == trial + 1) trials.push_back({trial, governor.chosen()});
    }
  }
  EXPECT_EQ(omp_get_max_threads(), 2) << "the caller's count is put back";
  omp_set_num_threads(before);
  return trials;
}

std::vector<int> starts(const std::vector<Trial>& trials) {
  std::vector<int> out;
  out.reserve(trials.size());
  for (const Trial& t : trials) out.push_back(t.many_iteration);
  return out;
}

TEST(ThreadGovernor, ClearTeamWinsSpaceTheTrialsOutUpTo512Iterations) {
  const auto trials = run(3000, 1.0, [](int) { return 2.0; });
  EXPECT_EQ(starts(trials), (std::vector<int>{2, 35, 100, 229, 486, 999, 1512, 2025, 2538}));
  for (const Trial& t : trials) EXPECT_EQ(t.chosen, 2);
}

TEST(ThreadGovernor, NarrowTeamWinsAreTimedAgainEvery32Iterations) {
  const auto trials = run(200, 1.0, [](int) { return 1.1; });
  EXPECT_EQ(starts(trials), (std::vector<int>{2, 35, 68, 101, 134, 167}));
}

TEST(ThreadGovernor, OneThreadWinsDoubleTheWaitAndAChangeResetsIt) {
  // One thread wins the first three trials, the team (clearly) the rest: 64, 128, 256, then 32, 64, ...
  const auto trials = run(1000, 1.0, [](int trial) { return trial < 3 ? 0.5 : 2.0; });
  ASSERT_GE(trials.size(), 5U);
  EXPECT_EQ(starts(trials), (std::vector<int>{2, 67, 196, 453, 486, 551, 680, 937}));
  EXPECT_EQ(trials[0].chosen, 1);
  EXPECT_EQ(trials[2].chosen, 1);
  EXPECT_EQ(trials[3].chosen, 2);
  EXPECT_EQ(trials[4].chosen, 2);
}

TEST(ThreadGovernor, SmallIterationsRunOnOneThreadWithoutTrials) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(2);
  {
    ThreadGovernor governor(2, true, 1e3);
    EXPECT_EQ(governor.chosen(), 1);
    EXPECT_EQ(governor.next_trial(), -1);
    for (int it = 1; it <= 100; ++it) {
      governor.begin(it);
      EXPECT_EQ(omp_get_max_threads(), 1);
      governor.record(it, 1.0);
    }
  }
  EXPECT_EQ(omp_get_max_threads(), 2);
  omp_set_num_threads(before);
}

}  // namespace
}  // namespace dnmf::solvers
