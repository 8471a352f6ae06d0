// --grid auto under mpirun: every rank reaches the same choice by the time model (no rank may take another
// grid, or the collectives would not match), report.json on every rank names it, and it is the candidate the
// model predicts fastest.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "dnmf/dnmf.hpp"
#include "dnmf/index.hpp"
#include "dnmf/mpi.hpp"

namespace dnmf {
namespace {

// Rank 0's text, as every rank receives it.
std::string rank0_text(const std::string& mine) {
  int length = static_cast<int>(mine.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string text = mine;
  text.resize(static_cast<std::size_t>(length));
  if (length > 0) MPI_Bcast(text.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

// Whether every rank's test passed its checks so far (a failure on one rank fails the test on all).
bool all_ranks(bool mine) {
  int ok = mine ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return ok == 1;
}

TEST(MpiGridChoice, EveryRankReportsTheSameFastestGrid) {
  const Context context = mpi_context(MPI_COMM_WORLD);
  PlantedOptions planted;
  planted.rows = 800;
  planted.cols = 600;
  planted.rank = 16;
  planted.seed = 3;
  const DenseMatrix<double> a = make_planted<double>(planted).dense;
  FactorOptions o;
  o.rank = 16;
  o.max_iterations = 2;
  o.tol = 0;
  const Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o, context, Gather::none);
  const auto report = nlohmann::json::parse(report_json(run));
  const auto& choice = report.at("grid_choice");
  EXPECT_EQ(report.at("grid"), run.grid);
  EXPECT_EQ(choice.at("chosen"), run.grid);
  EXPECT_EQ(choice.at("rule"), "time model");
  // The chosen grid is the fastest candidate, or the words-only grid within 5% of it.
  double fastest = 1e300, chosen = -1;
  for (const auto& c : choice.at("candidates")) {
    fastest = std::min(fastest, c.at("predicted_seconds_per_iteration").get<double>());
    if (c.at("grid") == run.grid) chosen = c.at("predicted_seconds_per_iteration").get<double>();
  }
  ASSERT_GT(chosen, 0) << "the chosen grid is among the candidates";
  EXPECT_LE(chosen, fastest * 1.05);
  if (context.size() == 2) {
    // The dense column-major block: 1x2 keeps the single pass on contiguous column stripes, though 2x1
    // moves fewer words (issue 14 item 7).
    EXPECT_EQ(run.grid, "1x2");
    EXPECT_EQ(choice.at("by_words"), "2x1");
  }
  const std::string mine = choice.dump();
  EXPECT_TRUE(all_ranks(rank0_text(mine) == mine)) << "a rank reports another grid choice than rank 0: " << mine;
}

TEST(MpiGridChoice, GivenGridIsKept) {
  const Context auto_context = mpi_context(MPI_COMM_WORLD);
  Context context = auto_context;
  context.grid = std::to_string(context.size()) + "x1";
  PlantedOptions planted;
  planted.rows = 120;
  planted.cols = 90;
  planted.rank = 4;
  const DenseMatrix<double> a = make_planted<double>(planted).dense;
  FactorOptions o;
  o.rank = 4;
  o.max_iterations = 1;
  const Factorization<double> run = factor<double>(Source::dense<double>(a.view()), o, context, Gather::none);
  EXPECT_EQ(run.grid, context.grid);
  EXPECT_EQ(run.grid_choice.rule, "given");
  EXPECT_TRUE(run.grid_choice.candidates.empty());
  const auto report = nlohmann::json::parse(report_json(run));
  EXPECT_EQ(report.at("grid_choice").at("rule"), "given");
}

}  // namespace
}  // namespace dnmf
