#include "nmfk/hungarian.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::rank_search {

std::vector<int> hungarian(const std::vector<double>& cost_in, int n) {
  if (n < 0 || cost_in.size() != to_size(n) * to_size(n))
    throw Error("hungarian: expected a " + std::to_string(n) + "x" + std::to_string(n) + " cost matrix");
  if (n == 0) return {};
  // A NaN would break the comparisons the method relies on; it becomes "worse than anything finite".
  double worst = 0;
  for (double c : cost_in)
    if (std::isfinite(c)) worst = std::max(worst, std::abs(c));
  std::vector<double> cost(cost_in);
  for (double& c : cost)
    if (!std::isfinite(c)) c = 2 * worst + 1;

  // Shortest augmenting paths with row potentials u and column potentials v (1-based; column 0 is virtual).
  const double inf = std::numeric_limits<double>::infinity();
  const auto un = to_size(n);
  std::vector<double> u(un + 1, 0.0), v(un + 1, 0.0), minv(un + 1);
  std::vector<int> p(un + 1, 0), way(un + 1, 0);
  std::vector<char> used(un + 1);
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::fill(minv.begin(), minv.end(), inf);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[to_size(j0)] = 1;
      const int i0 = p[to_size(j0)];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        const auto uj = to_size(j);
        if (used[uj]) continue;
        const double cur = cost[to_size(i0 - 1) * un + uj - 1] - u[to_size(i0)] - v[uj];
        if (cur < minv[uj]) {
          minv[uj] = cur;
          way[uj] = j0;
        }
        if (minv[uj] < delta) {
          delta = minv[uj];
          j1 = j;
        }
      }
      for (int j = 0; j <= n; ++j) {
        const auto uj = to_size(j);
        if (used[uj]) {
          u[to_size(p[uj])] += delta;
          v[uj] -= delta;
        } else {
          minv[uj] -= delta;
        }
      }
      j0 = j1;
    } while (p[to_size(j0)] != 0);
    do {
      const int j1 = way[to_size(j0)];
      p[to_size(j0)] = p[to_size(j1)];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> assignment(un, -1);
  for (int j = 1; j <= n; ++j) assignment[to_size(p[to_size(j)] - 1)] = j - 1;
  return assignment;
}

}  // namespace dnmf::rank_search
