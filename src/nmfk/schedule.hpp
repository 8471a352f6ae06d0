// Process groups and the order of work (DESIGN §6): the ranks are split into consecutive groups, and the
// independent (k, perturbation) jobs are dealt to the groups largest k first, each to the group with the
// least work so far (a job's cost is taken as proportional to k). Every rank computes the same plan, so no
// message is needed to agree on it.
#pragma once

#include <vector>

#include "dnmf/matrix.hpp"

namespace dnmf::rank_search {

/// One factorisation of a perturbed matrix.
struct Job {
  index_t k = 0;
  int p = 0;
  bool operator==(const Job&) const = default;
};

/// The group of world rank `rank` when `size` ranks form `groups` consecutive groups (sizes differ by ≤ 1).
int group_of(int rank, int size, int groups);
/// The first world rank of group `g` (its root, which gathers and writes the group's results).
int group_root(int g, int size, int groups);

/// Deals `jobs` to `groups` groups: largest k first (then lower p), each to the least-loaded group (lower
/// index on ties). Result[g] lists group g's jobs in the order it runs them.
std::vector<std::vector<Job>> schedule_jobs(std::vector<Job> jobs, int groups);

}  // namespace dnmf::rank_search
