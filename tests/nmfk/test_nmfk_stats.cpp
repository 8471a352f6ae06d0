// The statistics of NMFk against independent references: the signed-rank test against textbook tables and
// hand-computed normal approximations, the Hungarian method against brute force over permutations,
// silhouettes against a plain-loop transcription of the definition, and the median clustering on columns
// whose true grouping is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "nmfk/clustering.hpp"
#include "nmfk/hungarian.hpp"
#include "nmfk/silhouette.hpp"
#include "nmfk/wilcoxon.hpp"

namespace dnmf::rank_search {
namespace {

// ---- Wilcoxon signed-rank ------------------------------------------------------------------------------

// Critical values of T = min(W+, W-) from the classic table (n = 10 and n = 20), with the tail probabilities the
// table lists: P(T <= t) for one tail. By symmetry P(W+ >= n(n+1)/2 - t) equals P(W+ <= t).
TEST(Wilcoxon, ExactTailMatchesTextbookTable) {
  EXPECT_NEAR(signed_rank_upper_tail(10, 55 - 10), 0.0420, 5e-5);
  EXPECT_NEAR(signed_rank_upper_tail(10, 55 - 8), 0.0244, 5e-5);
  EXPECT_NEAR(signed_rank_upper_tail(10, 55 - 5), 0.0098, 5e-5);
  EXPECT_NEAR(signed_rank_upper_tail(10, 55 - 3), 0.0049, 5e-5);
  EXPECT_NEAR(signed_rank_upper_tail(20, 210 - 52), 0.0242, 5e-5);
  // Counted by hand for n = 5 (32 equally likely sign patterns): W+ = 15 only for {1,2,3,4,5} and W+ = 14 only
  // for {2,3,4,5}, so P(W+ >= 15) = 1/32 and P(W+ >= 14) = 2/32.
  EXPECT_DOUBLE_EQ(signed_rank_upper_tail(5, 15), 1.0 / 32);
  EXPECT_DOUBLE_EQ(signed_rank_upper_tail(5, 14), 2.0 / 32);
  EXPECT_DOUBLE_EQ(signed_rank_upper_tail(5, 0), 1.0);
  EXPECT_DOUBLE_EQ(signed_rank_upper_tail(5, 16), 0.0);
}

TEST(Wilcoxon, ExactOneSidedAndTwoSided) {
  // Five positive differences of distinct size: W+ = 15, the most extreme value.
  const std::vector<double> x = {1.1, 2.2, 3.3, 4.4, 5.5}, y = {1.0, 2.0, 3.0, 4.0, 5.0};
  const SignedRankResult g = wilcoxon_signed_rank(x, y, Alternative::greater);
  EXPECT_TRUE(g.exact);
  EXPECT_EQ(g.n, 5);
  EXPECT_DOUBLE_EQ(g.statistic, 15);
  EXPECT_DOUBLE_EQ(g.p_value, 1.0 / 32);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(x, y, Alternative::less).p_value, 1.0);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(x, y, Alternative::two_sided).p_value, 2.0 / 32);
  EXPECT_DOUBLE_EQ(wilcoxon_signed_rank(y, x, Alternative::less).p_value, 1.0 / 32);
}

TEST(Wilcoxon, NormalApproximationWithTiesAndZerosByHand) {
  // d = x - y = 1, -2, 2, 3, 3, 3, 4, -5, 6, 7 and one zero (dropped). |d| ranks: 1 -> 1; 2, 2 -> 2.5;
  // 3, 3, 3 -> 5; 4 -> 7; 5 -> 8; 6 -> 9; 7 -> 10. W+ = 55 - 2.5 - 8 = 44.5. Ties give Σ(t³ - t) = 6 + 24 = 30, so
  // var = 10·11·21/24 - 30/48 = 95.625; greater: z = (44.5 - 27.5 - 0.5)/sqrt(95.625) = 1.687323,
  // p = 1 - Φ(z) = 0.0457706; less: z = (44.5 - 27.5 + 0.5)/sd, p = Φ(z) = 0.963240.
  const std::vector<double> d = {1, -2, 2, 3, 3, 3, 4, -5, 6, 7, 0};
  std::vector<double> x(d.size()), y(d.size(), 10.0);
  for (std::size_t i = 0; i < d.size(); ++i) x[i] = 10.0 + d[i];
  const SignedRankResult g = wilcoxon_signed_rank(x, y, Alternative::greater);
  EXPECT_FALSE(g.exact);
  EXPECT_EQ(g.n, 10);
  EXPECT_DOUBLE_EQ(g.statistic, 44.5);
  EXPECT_NEAR(g.z, 1.6873229754642152, 1e-12);
  EXPECT_NEAR(g.p_value, 0.045770632744488504, 1e-12);
  EXPECT_NEAR(wilcoxon_signed_rank(x, y, Alternative::less).p_value, 0.9632396720707345, 1e-12);
  EXPECT_NEAR(wilcoxon_signed_rank(x, y, Alternative::two_sided).p_value, 2 * 0.045770632744488504, 1e-12);
}

TEST(Wilcoxon, LargeSampleUsesNormalApproximation) {
  // 60 untied differences, all positive: W+ = 1830, mean 915, var = 60·61·121/24 = 18452.5.
  std::vector<double> x, y;
  for (int i = 1; i <= 60; ++i) {
    x.push_back(i * 0.5);
    y.push_back(0);
  }
  const SignedRankResult r = wilcoxon_signed_rank(x, y, Alternative::greater);
  EXPECT_FALSE(r.exact);
  const double z = (1830 - 915 - 0.5) / std::sqrt(18452.5);
  EXPECT_NEAR(r.z, z, 1e-12);
  EXPECT_NEAR(r.p_value, 0.5 * std::erfc(z / std::sqrt(2.0)), 1e-15);
  EXPECT_LT(r.p_value, 1e-10);
}

TEST(Wilcoxon, DegenerateInputs) {
  const std::vector<double> same = {1, 2, 3};
  const SignedRankResult r = wilcoxon_signed_rank(same, same, Alternative::greater);
  EXPECT_EQ(r.n, 0);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_THROW(wilcoxon_signed_rank({1, 2}, {1}, Alternative::greater), Error);
}

// ---- Hungarian --------------------------------------------------------------------------------------------

double brute_force_minimum(const std::vector<double>& cost, int n) {
  std::vector<int> perm(to_size(n));
  std::iota(perm.begin(), perm.end(), 0);
  double best = std::numeric_limits<double>::infinity();
  do {
    double s = 0;
    for (int i = 0; i < n; ++i) s += cost[to_size(i) * to_size(n) + to_size(perm[to_size(i)])];
    best = std::min(best, s);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

TEST(Hungarian, MatchesBruteForceOnRandomMatrices) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 3);
  std::uniform_int_distribution<int> small(0, 3);
  for (int n = 1; n <= 7; ++n)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> cost(to_size(n * n));
      // Half the trials with many ties (small integers), where greedy choices go wrong most easily.
      for (double& c : cost) c = trial % 2 ? u(rng) : small(rng);
      const std::vector<int> a = hungarian(cost, n);
      std::vector<int> sorted(a);
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[to_size(i)], i) << "not a permutation";
      double total = 0;
      for (int i = 0; i < n; ++i) total += cost[to_size(i) * to_size(n) + to_size(a[to_size(i)])];
      EXPECT_NEAR(total, brute_force_minimum(cost, n), 1e-12) << "n=" << n << " trial " << trial;
    }
}

TEST(Hungarian, NanIsWorstAndShapeChecked) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Row 0 must take column 1 since column 0 is NaN for it.
  const std::vector<int> a = hungarian({nan, 5, 0, 9}, 2);
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(a[1], 0);
  EXPECT_THROW(hungarian({1, 2, 3}, 2), Error);
  EXPECT_TRUE(hungarian({}, 0).empty());
}

// ---- Silhouettes ------------------------------------------------------------------------------------------

// The definition, transcribed directly: cosine distances, a(i) over the own cluster without i, b(i) the smallest
// mean distance to another cluster, s = (b - a) / max(a, b); s = 0 for a singleton.
std::vector<double> reference_silhouettes(const DenseMatrix<double>& x, const std::vector<int>& labels, int k) {
  const index_t n = x.rows();
  auto cosine = [&](index_t a, index_t b) {
    double ab = 0, aa = 0, bb = 0;
    for (index_t i = 0; i < x.cols(); ++i) {
      ab += x(a, i) * x(b, i);
      aa += x(a, i) * x(a, i);
      bb += x(b, i) * x(b, i);
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
  };
  std::vector<double> s(to_size(n));
  for (index_t v = 0; v < n; ++v) {
    std::vector<double> sum(to_size(k), 0.0), count(to_size(k), 0.0);
    for (index_t w = 0; w < n; ++w) {
      if (w == v) continue;
      sum[to_size(labels[to_size(w)])] += std::max(0.0, 1 - cosine(v, w));
      count[to_size(labels[to_size(w)])] += 1;
    }
    const int own = labels[to_size(v)];
    if (count[to_size(own)] == 0) {
      s[to_size(v)] = 0;
      continue;
    }
    const double a = sum[to_size(own)] / count[to_size(own)];
    double b = std::numeric_limits<double>::infinity();
    for (int c = 0; c < k; ++c)
      if (c != own && count[to_size(c)] > 0) b = std::min(b, sum[to_size(c)] / count[to_size(c)]);
    s[to_size(v)] = (b - a) / std::max(a, b);
  }
  return s;
}

TEST(Silhouettes, MatchPlainLoopDefinition) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  const index_t k = 4, per = 5;
  DenseMatrix<double> x(k * per, 12);
  std::vector<int> labels;
  for (index_t v = 0; v < k * per; ++v) {
    labels.push_back(static_cast<int>((v * 7) % k));
    for (index_t i = 0; i < x.cols(); ++i) x(v, i) = u(rng) + (i % k == labels.back() ? 1.5 : 0.0);
  }
  auto host = backend::make_kernels<double>(BackendKind::cpu);
  const Silhouettes s = cosine_silhouettes(*host, x, labels, k);
  const std::vector<double> ref = reference_silhouettes(x, labels, k);
  double mean = 0;
  std::vector<double> per_cluster(k, 0.0);
  for (std::size_t v = 0; v < ref.size(); ++v) {
    EXPECT_NEAR(s.per_vector[v], ref[v], 1e-12);
    mean += ref[v] / static_cast<double>(ref.size());
    per_cluster[to_size(labels[v])] += ref[v] / per;
  }
  EXPECT_NEAR(s.mean, mean, 1e-12);
  for (int c = 0; c < k; ++c) EXPECT_NEAR(s.per_cluster[to_size(c)], per_cluster[to_size(c)], 1e-12);
  EXPECT_NEAR(s.min, *std::min_element(per_cluster.begin(), per_cluster.end()), 1e-12);
  EXPECT_GT(s.min, 0.3);  // the clusters were planted apart
}

TEST(Silhouettes, Conventions) {
  auto host = backend::make_kernels<double>(BackendKind::cpu);
  DenseMatrix<double> x(3, 2);
  x(0, 0) = 1;
  x(1, 0) = 1;
  x(1, 1) = 0.1;
  x(2, 1) = 1;
  // One cluster: trivially stable.
  const Silhouettes one = cosine_silhouettes(*host, x, {0, 0, 0}, 1);
  EXPECT_DOUBLE_EQ(one.min, 1.0);
  // A singleton gets 0.
  const Silhouettes two = cosine_silhouettes(*host, x, {0, 0, 1}, 2);
  EXPECT_DOUBLE_EQ(two.per_vector[2], 0.0);
  EXPECT_THROW(cosine_silhouettes(*host, x, {0, 0}, 2), Error);
  EXPECT_THROW(cosine_silhouettes(*host, x, {0, 0, 5}, 2), Error);
}

// ---- Clustering -------------------------------------------------------------------------------------------

TEST(Clustering, MediansByHand) {
  // Two clusters of three 2-vectors: medians of {1, 5, 3} and {2, 2, 8} etc.
  DenseMatrix<double> x(6, 2);
  const double values[6][2] = {{1, 2}, {10, 0}, {5, 2}, {11, 1}, {3, 8}, {12, 4}};
  for (int v = 0; v < 6; ++v)
    for (int i = 0; i < 2; ++i) x(v, i) = values[v][i];
  const DenseMatrix<double> m = cluster_medians(x, {0, 1, 0, 1, 0, 1}, 2);
  EXPECT_DOUBLE_EQ(m(0, 0), 3);
  EXPECT_DOUBLE_EQ(m(1, 0), 2);
  EXPECT_DOUBLE_EQ(m(0, 1), 11);
  EXPECT_DOUBLE_EQ(m(1, 1), 1);
  // An even count averages the two middle values.
  const DenseMatrix<double> even = cluster_medians(x, {0, 0, 0, 0, 1, 1}, 2);
  EXPECT_DOUBLE_EQ(even(0, 0), 7.5);  // {1, 10, 5, 11}
  EXPECT_DOUBLE_EQ(even(0, 1), 7.5);  // {3, 12}
}

TEST(Clustering, RecoversPermutedNoisyColumns) {
  // P perturbations of the same k basis vectors, each with its columns shuffled and a little noise: every
  // cluster must collect the P copies of one basis vector, one per perturbation.
  const index_t k = 5, P = 7;
  const index_t d = 40;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.02);
  DenseMatrix<double> basis(d, k);
  for (int l = 0; l < k; ++l)
    for (index_t i = 0; i < d; ++i) basis(i, l) = u(rng) < 0.4 ? u(rng) : 0.0;
  DenseMatrix<double> x(k * P, d);
  std::vector<int> truth(to_size(k * P));
  for (int p = 0; p < P; ++p) {
    std::vector<int> perm(k);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int l = 0; l < k; ++l) {
      truth[to_size(p * k + l)] = perm[to_size(l)];
      for (index_t i = 0; i < d; ++i) x(p * k + l, i) = std::max(0.0, basis(i, perm[to_size(l)]) + noise(rng));
    }
  }
  normalise_rows(x);
  auto host = backend::make_kernels<double>(BackendKind::cpu);
  const Clustering c = cluster_columns(*host, x, k, P, 3, 50);
  EXPECT_TRUE(c.converged);
  // Labels agree with the truth up to one relabelling of the clusters.
  std::vector<int> map(k, -1);
  for (std::size_t v = 0; v < truth.size(); ++v) {
    int& m = map[to_size(truth[v])];
    if (m < 0) m = c.labels[v];
    EXPECT_EQ(c.labels[v], m) << "vector " << v;
  }
  for (int p = 0; p < P; ++p) {
    std::vector<int> seen(c.labels.begin() + p * k, c.labels.begin() + (p + 1) * k);
    std::sort(seen.begin(), seen.end());
    for (int l = 0; l < k; ++l) EXPECT_EQ(seen[to_size(l)], l) << "one member per perturbation";
  }
  const Silhouettes s = cosine_silhouettes(*host, x, c.labels, k);
  EXPECT_GT(s.min, 0.9);
  EXPECT_THROW(cluster_columns(*host, x, k, P + 1, 0, 5), Error);
}

}  // namespace
}  // namespace dnmf::rank_search
