// NMFk end to end through the library on planted-rank data: the selected k is the planted one (dense and
// sparse), the centroids are the planted factors, a checkpointed run resumes with identical results, and the
// run reports "no k passed" instead of failing when nothing qualifies. The full 20-seed sweep is
// bench/nmfk_sweep.py (docs/nmfk.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/planted.hpp"
#include "support/error_message.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf {
namespace {

NmfkOptions small_options(index_t truth, int perturbations = 8) {
  NmfkOptions o;
  for (index_t k = std::max<index_t>(2, truth - 2); k <= truth + 2; ++k) o.ks.push_back(k);
  o.perturbations = perturbations;
  o.factor.algorithm = Algorithm::hals;
  o.factor.max_iterations = 1000;
  o.factor.threads = 1;
  return o;
}

// Best cosine between each planted column and the columns of W (1 means found exactly).
double worst_match(const DenseMatrix<double>& truth, const DenseMatrix<double>& w) {
  double worst = 1;
  for (index_t a = 0; a < truth.cols(); ++a) {
    double best = 0;
    for (index_t b = 0; b < w.cols(); ++b) {
      double ab = 0, aa = 0, bb = 0;
      for (index_t i = 0; i < truth.rows(); ++i) {
        ab += truth(i, a) * w(i, b);
        aa += truth(i, a) * truth(i, a);
        bb += w(i, b) * w(i, b);
      }
      best = std::max(best, ab / std::sqrt(aa * bb));
    }
    worst = std::min(worst, best);
  }
  return worst;
}

struct Case {
  index_t rank;
  double density;
  double noise;
  std::uint64_t seed;
};

class PlantedSelection : public testing::TestWithParam<Case> {};

TEST_P(PlantedSelection, SelectsThePlantedRank) {
  const Case c = GetParam();
  PlantedOptions p;
  p.rows = 120;
  p.cols = 90;
  p.rank = c.rank;
  p.density = c.density;
  p.noise = c.noise;
  p.seed = c.seed;
  const Planted<double> planted = make_planted<double>(p);
  NmfkOptions o = small_options(c.rank);
  o.factor.seed = c.seed;
  const NmfkResult<double> r = nmfk<double>(planted.matrix(), o);
  ASSERT_TRUE(r.selection.selected_k.has_value()) << r.selection.message;
  EXPECT_EQ(*r.selection.selected_k, c.rank) << r.selection.message;
  EXPECT_EQ(*r.selection.wilcoxon_k, c.rank) << r.selection.message;
  ASSERT_EQ(r.ranks.size(), o.ks.size());
  for (const auto& k : r.ranks) {
    EXPECT_EQ(k.silhouettes.size(), to_size(k.k));
    EXPECT_EQ(k.perturbation_errors.size(), 8u);
    EXPECT_EQ(k.column_errors.size(), 90u);
    // Exactly the factorisations far above the best fit of their k are left out of the clustering.
    const double best = *std::min_element(k.perturbation_errors.begin(), k.perturbation_errors.end());
    for (int q = 0; q < 8; ++q) {
      const bool rejected = std::count(k.rejected_perturbations.begin(), k.rejected_perturbations.end(), q) > 0;
      EXPECT_EQ(rejected, k.perturbation_errors[to_size(q)] > std::max(o.accept_factor * best, 1e-4));
    }
    if (k.k == c.rank) {
      EXPECT_GE(k.min_silhouette, 0.9);
      // The regression explains A to about the noise level, and the centroids are the planted columns.
      EXPECT_LT(k.rel_error, 2 * c.noise + 0.01);
      EXPECT_GT(worst_match(planted.W, k.W), 0.98);
      EXPECT_TRUE(k.accepted);
    }
    if (k.k > c.rank) {
      EXPECT_FALSE(k.accepted) << "k=" << k.k << " min silhouette " << k.min_silhouette;
    }
    double sum = 0;
    for (index_t i = 0; i < k.W.rows(); ++i) sum += k.W(i, 0);
    EXPECT_NEAR(sum, 1.0, 1e-12) << "centroid columns sum to 1";
  }
  EXPECT_EQ(r.jobs_run, static_cast<int>(o.ks.size()) * 8);
}

// A small sample of the sweep: dense and sparse, ranks 3, 6 and 12, noise 1% to 5%.
INSTANTIATE_TEST_SUITE_P(Sample, PlantedSelection,
                         testing::Values(Case{3, 0.4, 0.01, 1}, Case{6, 1.0, 0.03, 2}, Case{12, 0.4, 0.05, 3}));

// Exact low-rank data without perturbation noise: every fit's error is rounding (1e-9 to 1e-8), and the
// accept factor's relative test left out about half of the fits of each k at random; from the two it kept at
// k = 5, whose clusters agreed by chance, k = 5 was chosen for a rank-4 matrix. Exact fits are always kept.
TEST(PlantedExact, ExactFitsAreNeverLeftOut) {
  PlantedOptions p;
  p.rows = 100;
  p.cols = 80;
  p.rank = 4;
  p.seed = 1;
  const Planted<double> planted = make_planted<double>(p);
  NmfkOptions o = small_options(4, 6);
  o.epsilon = 0;
  o.factor.seed = 1;
  const NmfkResult<double> r = nmfk<double>(planted.matrix(), o);
  for (const auto& k : r.ranks) {
    const double worst = *std::max_element(k.perturbation_errors.begin(), k.perturbation_errors.end());
    if (worst <= 1e-4) {
      EXPECT_TRUE(k.rejected_perturbations.empty()) << "k=" << k.k;
    }
  }
  const auto at4 = std::find_if(r.ranks.begin(), r.ranks.end(), [](const auto& k) { return k.k == 4; });
  ASSERT_NE(at4, r.ranks.end());
  EXPECT_TRUE(at4->rejected_perturbations.empty());
  ASSERT_TRUE(r.selection.selected_k.has_value()) << r.selection.message;
  EXPECT_EQ(*r.selection.selected_k, 4) << r.selection.message;
}

class NmfkRuns : public test::TempDirTest {
 protected:
  Planted<double> planted_ = [] {
    PlantedOptions p;
    p.rows = 60;
    p.cols = 40;
    p.rank = 3;
    p.noise = 0.02;
    p.seed = 4;
    return make_planted<double>(p);
  }();
};

TEST_F(NmfkRuns, CheckpointedRunResumesWithIdenticalResults) {
  NmfkOptions o = small_options(3, 4);
  o.ks = {2, 3, 4};
  o.h_silhouettes = true;
  o.checkpoint_dir = path("ck");
  int progress_calls = 0;
  o.progress = [&](const NmfkProgress&) { ++progress_calls; };
  std::vector<std::string> notices;
  o.notice = [&](const std::string& line) { notices.push_back(line); };
  const NmfkResult<double> first = nmfk<double>(planted_.matrix(), o);
  EXPECT_EQ(progress_calls, 12);
  EXPECT_EQ(first.jobs_run, 12);
  EXPECT_TRUE(std::filesystem::exists(path("ck/k4_p3.job")));

  // Drop two jobs (as if the run had been killed before them): only those run again.
  std::filesystem::remove(path("ck/k2_p0.job"));
  std::filesystem::remove(path("ck/k4_p1.job"));
  progress_calls = 0;
  const NmfkResult<double> second = nmfk<double>(planted_.matrix(), o);
  EXPECT_EQ(second.jobs_loaded, 10);
  EXPECT_EQ(second.jobs_run, 2);
  EXPECT_EQ(progress_calls, 2);
  ASSERT_FALSE(notices.empty());
  EXPECT_THAT(notices.back(), testing::HasSubstr("10 of 12 jobs already finished"));
  ASSERT_EQ(first.ranks.size(), second.ranks.size());
  for (std::size_t i = 0; i < first.ranks.size(); ++i) {
    EXPECT_EQ(first.ranks[i].silhouettes, second.ranks[i].silhouettes);
    EXPECT_EQ(first.ranks[i].h_silhouettes, second.ranks[i].h_silhouettes);
    EXPECT_EQ(first.ranks[i].rel_error, second.ranks[i].rel_error);
    EXPECT_EQ(first.ranks[i].W.storage(), second.ranks[i].W.storage());
  }
  EXPECT_EQ(first.selection.selected_k, second.selection.selected_k);
  EXPECT_EQ(*second.selection.selected_k, 3);
  EXPECT_GT(second.ranks[1].h_min_silhouette, 0.5);

  // A wider range and more perturbations reuse what exists; another epsilon is refused, then restarted.
  o.ks = {2, 3, 4, 5};
  EXPECT_EQ(nmfk<double>(planted_.matrix(), o).jobs_loaded, 12);
  // Extrapolated iterations change every job's numbers: refused as well (they were once reused silently).
  o.factor.extrapolate = true;  // (hals, as small_options runs)
  EXPECT_THAT(test::error_message([&] { (void)nmfk<double>(planted_.matrix(), o); }),
              testing::HasSubstr("extrapolate (none) -> on"));
  o.factor.extrapolate = false;
  o.epsilon = 0.05;
  EXPECT_THAT(test::error_message([&] { (void)nmfk<double>(planted_.matrix(), o); }), testing::HasSubstr("epsilon"));
  o.restart = true;
  EXPECT_EQ(nmfk<double>(planted_.matrix(), o).jobs_loaded, 0);
}

TEST_F(NmfkRuns, NothingPassesIsAnAnswerNotAFailure) {
  NmfkOptions o = small_options(3, 4);
  o.ks = {2, 3};
  o.err_threshold = 1e-9;  // no k fits this well
  const NmfkResult<double> r = nmfk<double>(planted_.matrix(), o);
  EXPECT_FALSE(r.selection.selected_k.has_value());
  EXPECT_GE(r.selection.best_candidate, 2);
  EXPECT_THAT(r.selection.message, testing::HasSubstr("no k passed"));
  for (const auto& k : r.ranks) EXPECT_FALSE(k.accepted);
}

TEST_F(NmfkRuns, FloatPrecisionAndPoissonRun) {
  PlantedOptions p;
  p.rows = 50;
  p.cols = 40;
  p.rank = 3;
  p.seed = 8;
  Planted<float> counts = make_planted<float>(p);
  // Count data for the Poisson resampling: scale and round.
  for (float& v : counts.dense.storage()) v = std::round(v * 40.0f);
  NmfkOptions o = small_options(3, 6);
  o.ks = {2, 3, 4};
  o.perturbation = Perturbation::poisson;
  const NmfkResult<float> r = nmfk<float>(counts.matrix(), o);
  ASSERT_TRUE(r.selection.selected_k.has_value()) << r.selection.message;
  EXPECT_EQ(*r.selection.selected_k, 3);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();  // counts: nothing to warn about
}

// Poisson resampling of data that are not counts is allowed but said, with how many entries it concerns.
TEST_F(NmfkRuns, PoissonOfNonCountDataWarns) {
  DenseMatrix<double> a(planted_.dense);
  index_t fractional = 0;
  for (double& v : a.storage()) {
    v = std::round(v * 40.0);
    if (v > 0 && fractional < 7) {
      v += 0.5;
      ++fractional;
    }
  }
  index_t nonzeros = 0;
  for (double v : a.storage()) nonzeros += v != 0 ? 1 : 0;
  NmfkOptions o = small_options(3, 2);
  o.ks = {2};
  o.perturbation = Perturbation::poisson;
  std::vector<std::string> notices;
  o.notice = [&](const std::string& line) { notices.push_back(line); };
  const NmfkResult<double> r = nmfk<double>(a.view(), o);
  ASSERT_EQ(r.warnings.size(), 1U);
  EXPECT_THAT(r.warnings[0], testing::HasSubstr("but 7 of the " + std::to_string(nonzeros) +
                                                " non-zero entries of A are not whole numbers"));
  EXPECT_THAT(notices, testing::Contains("warning: " + r.warnings[0]));
  o.perturbation = Perturbation::uniform;  // perturbs any data
  EXPECT_TRUE(nmfk<double>(a.view(), o).warnings.empty());
}

TEST_F(NmfkRuns, RefusesBadOptions) {
  auto message = [&](const std::function<void(NmfkOptions&)>& change) {
    NmfkOptions o = small_options(3, 2);
    change(o);
    return test::error_message([&] { (void)nmfk<double>(planted_.matrix(), o); });
  };
  EXPECT_THAT(message([](NmfkOptions& o) { o.ks = {2, 41}; }), testing::HasSubstr("k=41 does not fit"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.ks.clear(); }), testing::HasSubstr("no k"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.perturbations = 0; }), testing::HasSubstr("--perturbations"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.perturbations = 1; }), testing::HasSubstr("must be >= 2"));
  // Far more than any machine holds: refused before the first fit, with the size it would need.
  EXPECT_THAT(message([](NmfkOptions& o) { o.perturbations = 1 << 30; }), testing::HasSubstr("GiB on rank 0"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.epsilon = 1.5; }), testing::HasSubstr("--epsilon"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.groups = 2; }), testing::HasSubstr("--groups 2"));
  EXPECT_THAT(message([](NmfkOptions& o) { o.grid = "2x1"; }), testing::HasSubstr("--grid 2x1"));
  DenseMatrix<double> bad(4, 4, 1.0);
  bad(1, 2) = -1;
  EXPECT_THAT(test::error_message([&] {
                (void)nmfk<double>(MatrixRef<double>{DenseView<const double>(bad.view())}, small_options(2, 2));
              }),
              testing::HasSubstr("row 1, column 2"));
}

}  // namespace
}  // namespace dnmf
