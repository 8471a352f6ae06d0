// The Wilcoxon signed-rank test for paired samples, written here (no statistics library in the build):
// the exact null distribution for small samples without ties, else the normal approximation with the tie
// correction of the variance and a continuity correction.
#pragma once

#include <vector>

namespace dnmf::rank_search {

/// The alternative hypothesis about the differences d = x − y.
enum class Alternative {
  greater,  ///< d tends to be positive (x > y)
  less,     ///< d tends to be negative
  two_sided,
};

/// Outcome of the test.
struct SignedRankResult {
  double statistic = 0;  ///< W+: sum of the ranks of |d| over the positive differences (average ranks for ties)
  long long n = 0;       ///< pairs with a non-zero difference (zeros are dropped, Wilcoxon's convention)
  double p_value = 1;
  bool exact = false;  ///< p from the exact distribution of W+ (n ≤ exact_limit and no ties)
  double z = 0;        ///< the normal approximation's statistic (0 when exact)
};

/// Largest number of non-zero differences for which the exact distribution is used.
inline constexpr long long kExactLimit = 50;

/// Tests the paired samples x and y (same length; NaN pairs are dropped). Throws dnmf::Error when the lengths
/// differ. With no non-zero difference the p-value is 1.
SignedRankResult wilcoxon_signed_rank(const std::vector<double>& x, const std::vector<double>& y,
                                      Alternative alternative);

/// P(W+ ≥ w) under the null hypothesis for n untied non-zero differences (exact; n ≤ kExactLimit).
double signed_rank_upper_tail(long long n, double w);

}  // namespace dnmf::rank_search
