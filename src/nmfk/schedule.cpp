#include "nmfk/schedule.hpp"

#include <algorithm>

#include "dist/grid.hpp"
#include "dnmf/index.hpp"

namespace dnmf::rank_search {

int group_of(int rank, int size, int groups) {
  for (int g = 0; g < groups; ++g)
    if (rank < dist::block_range(size, groups, g).last) return g;
  return groups - 1;
}

int group_root(int g, int size, int groups) { return static_cast<int>(dist::block_range(size, groups, g).first); }

std::vector<std::vector<Job>> schedule_jobs(std::vector<Job> jobs, int groups) {
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.k != b.k ? a.k > b.k : a.p < b.p; });
  std::vector<std::vector<Job>> plan(to_size(std::max(groups, 1)));
  std::vector<index_t> load(plan.size(), 0);
  for (const Job& job : jobs) {
    const auto g = to_size(std::min_element(load.begin(), load.end()) - load.begin());
    plan[g].push_back(job);
    load[g] += job.k;
  }
  return plan;
}

}  // namespace dnmf::rank_search
