// Masked results independent of the thread count (as tests/unit/test_thread_independence.cpp for the unmasked
// solvers): every algorithm, dense with 10% missing (Gram corrections) and sparse --unstored missing, gives
// bit-identical factors and figures on 1, 2 and 3 threads. Each column's update and sums are computed apart
// and added in column order, whatever thread ran it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dnmf/factorize.hpp"
#include "dnmf/source.hpp"

namespace dnmf {
namespace {

struct Problem {
  DenseMatrix<double> a, weight;
  std::vector<index_t> indptr;
  std::vector<col_index_t> indices;
  std::vector<double> values;
};

// Big enough (dense and sparse) that the thread governor runs iterations on several threads (its trials at
// least): both stay above its 4e6-flop floor. 700 columns of 420 doubles are three of the dense fused pass's
// tiles (about 1 MiB each), cut into slots.
Problem make_problem(unsigned seed) {
  const index_t m = 420, n = 700;
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Problem p{DenseMatrix<double>(m, n), DenseMatrix<double>(m, n), {0}, {}, {}};
  for (auto& v : p.a.storage()) v = 0.1 + u(engine);
  for (auto& v : p.weight.storage()) v = u(engine) < 0.1 ? 0.0 : 1.0;
  for (index_t i = 0; i < m; ++i) {
    for (index_t j = 0; j < n; ++j)
      if (u(engine) < 0.75) {
        p.indices.push_back(static_cast<col_index_t>(j));
        p.values.push_back(p.a(i, j));
      }
    p.indptr.push_back(static_cast<index_t>(p.values.size()));
  }
  return p;
}

void expect_identical(const FactorResult<double>& x, const FactorResult<double>& y, const std::string& what) {
  EXPECT_EQ(x.W.storage(), y.W.storage()) << what;
  EXPECT_EQ(x.H.storage(), y.H.storage()) << what;
  EXPECT_EQ(x.rel_error_history, y.rel_error_history) << what;
  EXPECT_EQ(x.objective_history, y.objective_history) << what;
}

TEST(MaskedThreads, SameBitsForAnyThreadCount) {
  const Problem p = make_problem(7);
  const CsrView<double> csr{p.a.rows(), p.a.cols(), p.indptr.data(), p.indices.data(), p.values.data()};
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp})
    for (const bool sparse : {false, true}) {
      FactorOptions o;
      o.rank = algo == Algorithm::mu ? 16 : 12;  // 16: the 8-wide listed products where the CPU has AVX-512
      o.algorithm = algo;
      o.max_iterations = 8;
      o.tol = 0;
      o.seed = 5;
      if (sparse) {
        o.missing.unstored = Unstored::missing;
      } else {
        o.missing.mask = Source::dense<double>(p.weight.view());
      }
      const auto run = [&](int threads) {
        o.threads = threads;
        return sparse ? factorize<double>(csr, o) : factorize<double>(p.a.view(), o);
      };
      const FactorResult<double> one = run(1);
      ASSERT_TRUE(one.masked);
      EXPECT_LT(one.rel_error_history.back(), one.rel_error_history.front());
      for (const int threads : {2, 3})
        expect_identical(
            one, run(threads),
            to_string(algo) + (sparse ? " sparse" : " dense") + ", " + std::to_string(threads) + " threads");
    }
}

}  // namespace
}  // namespace dnmf
