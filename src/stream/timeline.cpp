#include "stream/timeline.hpp"

#include <algorithm>
#include <utility>

namespace dnmf::stream {
namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint intervals covering the same time as `in` (empty ones dropped).
std::vector<Interval> merged(std::vector<Interval> in) {
  std::erase_if(in, [](const Interval& i) { return !(i.second > i.first); });
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const Interval& i : v) s += i.second - i.first;
  return s;
}

// Total length of the intersection of two sorted disjoint interval lists.
double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double s = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) s += hi - lo;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return s;
}

}  // namespace

OverlapSummary summarise(const Timeline& timeline) {
  OverlapSummary s;
  s.tiles = timeline.tiles.size();
  if (timeline.tiles.empty()) return s;
  std::vector<Interval> copies, computes;
  double first = timeline.tiles.front().copy_start, last = timeline.tiles.front().compute_end;
  for (const TileTimes& t : timeline.tiles) {
    copies.emplace_back(t.copy_start, t.copy_end);
    computes.emplace_back(t.compute_start, t.compute_end);
    first = std::min({first, t.copy_start, t.compute_start});
    last = std::max({last, t.copy_end, t.compute_end});
  }
  const auto c = merged(std::move(copies)), k = merged(std::move(computes));
  s.wall = last - first;
  s.copy_busy = length(c);
  s.compute_busy = length(k);
  s.overlapped = intersection(c, k);
  const double shorter = std::min(s.copy_busy, s.compute_busy);
  if (s.tiles >= 2 && shorter > 0) s.overlap_fraction = s.overlapped / shorter;
  if (s.wall > 0) s.copy_utilisation = s.copy_busy / s.wall;
  if (s.copy_busy > 0) s.copy_bandwidth = timeline.bytes_copied / s.copy_busy;
  return s;
}

}  // namespace dnmf::stream
