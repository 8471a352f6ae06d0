// NMFk with the cross-validation beside it (NmfkOptions::cv): the planted rank is chosen by both rules, the
// held-out errors are those of cross_validate() with the same ks, seed and solver options, the tables and the
// plot script carry them, and what cannot run is refused before the sweep.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "dnmf/cross_validation.hpp"
#include "dnmf/error.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/planted.hpp"
#include "support/error_message.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf {
namespace {

NmfkOptions cv_options() {
  NmfkOptions o;
  o.ks = {2, 3, 4, 5};
  o.perturbations = 4;
  o.factor.algorithm = Algorithm::hals;
  o.factor.max_iterations = 1000;
  o.factor.threads = 1;
  o.factor.seed = 11;
  o.cv = true;
  o.cv_folds = 3;
  o.cv_holdout = 0.1;
  return o;
}

Planted<double> planted_rank3() {
  PlantedOptions po;
  po.rows = 50;
  po.cols = 40;
  po.rank = 3;
  po.noise = 0.02;
  po.seed = 21;
  return make_planted<double>(po);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NmfkCv : public test::TempDirTest {};

TEST_F(NmfkCv, BothRulesAndTheTables) {
  const Planted<double> planted = planted_rank3();
  const Source source = Source::dense<double>(planted.dense.view());
  const NmfkOptions o = cv_options();
  const NmfkResult<double> r = nmfk<double>(source, o);
  ASSERT_TRUE(r.cv.has_value());
  ASSERT_EQ(r.cv->ranks.size(), r.ranks.size());
  for (std::size_t at = 0; at < r.ranks.size(); ++at) EXPECT_EQ(r.cv->ranks[at].k, r.ranks[at].k);
  EXPECT_EQ(r.selection.selected_k, 3);
  ASSERT_TRUE(r.selection.cv_k.has_value());
  EXPECT_EQ(*r.selection.cv_k, 3);
  EXPECT_EQ(r.cv->selected_k, 3);
  EXPECT_EQ(r.cv->held_out.size(), 3u);

  // The same folds and fits as cross_validate() with NMFk's ks, seed and solver options.
  CrossValidationOptions direct;
  direct.ks = o.ks;
  direct.folds = o.cv_folds;
  direct.holdout = o.cv_holdout;
  direct.factor = o.factor;
  const CrossValidationResult alone = cross_validate<double>(source, direct);
  for (std::size_t at = 0; at < alone.ranks.size(); ++at)
    EXPECT_EQ(alone.ranks[at].fold_errors, r.cv->ranks[at].fold_errors) << "k=" << alone.ranks[at].k;

  const NmfkRunInfo run = nmfk_run_info<double>(source);
  const NmfkOutputs files = write_nmfk_outputs<double>(r, o, run, dir_.string());
  const std::string csv = read_text(files.csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "k,min_silhouette,mean_silhouette,rel_error,accepted,seconds,cv_mean_heldout_error,cv_standard_error,"
            "cv_selected");
  // k=3's line ends with the selected flag 1, the others with 0.
  EXPECT_NE(csv.find("\n3,"), std::string::npos);
  const std::string line3 =
      csv.substr(csv.find("\n3,") + 1, csv.find('\n', csv.find("\n3,") + 1) - csv.find("\n3,") - 1);
  EXPECT_EQ(line3.back(), '1') << line3;
  const auto json = nlohmann::json::parse(read_text(files.json));
  EXPECT_EQ(json["selection"]["cv_rule_k"], 3);
  EXPECT_EQ(json["cross_validation"]["selected_k"], 3);
  EXPECT_EQ(json["cross_validation"]["folds"], 3);
  EXPECT_EQ(json["options"]["cv"], true);
  ASSERT_EQ(json["per_k"].size(), 4u);
  EXPECT_DOUBLE_EQ(json["per_k"][1]["cv_mean_heldout_error"].get<double>(), r.cv->ranks[1].mean);
  EXPECT_EQ(json["per_k"][1]["cv_fold_errors"].size(), 3u);
  // The plot script draws the held-out error (CSV columns 7 and 8) with the CV choice marked.
  const std::string script = read_text(files.gnuplot_script);
  EXPECT_NE(script.find("using 1:7:8 with yerrorlines"), std::string::npos) << script;
  EXPECT_NE(script.find("CV k = 3"), std::string::npos);
  EXPECT_NE(script.find("selected k = 3"), std::string::npos);
}

TEST_F(NmfkCv, WithoutCvNothingChanges) {
  const Planted<double> planted = planted_rank3();
  NmfkOptions o = cv_options();
  o.cv = false;
  o.ks = {3};
  const NmfkResult<double> r = nmfk<double>(Source::dense<double>(planted.dense.view()), o);
  EXPECT_FALSE(r.cv.has_value());
  EXPECT_FALSE(r.selection.cv_k.has_value());
  const NmfkOutputs files = write_nmfk_outputs<double>(r, o, NmfkRunInfo{}, dir_.string());
  const std::string csv = read_text(files.csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "k,min_silhouette,mean_silhouette,rel_error,accepted,seconds");
  EXPECT_EQ(read_text(files.gnuplot_script).find("held-out"), std::string::npos);
  const auto json = nlohmann::json::parse(read_text(files.json));
  EXPECT_FALSE(json.contains("cross_validation"));
  EXPECT_TRUE(json["selection"]["cv_rule_k"].is_null());
}

TEST(NmfkCvOptions, RefusedBeforeTheSweep) {
  const Planted<double> planted = planted_rank3();
  const Source source = Source::dense<double>(planted.dense.view());
  NmfkOptions o = cv_options();
  o.cv_folds = 0;
  EXPECT_NE(test::error_message([&] { (void)nmfk<double>(source, o); }).find("--cv-folds"), std::string::npos);
  o = cv_options();
  o.cv_holdout = 1.0;
  EXPECT_NE(test::error_message([&] { (void)nmfk<double>(source, o); }).find("--cv-holdout"), std::string::npos);
  o = cv_options();
  Context cuda;
  cuda.backend = BackendKind::cuda;  // the context's backend is the one that runs
  const std::string cuda_message = test::error_message([&] { (void)nmfk<double>(source, o, cuda); });
  // Without a GPU the backend itself is refused first; with one, the cross-validation is.
  EXPECT_TRUE(cuda_message.find("--cv") != std::string::npos || cuda_message.find("cuda") != std::string::npos)
      << cuda_message;
  // The in-memory overload lives below the cross-validation: it says which entry point to use.
  o = cv_options();
  const MatrixRef<double> a = planted.dense.view();
  EXPECT_NE(test::error_message([&] { (void)nmfk<double>(a, o); }).find("Source"), std::string::npos);
}

}  // namespace
}  // namespace dnmf
