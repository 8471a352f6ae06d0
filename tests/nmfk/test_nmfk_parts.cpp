// The parts of NMFk around the statistics: perturbations (bounds, determinism, independence of the block
// split, Poisson moments), the k range, the job schedule, the checkpoint store, the selection rules on
// constructed figures, and the regression against dnmf::transform.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/checkpoint.hpp"
#include "nmfk/perturb.hpp"
#include "nmfk/provider.hpp"
#include "nmfk/regression.hpp"
#include "nmfk/schedule.hpp"
#include "nmfk/selection.hpp"
#include "support/error_message.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf::rank_search {
namespace {

namespace fs = std::filesystem;

MatrixBlock<double> dense_block(const DenseMatrix<double>& a) {
  MatrixBlock<double> b;
  b.dense = a;
  return b;
}

// ---- Perturbations ----------------------------------------------------------------------------------------

TEST(Perturbation, UniformStaysWithinBoundsAndIsDeterministic) {
  const DenseMatrix<double> a = test::random_dense<double>(30, 20, 1, 0.3);
  const double eps = 0.05;
  const MatrixBlock<double> p1 = perturb_block(dense_block(a), 0, 0, 30, Perturbation::uniform, eps, 9, 1);
  const MatrixBlock<double> again = perturb_block(dense_block(a), 0, 0, 30, Perturbation::uniform, eps, 9, 1);
  const MatrixBlock<double> p2 = perturb_block(dense_block(a), 0, 0, 30, Perturbation::uniform, eps, 9, 2);
  double mean_factor = 0;
  int counted = 0, differ = 0;
  for (index_t j = 0; j < 20; ++j)
    for (index_t i = 0; i < 30; ++i) {
      const double v = a(i, j), x = p1.dense(i, j);
      EXPECT_EQ(x, again.dense(i, j));
      if (v == 0) {
        EXPECT_EQ(x, 0.0);
        continue;
      }
      EXPECT_GE(x, v * (1 - eps) - 1e-15);
      EXPECT_LE(x, v * (1 + eps) + 1e-15);
      mean_factor += x / v;
      ++counted;
      differ += p2.dense(i, j) != x;
    }
  mean_factor /= counted;
  // The factor 1 + ε(2U − 1) has mean 1 and standard deviation ε/√3.
  EXPECT_NEAR(mean_factor, 1.0, 4 * eps / std::sqrt(3.0 * counted));
  EXPECT_GT(differ, counted * 9 / 10) << "perturbation 2 draws other numbers than perturbation 1";
}

TEST(Perturbation, UniformBlocksDrawEachEntrysOwnNumber) {
  // Columns and rows longer than the generator's runs, a block away from the origin: every entry is
  // a·(1 + ε(2U − 1)) with U = perturbation_uniform at the entry's global counter, dense and sparse alike. To
  // rounding: the library contracts the expression into multiply-adds where this test's build may not; another
  // entry's U would be off by about ε.
  const index_t m = 1300, n = 3, row0 = 2, col0 = 4, m_global = 1400;
  const DenseMatrix<double> a = test::random_dense<double>(m, n, 7, 0.2);
  const double eps = 0.03;
  const MatrixBlock<double> dense =
      perturb_block(dense_block(a), row0, col0, m_global, Perturbation::uniform, eps, 11, 5);
  const CsrMatrix<double> at = test::to_csr(a);  // rows of 3: the scattered counters
  MatrixBlock<double> sparse_in;
  sparse_in.sparse = true;
  sparse_in.csr = at;
  const MatrixBlock<double> sparse = perturb_block(sparse_in, row0, col0, m_global, Perturbation::uniform, eps, 11, 5);
  const auto expected = [&](index_t i, index_t j) {
    const double v = a(i, j);
    if (v == 0) return 0.0;
    const auto counter = static_cast<std::uint64_t>(row0 + i) + static_cast<std::uint64_t>(col0 + j) * m_global;
    return v * (1 + eps * (2 * perturbation_uniform(11, 5, counter) - 1));
  };
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) ASSERT_NEAR(dense.dense(i, j), expected(i, j), 1e-15 * a(i, j)) << i << "," << j;
  const CsrMatrix<double>& s = sparse.csr;
  for (index_t i = 0; i < m; ++i)
    for (index_t q = s.indptr()[to_size(i)]; q < s.indptr()[to_size(i + 1)]; ++q)
      ASSERT_NEAR(s.values()[to_size(q)], expected(i, s.indices()[to_size(q)]), 1e-15 * a(i, s.indices()[to_size(q)]))
          << i;
  // A sparse row longer than a run: the transpose's 3 rows of up to 1300 entries.
  const DenseMatrix<double> t = [&] {
    DenseMatrix<double> x(n, m);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) x(j, i) = a(i, j);
    return x;
  }();
  MatrixBlock<double> wide;
  wide.sparse = true;
  wide.csr = test::to_csr(t);
  const MatrixBlock<double> wide_p = perturb_block(wide, 0, 0, n, Perturbation::uniform, eps, 11, 5);
  for (index_t r = 0; r < n; ++r)
    for (index_t q = wide.csr.indptr()[to_size(r)]; q < wide.csr.indptr()[to_size(r + 1)]; ++q) {
      const index_t c = wide.csr.indices()[to_size(q)];
      const double v = wide.csr.values()[to_size(q)];
      const auto counter = static_cast<std::uint64_t>(r) + static_cast<std::uint64_t>(c) * n;
      ASSERT_NEAR(wide_p.csr.values()[to_size(q)], v * (1 + eps * (2 * perturbation_uniform(11, 5, counter) - 1)),
                  1e-15 * v);
    }
}

TEST(Perturbation, ABlockEqualsTheSameBlockOfThePerturbedWhole) {
  // Keyed by global index: the split of A over processes cannot change A_p.
  const DenseMatrix<double> a = test::random_dense<double>(17, 13, 2, 0.4);
  for (Perturbation kind : {Perturbation::uniform, Perturbation::poisson}) {
    const MatrixBlock<double> whole = perturb_block(dense_block(a), 0, 0, 17, kind, 0.1, 4, 3);
    const BlockRequest r{5, 12, 3, 10, nullptr};
    const MatrixRef<double> ref{DenseView<const double>(a.view())};
    const MatrixBlock<double> part = perturb_block(slice_block<double>(ref, r), 5, 3, 17, kind, 0.1, 4, 3);
    const CsrMatrix<double> csr = test::to_csr(a);
    const MatrixRef<double> sparse_ref{csr.view()};
    const MatrixBlock<double> sparse_part =
        perturb_block(slice_block<double>(sparse_ref, r), 5, 3, 17, kind, 0.1, 4, 3);
    ASSERT_TRUE(sparse_part.sparse);
    const auto& s = sparse_part.csr;
    for (index_t i = 0; i < 7; ++i) {
      for (index_t j = 0; j < 7; ++j) EXPECT_EQ(part.dense(i, j), whole.dense(5 + i, 3 + j));
      for (index_t q = s.indptr()[to_size(i)]; q < s.indptr()[to_size(i + 1)]; ++q)
        EXPECT_EQ(s.values()[to_size(q)], whole.dense(5 + i, 3 + s.indices()[to_size(q)]));
    }
  }
}

TEST(Perturbation, PoissonMomentsMatchTheMean) {
  // Inversion (λ = 3) and transformed rejection (λ = 60): sample mean and variance both estimate λ.
  for (double lambda : {3.0, 60.0}) {
    const int n = 40000;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n; ++i) {
      const double x = poisson_draw(lambda, 5, 0, static_cast<std::uint64_t>(i));
      ASSERT_EQ(x, std::floor(x));
      ASSERT_GE(x, 0);
      sum += x;
      sum2 += x * x;
    }
    const double mean = sum / n, variance = sum2 / n - mean * mean;
    EXPECT_NEAR(mean, lambda, 5 * std::sqrt(lambda / n)) << lambda;
    // Var of the sample variance of a Poisson ≈ (λ + 2λ²)/n.
    EXPECT_NEAR(variance, lambda, 5 * std::sqrt((lambda + 2 * lambda * lambda) / n)) << lambda;
  }
  EXPECT_EQ(poisson_draw(0.0, 1, 0, 0), 0.0);
}

TEST(Perturbation, JobSeedsDiffer) {
  std::map<std::uint64_t, int> seen;
  for (index_t k = 1; k <= 20; ++k)
    for (int p = 0; p < 20; ++p) ++seen[job_seed(1, k, p)];
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_NE(job_seed(1, 3, 0), job_seed(2, 3, 0));
}

// ---- k range and schedule ---------------------------------------------------------------------------------

TEST(KRange, ParsesAndRefuses) {
  EXPECT_EQ(parse_k_range("2:5"), (std::vector<index_t>{2, 3, 4, 5}));
  EXPECT_EQ(parse_k_range("2:20:6"), (std::vector<index_t>{2, 8, 14, 20}));
  EXPECT_EQ(parse_k_range("7"), (std::vector<index_t>{7}));
  for (const char* bad : {"0:3", "5:2", "a:b", "2:4:0", "1:2:3:4", "", "2:", "-1:3", "1:1000000000"})
    EXPECT_THROW(parse_k_range(bad), Error) << bad;
  EXPECT_THAT(test::error_message([] { parse_k_range("5:2"); }), testing::HasSubstr("5:2"));
}

TEST(Schedule, LargestFirstBalancedAndComplete) {
  std::vector<Job> jobs;
  for (index_t k = 2; k <= 9; ++k)
    for (int p = 0; p < 5; ++p) jobs.push_back({k, p});
  const auto plan = schedule_jobs(jobs, 3);
  ASSERT_EQ(plan.size(), 3u);
  std::vector<Job> all;
  std::vector<index_t> load;
  for (const auto& group : plan) {
    for (std::size_t i = 1; i < group.size(); ++i) EXPECT_GE(group[i - 1].k, group[i].k) << "largest k first";
    all.insert(all.end(), group.begin(), group.end());
    index_t l = 0;
    for (const Job& j : group) l += j.k;
    load.push_back(l);
  }
  EXPECT_EQ(all.size(), jobs.size());
  for (const Job& j : jobs) EXPECT_EQ(std::count(all.begin(), all.end(), j), 1);
  EXPECT_LE(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()), 9);
  EXPECT_EQ(plan[0].front().k, 9);

  // 5 ranks in 2 groups: {0, 1, 2} and {3, 4}.
  EXPECT_EQ(group_of(2, 5, 2), 0);
  EXPECT_EQ(group_of(3, 5, 2), 1);
  EXPECT_EQ(group_root(1, 5, 2), 3);
  EXPECT_EQ(group_of(3, 4, 4), 3);
}

// ---- Checkpoints ------------------------------------------------------------------------------------------

class Checkpoints : public test::TempDirTest {
 protected:
  static Fingerprint fingerprint(const std::string& epsilon = "0.03", double sum = 10) {
    Fingerprint f;
    f.data = {{"rows", "4"}, {"cols", "3"}};
    f.options = {{"epsilon", epsilon}, {"algo", "hals"}};
    f.sum = sum;
    f.sum_squares = 30;
    return f;
  }
  static JobRecord record(index_t k, int p) {
    JobRecord r;
    r.k = k;
    r.p = p;
    r.rel_error = 0.125;
    r.seconds = 1.5;
    r.iterations = 42;
    r.W = DenseMatrix<double>(4, k);
    r.H = DenseMatrix<double>(k, 3);
    for (std::size_t i = 0; i < r.W.storage().size(); ++i) r.W.storage()[i] = 0.1 * static_cast<double>(i) + p;
    for (std::size_t i = 0; i < r.H.storage().size(); ++i) r.H.storage()[i] = 1.0 / (1.0 + static_cast<double>(i));
    return r;
  }
};

TEST_F(Checkpoints, SaveLoadResumeRefuseRestart) {
  std::string problem;
  std::string job_2_0;
  {
    CheckpointStore store(path("ck"));
    EXPECT_EQ(store.open(fingerprint(), false), "");
    EXPECT_TRUE(fs::exists(path("ck/manifest.json")));
    EXPECT_FALSE(store.load(2, 0, 4, 3, &problem).has_value());
    EXPECT_EQ(problem, "");
    store.save(record(2, 0));
    store.save(record(2, 1));
    job_2_0 = store.job_path(2, 0);
  }

  auto again = std::make_unique<CheckpointStore>(path("ck"));
  // A sum differing only by rounding (another process count) still matches.
  EXPECT_EQ(again->open(fingerprint("0.03", 10 * (1 + 1e-13)), false), "");
  const auto loaded = again->load(2, 1, 4, 3, &problem);
  ASSERT_TRUE(loaded.has_value());
  const JobRecord expected = record(2, 1);
  EXPECT_EQ(loaded->W.storage(), expected.W.storage());
  EXPECT_EQ(loaded->H.storage(), expected.H.storage());
  EXPECT_EQ(loaded->iterations, 42);
  EXPECT_EQ(loaded->rel_error, 0.125);
  EXPECT_FALSE(again->load(2, 1, 5, 3, &problem).has_value()) << "a job file of another shape is not reused";
  EXPECT_NE(problem.find("does not match"), std::string::npos);
  again.reset();  // its lock goes with it

  // Other options: refused, naming what differs.
  const std::string message =
      test::error_message([&] { CheckpointStore(path("ck")).open(fingerprint("0.05"), false); });
  EXPECT_THAT(message, testing::HasSubstr("epsilon 0.03 -> 0.05"));
  EXPECT_THAT(message, testing::HasSubstr("--restart"));
  const std::string data_message =
      test::error_message([&] { CheckpointStore(path("ck")).open(fingerprint("0.03", 11), false); });
  EXPECT_THAT(data_message, testing::HasSubstr("data_sum"));
  // --restart: cleared and started afresh with the new fingerprint.
  EXPECT_THAT(CheckpointStore(path("ck")).open(fingerprint("0.05"), true), testing::HasSubstr("discarded"));
  EXPECT_FALSE(fs::exists(job_2_0));
  EXPECT_EQ(CheckpointStore(path("ck")).open(fingerprint("0.05"), false), "");
}

// Two sweeps into one folder at once mixed their job files under one manifest (a resume then reused the other
// seed's jobs): a store holds the folder's lock from open() until it goes, and a second one is refused meanwhile.
// A manifest that is not a file is an IoError naming it.
TEST_F(Checkpoints, OneSweepAtATimePerFolder) {
  {
    CheckpointStore first(path("ck"));
    EXPECT_EQ(first.open(fingerprint(), false), "");
    const std::string message = test::error_message([&] { CheckpointStore(path("ck")).open(fingerprint(), false); });
    EXPECT_THAT(message, testing::HasSubstr("another NMFk run is using these checkpoints"));
    EXPECT_THAT(message, testing::HasSubstr(path("ck")));
  }
  EXPECT_EQ(CheckpointStore(path("ck")).open(fingerprint(), false), "");
  fs::remove(path("ck/manifest.json"));
  fs::create_directory(path("ck/manifest.json"));
  try {
    CheckpointStore(path("ck")).open(fingerprint(), false);
    ADD_FAILURE() << "a folder for a manifest was accepted";
  } catch (const IoError& e) {
    EXPECT_THAT(std::string(e.what()), testing::HasSubstr(path("ck/manifest.json")));
  }
}

TEST_F(Checkpoints, DamagedAndStrayFilesAreNotReused) {
  auto store = std::make_unique<CheckpointStore>(path("ck"));
  store->open(fingerprint(), false);
  store->save(record(3, 0));
  fs::resize_file(store->job_path(3, 0), fs::file_size(store->job_path(3, 0)) - 8);
  std::string problem;
  EXPECT_FALSE(store->load(3, 0, 4, 3, &problem).has_value());
  EXPECT_THAT(problem, testing::HasSubstr("truncated"));
  EXPECT_FALSE(fs::exists(store->job_path(3, 0))) << "a damaged file is removed so the job runs again";
  // A FIFO in a job file's place blocked the open for good (a helper session's finding): not a job file either.
  ASSERT_EQ(::mkfifo(store->job_path(3, 0).c_str(), 0644), 0);
  EXPECT_FALSE(store->load(3, 0, 4, 3, &problem).has_value());
  EXPECT_THAT(problem, testing::HasSubstr("k3_p0.job: not a regular file; the job runs again"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(store->job_path(3, 0))));

  // A temporary left by a killed write, and job files without a manifest, are cleared on open.
  store->save(record(3, 1));
  const std::string job_3_1 = store->job_path(3, 1);
  store.reset();  // its lock goes with it
  std::ofstream(path("ck/k3_p2.job.tmp.123.0")) << "partial";
  fs::remove(path("ck/manifest.json"));
  EXPECT_THAT(CheckpointStore(path("ck")).open(fingerprint(), false), testing::HasSubstr("without a manifest"));
  EXPECT_FALSE(fs::exists(job_3_1));
  EXPECT_FALSE(fs::exists(path("ck/k3_p2.job.tmp.123.0")));
}

// A job file carries its run's identity (the manifest's data and options): one copied from another run's folder,
// of the same shape and a valid checksum, was reused silently (its W came from other data). A group root that
// never opens the store saves under the opener's identity, and those files load.
TEST_F(Checkpoints, JobFilesOfAnotherRunAreNotReused) {
  Fingerprint other = fingerprint();
  other.content_hash = "00000000000000ab";
  {
    CheckpointStore elsewhere(path("other"));
    elsewhere.open(other, false);
    elsewhere.save(record(2, 0));
  }
  CheckpointStore store(path("ck"));
  store.open(fingerprint(), false);
  fs::copy_file(path("other/k2_p0.job"), store.job_path(2, 0));
  std::string problem;
  EXPECT_FALSE(store.load(2, 0, 4, 3, &problem).has_value());
  EXPECT_THAT(problem, testing::HasSubstr("other data or options"));
  EXPECT_FALSE(fs::exists(store.job_path(2, 0)));
  CheckpointStore group_root(path("ck"));  // saves only: no open(), so no lock
  group_root.adopt_identity(store.identity());
  group_root.save(record(2, 1));
  EXPECT_TRUE(store.load(2, 1, 4, 3, &problem).has_value()) << problem;
}

// ---- Selection rules --------------------------------------------------------------------------------------

// Per-column errors around `level`, slightly different per column (no ties).
std::vector<double> errors(double level, int n = 40) {
  std::vector<double> e;
  e.reserve(to_size(n));
  for (int j = 0; j < n; ++j) e.push_back(level * (1 + 0.01 * j));
  return e;
}

TEST(Selection, SilhouetteRuleTakesLargestAcceptedK) {
  const std::vector<RankFigures> figures = {{2, 0.99, 0.5, errors(0.5)},
                                            {3, 0.97, 0.2, errors(0.2)},
                                            {4, 0.60, 0.1, errors(0.1)},
                                            {5, 0.91, 0.02, errors(0.02)},
                                            {6, 0.30, 0.019, errors(0.019)}};
  const NmfkSelection s = select_rank(figures, {});
  ASSERT_TRUE(s.selected_k.has_value());
  EXPECT_EQ(*s.selected_k, 5);
  EXPECT_EQ(*s.silhouette_k, 5);
  EXPECT_EQ(s.decided_by, SelectionRule::silhouette);
  // Accepted: 2, 3, 5; errors drop at every step, so the walk reaches 5 too.
  ASSERT_EQ(s.wilcoxon_steps.size(), 2u);
  EXPECT_EQ(s.wilcoxon_steps[1].from_k, 3);
  EXPECT_EQ(s.wilcoxon_steps[1].to_k, 5);
  EXPECT_TRUE(s.wilcoxon_steps[1].significant);
  EXPECT_EQ(*s.wilcoxon_k, 5);
  EXPECT_THAT(s.message, testing::HasSubstr("selected k=5 by the silhouette rule"));

  // An error threshold rejects k = 2 and 3.
  SelectionCriteria strict;
  strict.err_threshold = 0.05;
  EXPECT_EQ(*select_rank(figures, strict).selected_k, 5);
  strict.err_threshold = 0.01;
  EXPECT_FALSE(select_rank(figures, strict).selected_k.has_value());
}

TEST(Selection, WilcoxonRuleStopsWhereErrorsStopFalling) {
  // k = 4 improves on 3 for every column; k = 5 is no better than 4 (half the columns up, half down).
  std::vector<double> e5 = errors(0.1);
  for (std::size_t j = 0; j < e5.size(); ++j) e5[j] += (j % 2 ? 1e-3 : -1e-3);
  const std::vector<RankFigures> figures = {{3, 0.95, 0.3, errors(0.3)}, {4, 0.9, 0.1, errors(0.1)}, {5, 0.8, 0.1, e5}};
  SelectionCriteria c;
  c.rule = SelectionRule::wilcoxon;
  const NmfkSelection s = select_rank(figures, c);
  EXPECT_EQ(*s.wilcoxon_k, 4);
  EXPECT_EQ(*s.silhouette_k, 5);
  EXPECT_EQ(*s.selected_k, 4);
  EXPECT_EQ(s.decided_by, SelectionRule::wilcoxon);
  ASSERT_EQ(s.wilcoxon_steps.size(), 2u);
  EXPECT_LT(s.wilcoxon_steps[0].p_value, 1e-6);
  EXPECT_FALSE(s.wilcoxon_steps[1].significant);
  EXPECT_GT(s.wilcoxon_steps[1].p_value, 0.05);
}

TEST(Selection, NoKPassesNamesBestCandidate) {
  const std::vector<RankFigures> figures = {
      {2, 0.5, 0.3, errors(0.3)}, {3, 0.7, 0.1, errors(0.1)}, {4, 0.2, 0.1, errors(0.1)}};
  const NmfkSelection s = select_rank(figures, {});
  EXPECT_FALSE(s.selected_k.has_value());
  EXPECT_FALSE(s.silhouette_k.has_value());
  EXPECT_EQ(s.best_candidate, 3);
  EXPECT_THAT(s.message, testing::HasSubstr("no k passed"));
  EXPECT_THAT(s.message, testing::HasSubstr("best candidate k=3"));
  EXPECT_EQ(select_rank({}, {}).message, "no k was evaluated");
  // A silhouette just below the threshold is shown below it (0.9999148 against 0.99999 read "1.000"), and so is
  // an error just above its threshold.
  SelectionCriteria strict;
  strict.sil_threshold = 0.99999;
  const NmfkSelection close = select_rank({{4, 0.9999148, 0.0193, errors(0.0193)}}, strict);
  EXPECT_THAT(close.message, testing::HasSubstr("best candidate k=4 (minimum silhouette 0.9999,"));
  strict.sil_threshold = 0.5;
  strict.err_threshold = 0.0193;
  const NmfkSelection over = select_rank({{4, 0.9, 0.019304, errors(0.019304)}}, strict);
  EXPECT_THAT(over.message, testing::HasSubstr("relative error 0.019304"));
}

// ---- Regression -------------------------------------------------------------------------------------------

template <class T>
void expect_regression_matches_transform(const MatrixRef<T>& a) {
  const index_t m = rows_of(a), n = cols_of(a), k = 3;
  dist::SingleCommunicator world;
  GroupContext<T> group;
  group.comm = world.split(0, 0);
  group.grid = std::make_unique<dist::Grid>(*group.comm, dist::GridShape{1, 1});
  group.layout = dist::make_layout(*group.grid, m, n);
  group.block = slice_block<T>(a, {0, m, 0, n, group.comm.get()});
  const DenseMatrix<double> w = test::random_dense<double>(m, k, 21, 0.3);
  const auto rec = regress(group, w, BackendKind::cpu);
  ASSERT_TRUE(rec.has_value());
  DenseMatrix<T> wt(m, k);
  for (std::size_t i = 0; i < w.storage().size(); ++i) wt.storage()[i] = static_cast<T>(w.storage()[i]);
  const TransformResult<T> reference = transform<T>(a, wt.view());
  const double tol = std::is_same_v<T, float> ? 2e-4 : 1e-9;
  EXPECT_NEAR(rec->rel_error, reference.rel_error, tol);
  for (index_t j = 0; j < n; ++j)
    for (index_t l = 0; l < k; ++l) EXPECT_NEAR(rec->H(l, j), static_cast<double>(reference.H(l, j)), tol * 10);
  // Per-column errors against a direct residual.
  const DenseMatrix<T> dense = [&] {
    DenseMatrix<T> d(m, n);
    const MatrixBlock<T> whole = slice_block<T>(a, {0, m, 0, n, nullptr});
    if (!whole.sparse) return whole.dense;
    const auto& s = whole.csr;
    for (index_t i = 0; i < m; ++i)
      for (index_t q = s.indptr()[to_size(i)]; q < s.indptr()[to_size(i + 1)]; ++q)
        d(i, s.indices()[to_size(q)]) = s.values()[to_size(q)];
    return d;
  }();
  for (index_t j = 0; j < n; ++j) {
    double r2 = 0, a2 = 0;
    for (index_t i = 0; i < m; ++i) {
      double model = 0;
      for (index_t l = 0; l < k; ++l) model += w(i, l) * rec->H(l, j);
      r2 += (static_cast<double>(dense(i, j)) - model) * (static_cast<double>(dense(i, j)) - model);
      a2 += static_cast<double>(dense(i, j)) * static_cast<double>(dense(i, j));
    }
    EXPECT_NEAR(rec->column_errors[to_size(j)], a2 > 0 ? std::sqrt(r2 / a2) : 0.0, tol * 10);
  }
}

TEST(Regression, MatchesTransformDenseAndSparse) {
  const DenseMatrix<double> a = test::random_dense<double>(25, 18, 5, 0.3);
  expect_regression_matches_transform<double>(MatrixRef<double>{DenseView<const double>(a.view())});
  const CsrMatrix<double> s = test::to_csr(a);
  expect_regression_matches_transform<double>(MatrixRef<double>{s.view()});
  const DenseMatrix<float> f = test::random_dense<float>(25, 18, 6, 0.3);
  expect_regression_matches_transform<float>(MatrixRef<float>{DenseView<const float>(f.view())});
}

}  // namespace
}  // namespace dnmf::rank_search
