// NMFk on 1, 2 and 3 threads (issue 14, item 4): a one-process run deals its (k, perturbation) jobs to the
// threads side by side, one thread each, so the numbers must not depend on how many threads there are or on
// which thread ran which job: the same selected k, the same errors, silhouettes and centroids, bit for bit.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/planted.hpp"

namespace dnmf {
namespace {

NmfkOptions options_with(int threads, Algorithm algo) {
  NmfkOptions o;
  o.ks = {2, 3, 4, 5};
  o.perturbations = 6;
  o.factor.algorithm = algo;
  o.factor.max_iterations = 300;
  o.factor.threads = threads;
  o.factor.seed = 7;
  return o;
}

void expect_equal(const NmfkResult<double>& a, const NmfkResult<double>& b, const std::string& what) {
  ASSERT_TRUE(a.selection.selected_k.has_value()) << what << ": " << a.selection.message;
  EXPECT_EQ(a.selection.selected_k, b.selection.selected_k) << what;
  EXPECT_EQ(a.selection.wilcoxon_k, b.selection.wilcoxon_k) << what;
  ASSERT_EQ(a.ranks.size(), b.ranks.size()) << what;
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    const auto& x = a.ranks[i];
    const auto& y = b.ranks[i];
    const std::string at = what + ", k=" + std::to_string(x.k);
    EXPECT_EQ(x.perturbation_errors, y.perturbation_errors) << at;
    EXPECT_EQ(x.perturbation_iterations, y.perturbation_iterations) << at;
    EXPECT_EQ(x.silhouettes, y.silhouettes) << at;
    EXPECT_EQ(x.rel_error, y.rel_error) << at;
    EXPECT_EQ(x.column_errors, y.column_errors) << at;
    EXPECT_EQ(x.W.storage(), y.W.storage()) << at;
    EXPECT_EQ(x.H.storage(), y.H.storage()) << at;
  }
}

TEST(NmfkThreads, SameResultsOnOneTwoAndThreeThreads) {
  const auto planted =
      make_planted<double>({.rows = 80, .cols = 60, .rank = 3, .density = 1.0, .noise = 0.02, .seed = 5});
  for (Algorithm algo : {Algorithm::mu, Algorithm::bpp}) {
    const auto one = nmfk<double>(planted.matrix(), options_with(1, algo));
    ASSERT_TRUE(one.selection.selected_k.has_value()) << one.selection.message;
    EXPECT_EQ(*one.selection.selected_k, 3) << one.selection.message;
    for (int threads : {2, 3})
      expect_equal(one, nmfk<double>(planted.matrix(), options_with(threads, algo)),
                   to_string(algo) + ", " + std::to_string(threads) + " threads");
  }
}

// A job that fails on a worker thread stops the run with its own error once every thread is done, and the
// user's cancel hook is never called by two threads at once.
TEST(NmfkThreads, CancelOnAWorkerThreadStopsTheRun) {
  const auto planted =
      make_planted<double>({.rows = 80, .cols = 60, .rank = 3, .density = 1.0, .noise = 0.02, .seed = 5});
  NmfkOptions o = options_with(2, Algorithm::mu);
  std::atomic<int> inside{0}, overlaps{0}, calls{0};
  o.factor.cancel = [&] {
    if (inside.fetch_add(1) > 0) ++overlaps;
    const bool stop = ++calls > 200;
    inside.fetch_sub(1);
    return stop;
  };
  EXPECT_THROW((void)nmfk<double>(planted.matrix(), o), Cancelled);
  EXPECT_GT(calls.load(), 200);
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace dnmf
