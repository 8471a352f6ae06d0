// cross_validate(): a planted rank is found by the held-out error, folds are keyed by the seed, the rule is the
// one-standard-error rule, and bad options are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dnmf/cross_validation.hpp"
#include "dnmf/error.hpp"
#include "dnmf/planted.hpp"
#include "support/error_message.hpp"

namespace dnmf {
namespace {

CrossValidationOptions cv_options(std::vector<index_t> ks) {
  CrossValidationOptions o;
  o.ks = std::move(ks);
  o.folds = 3;
  o.holdout = 0.1;
  o.factor.algorithm = Algorithm::bpp;
  o.factor.max_iterations = 100;
  o.factor.tol = 1e-7;
  o.factor.seed = 4;
  return o;
}

TEST(CrossValidation, FindsThePlantedRank) {
  PlantedOptions po;
  po.rows = 50;
  po.cols = 40;
  po.rank = 3;
  po.noise = 0.02;
  po.seed = 9;
  const Planted<double> planted = make_planted<double>(po);
  const Source source = Source::dense<double>(planted.dense.view());
  const CrossValidationOptions o = cv_options({5, 2, 4, 3, 3});  // any order, duplicates ignored
  const CrossValidationResult r = cross_validate<double>(source, o);
  EXPECT_EQ(r.selected_k, 3);
  ASSERT_EQ(r.ranks.size(), 4u);
  EXPECT_EQ(r.ranks[0].k, 2);
  ASSERT_EQ(r.held_out.size(), 3u);
  EXPECT_EQ(r.observed, 50 * 40);
  for (const index_t held : r.held_out) {
    EXPECT_GT(held, 50 * 40 * 0.07);
    EXPECT_LT(held, 50 * 40 * 0.13);
  }
  // Below the true rank the held-out error is far above the noise; at it, near the noise level.
  EXPECT_GT(r.ranks[0].mean, 3 * r.ranks[1].mean);
  // The rule: the smallest k within one standard error of the best mean.
  double best = 1e300, se = 0;
  for (const auto& k : r.ranks)
    if (k.mean < best) {
      best = k.mean;
      se = k.standard_error;
    }
  for (const auto& k : r.ranks) {
    if (k.k < r.selected_k) {
      EXPECT_GT(k.mean, best + se);
    }
    if (k.k == r.selected_k) {
      EXPECT_LE(k.mean, best + se);
    }
  }
  // Same seed, same folds and errors; another seed, other folds.
  CrossValidationOptions one = o;
  one.ks = {3};
  EXPECT_EQ(cross_validate<double>(source, one).ranks[0].fold_errors, r.ranks[1].fold_errors);
  one.factor.seed = 5;
  EXPECT_NE(cross_validate<double>(source, one).ranks[0].fold_errors, r.ranks[1].fold_errors);
}

TEST(CrossValidation, RefusesBadOptions) {
  PlantedOptions po;
  po.rows = 20;
  po.cols = 10;
  po.rank = 2;
  const Planted<double> planted = make_planted<double>(po);
  const Source source = Source::dense<double>(planted.dense.view());
  CrossValidationOptions o = cv_options({});
  EXPECT_THROW(cross_validate<double>(source, o), UsageError);
  o = cv_options({2});
  o.holdout = 1.5;
  EXPECT_THROW(cross_validate<double>(source, o), UsageError);
  o = cv_options({2});
  o.folds = 0;
  EXPECT_THROW(cross_validate<double>(source, o), UsageError);
  o = cv_options({11});
  const std::string msg = test::error_message([&] { cross_validate<double>(source, o); });
  EXPECT_NE(msg.find("k=11"), std::string::npos) << msg;
}

}  // namespace
}  // namespace dnmf
