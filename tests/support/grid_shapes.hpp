// Test helper: every process grid a process count can form, for tests that check each one.
#pragma once

#include <vector>

#include "dist/grid.hpp"

namespace dnmf::test {

/// Every pr x pc with pr * pc == processes, by increasing pr.
inline std::vector<dist::GridShape> grid_shapes(int processes) {
  std::vector<dist::GridShape> shapes;
  for (int pr = 1; pr <= processes; ++pr)
    if (processes % pr == 0) shapes.push_back({pr, processes / pr});
  return shapes;
}

}  // namespace dnmf::test
