#include "nmfk/wilcoxon.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::rank_search {
namespace {

// Upper tail of the standard normal distribution.
double normal_upper(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Counts of subsets of {1..n} by their sum: the exact null distribution of W+ (each of the 2^n sign patterns
// is equally likely). Doubles hold the counts exactly up to 2^53, far above 2^50.
std::vector<double> subset_sum_counts(long long n) {
  const auto max_sum = to_size(n * (n + 1) / 2);
  std::vector<double> counts(max_sum + 1, 0.0);
  counts[0] = 1;
  std::size_t reach = 0;
  for (long long r = 1; r <= n; ++r) {
    const auto ur = to_size(r);
    reach += ur;
    for (std::size_t s = reach; s >= ur; --s) counts[s] += counts[s - ur];
  }
  return counts;
}

}  // namespace

double signed_rank_upper_tail(long long n, double w) {
  if (n < 0 || n > kExactLimit)
    throw Error("signed-rank exact distribution: n must be in 0.." + std::to_string(kExactLimit));
  const std::vector<double> counts = subset_sum_counts(n);
  const double total = std::ldexp(1.0, static_cast<int>(n));
  const double first = std::ceil(w - 1e-9);
  double tail = 0;
  for (std::size_t s = 0; s < counts.size(); ++s)
    if (static_cast<double>(s) >= first) tail += counts[s];
  return std::min(1.0, tail / total);
}

SignedRankResult wilcoxon_signed_rank(const std::vector<double>& x, const std::vector<double>& y,
                                      Alternative alternative) {
  if (x.size() != y.size())
    throw Error("signed-rank test: the samples have different lengths (" + std::to_string(x.size()) + " and " +
                std::to_string(y.size()) + ")");
  std::vector<double> d;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i] - y[i];
    if (std::isnan(v) || v == 0) continue;
    d.push_back(v);
  }
  SignedRankResult r;
  r.n = static_cast<long long>(d.size());
  if (r.n == 0) return r;

  // Average ranks of |d|; ties (equal |d|) share the mean of the ranks they span.
  std::vector<std::size_t> order(d.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return std::abs(d[a]) < std::abs(d[b]); });
  std::vector<double> rank(d.size());
  double tie_term = 0;  // Σ (t³ − t) over groups of t tied values
  bool ties = false;
  for (std::size_t first = 0; first < order.size();) {
    std::size_t last = first + 1;
    while (last < order.size() && std::abs(d[order[last]]) == std::abs(d[order[first]])) ++last;
    const double t = static_cast<double>(last - first);
    const double average = (static_cast<double>(first + 1) + static_cast<double>(last)) / 2;
    for (std::size_t i = first; i < last; ++i) rank[order[i]] = average;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    first = last;
  }
  for (std::size_t i = 0; i < d.size(); ++i)
    if (d[i] > 0) r.statistic += rank[i];

  const double nn = static_cast<double>(r.n);
  const double total = nn * (nn + 1) / 2;
  if (!ties && r.n <= kExactLimit) {
    r.exact = true;
    // The distribution is symmetric: P(W+ ≤ w) = P(W+ ≥ total − w).
    const double upper = signed_rank_upper_tail(r.n, r.statistic);
    const double lower = signed_rank_upper_tail(r.n, total - r.statistic);
    switch (alternative) {
      case Alternative::greater:
        r.p_value = upper;
        break;
      case Alternative::less:
        r.p_value = lower;
        break;
      case Alternative::two_sided:
        r.p_value = std::min(1.0, 2 * std::min(upper, lower));
        break;
    }
    return r;
  }
  const double mean = total / 2;
  const double variance = nn * (nn + 1) * (2 * nn + 1) / 24 - tie_term / 48;
  if (!(variance > 0)) {
    r.p_value = 1;
    return r;
  }
  const double sd = std::sqrt(variance);
  const double diff = r.statistic - mean;
  switch (alternative) {
    case Alternative::greater:
      r.z = (diff - 0.5) / sd;
      r.p_value = normal_upper(r.z);
      break;
    case Alternative::less:
      r.z = (diff + 0.5) / sd;
      r.p_value = normal_upper(-r.z);
      break;
    case Alternative::two_sided:
      r.z = std::max(std::abs(diff) - 0.5, 0.0) / sd;
      r.p_value = std::min(1.0, 2 * normal_upper(r.z));
      break;
  }
  return r;
}

}  // namespace dnmf::rank_search
