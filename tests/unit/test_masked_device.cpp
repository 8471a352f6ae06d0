// The masked MU/KL iteration in matrix form (solvers/masked_device_iterate.cpp), the sequence the GPU runs,
// driven here through the host implementation of backend::MaskedDevice: against an independent float64
// reference written below (plain loops over the observed entries) and against the host's column-wise
// iteration (masked_iterate.cpp), whose figures it must reproduce. HALS, BPP and the stored pattern
// (--unstored missing): test_masked_device_algorithms.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/masked_device.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/source.hpp"
#include "solvers/masked_device_iterate.hpp"
#include "solvers/masked_iterate.hpp"
#include "solvers/masked_problem.hpp"
#include "support/masked_data.hpp"

namespace dnmf {
namespace {

// ---- the independent reference: one weighted MU or KL half-step, column by column, in float64 ----
// x (k x cols) from y (k x rows); at(i, j) gives {a, w} of entry (i, j) in the half's orientation.
template <class At>
void reference_half(Algorithm algo, const std::vector<double>& y, std::vector<double>& x, index_t k, index_t rows,
                    index_t cols, double l1, double l2, At at) {
  const double eps = 1e-16;
  std::vector<double> next(x.size());
  for (index_t j = 0; j < cols; ++j) {
    std::vector<double> numer(k, 0.0), denom(k, 0.0);
    for (index_t i = 0; i < rows; ++i) {
      const auto [a, w] = at(i, j);
      if (w == 0) continue;
      double q = 0;
      for (index_t l = 0; l < k; ++l) q += y[l + i * k] * x[l + j * k];
      for (index_t l = 0; l < k; ++l) {
        if (algo == Algorithm::kl) {
          numer[l] += w * a / q * y[l + i * k];
          denom[l] += w * y[l + i * k];
        } else {
          numer[l] += w * a * y[l + i * k];
          denom[l] += w * q * y[l + i * k];
        }
      }
    }
    for (index_t l = 0; l < k; ++l) {
      const double xl = x[l + j * k];
      next[l + j * k] = xl * numer[l] / (denom[l] + l1 + l2 * xl + eps);
    }
  }
  x = next;
}

struct Reference {
  std::vector<double> wt, h;
  std::vector<double> squared;  // Σ w (a - WH)² after each iteration (Frobenius)
};

template <class T>
Reference reference_run(Algorithm algo, const test::MaskedData<T>& d, int iters, double l1, double l2) {
  const index_t m = d.a.rows(), n = d.a.cols(), k = d.wt0.rows();
  Reference r{std::vector<double>(d.wt0.storage().begin(), d.wt0.storage().end()),
              std::vector<double>(d.h0.storage().begin(), d.h0.storage().end()),
              {}};
  const auto entry = [&](index_t i, index_t j) {
    return std::pair{static_cast<double>(d.a(i, j)), static_cast<double>(d.weight(i, j))};
  };
  for (int it = 0; it < iters; ++it) {
    reference_half(algo, r.wt, r.h, k, m, n, l1, l2, entry);
    reference_half(algo, r.h, r.wt, k, n, m, l1, l2, [&](index_t j, index_t i) { return entry(i, j); });
    double s = 0;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) {
        double q = 0;
        for (index_t l = 0; l < k; ++l) q += r.wt[l + i * k] * r.h[l + j * k];
        const auto [a, w] = entry(i, j);
        s += w * (a - q) * (a - q);
      }
    r.squared.push_back(s);
  }
  return r;
}

template <class T>
double max_rel_diff(const DenseMatrix<T>& x, const std::vector<double>& y) {
  double diff = 0, scale = 0;
  for (std::size_t e = 0; e < y.size(); ++e) {
    diff = std::max(diff, std::abs(static_cast<double>(x.storage()[e]) - y[e]));
    scale = std::max(scale, std::abs(y[e]));
  }
  return diff / scale;
}

template <class T>
double max_rel_diff(const DenseMatrix<T>& x, const DenseMatrix<T>& y) {
  return max_rel_diff(x, std::vector<double>(y.storage().begin(), y.storage().end()));
}

template <class T>
FactorResult<T> run_on_host_device(const solvers::MaskedProblem<T>& p, const FactorOptions& o, solvers::Factors<T>& f) {
  auto device = backend::make_host_masked_device<T>();
  return solvers::iterate_masked_on_device(p, o, f, *device);
}

TEST(MaskedDevice, MatchesTheReference) {
  for (const double missing : {0.1, 0.6})
    for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
      SCOPED_TRACE(to_string(algo) + " missing " + std::to_string(missing));
      const test::MaskedData<double> d = test::make_masked_data<double>(37, 29, 4, missing, 5);
      const auto p = test::dense_masked_problem(d);
      solvers::Factors<double> f{d.wt0, d.h0};
      const FactorResult<double> r = run_on_host_device(p, test::fixed_iterations(algo, 4, 20), f);
      const Reference ref = reference_run(algo, d, 20, 0, 0);
      EXPECT_LT(max_rel_diff(f.wt, ref.wt), 1e-10);
      EXPECT_LT(max_rel_diff(f.h, ref.h), 1e-10);
      EXPECT_EQ(r.backend, "cpu");
      EXPECT_TRUE(r.masked);
      ASSERT_EQ(r.rel_error_history.size(), 20U);
      if (algo == Algorithm::mu) {
        double norm = 0;
        for (std::size_t e = 0; e < d.a.storage().size(); ++e)
          norm += d.weight.storage()[e] * d.a.storage()[e] * d.a.storage()[e];
        for (std::size_t it = 0; it < 20; ++it)
          EXPECT_NEAR(r.rel_error_history[it], std::sqrt(ref.squared[it] / norm), 1e-10) << "iteration " << it + 1;
      }
      // The iteration did something: the error fell.
      EXPECT_LT(r.rel_error_history.back(), r.rel_error_history.front());
    }
}

// The figures, the order of the halves and the penalties are those of the host's column-wise iteration.
TEST(MaskedDevice, ReproducesTheHostIteration) {
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl})
    for (const bool w_first : {false, true}) {
      SCOPED_TRACE(to_string(algo) + (w_first ? " W first" : " H first"));
      const test::MaskedData<double> d = test::make_masked_data<double>(41, 33, 5, 0.15, 9);
      const auto p = test::dense_masked_problem(d);
      FactorOptions o = test::fixed_iterations(algo, 5, 15);
      o.w_first = w_first;
      o.penalties.l1_h = 0.01;
      o.penalties.l2_w = 0.02;
      o.normalize = true;
      solvers::Factors<double> on_device{d.wt0, d.h0}, on_host{d.wt0, d.h0};
      const FactorResult<double> r = run_on_host_device(p, o, on_device);
      const FactorResult<double> h = solvers::iterate_masked(p, o, on_host);
      EXPECT_LT(max_rel_diff(on_device.wt, on_host.wt), 1e-10);
      EXPECT_LT(max_rel_diff(on_device.h, on_host.h), 1e-10);
      ASSERT_EQ(r.objective_history.size(), h.objective_history.size());
      for (std::size_t it = 0; it < h.objective_history.size(); ++it) {
        EXPECT_NEAR(r.objective_history[it], h.objective_history[it], 1e-10 * std::abs(h.objective_history[it]));
        EXPECT_NEAR(r.rel_error_history[it], h.rel_error_history[it], 1e-10);
      }
      EXPECT_NEAR(r.rel_error, h.rel_error, 1e-12);
    }
}

TEST(MaskedDevice, FloatFollowsTheReference) {
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
    SCOPED_TRACE(to_string(algo));
    const test::MaskedData<float> d = test::make_masked_data<float>(30, 22, 3, 0.2, 13);
    const auto p = test::dense_masked_problem(d);
    solvers::Factors<float> f{d.wt0, d.h0};
    run_on_host_device(p, test::fixed_iterations(algo, 3, 20), f);
    const Reference ref = reference_run(algo, d, 20, 0, 0);
    EXPECT_LT(max_rel_diff(f.wt, ref.wt), 2e-3);
    EXPECT_LT(max_rel_diff(f.h, ref.h), 2e-3);
  }
}

// A row and a column with no observed entry keep zero factors (never NaN), as on the host.
TEST(MaskedDevice, UnobservedRowsAndColumnsStayZero) {
  const test::MaskedData<double> d = test::make_with_unobserved<double>(20, 16, 3, 4, 7, 17);
  const auto p = test::dense_masked_problem(d);
  ASSERT_EQ(p.unobserved_rows, 1);
  ASSERT_EQ(p.unobserved_cols, 1);
  for (const Algorithm algo : {Algorithm::mu, Algorithm::kl}) {
    solvers::Factors<double> f{d.wt0, d.h0};
    const FactorResult<double> r = run_on_host_device(p, test::fixed_iterations(algo, 3, 10), f);
    EXPECT_TRUE(std::isfinite(r.rel_error));
    for (index_t l = 0; l < 3; ++l) {
      EXPECT_EQ(f.wt(l, 4), 0.0);
      EXPECT_EQ(f.h(l, 7), 0.0);
    }
    for (const double v : f.wt.storage()) EXPECT_TRUE(std::isfinite(v));
  }
}

}  // namespace
}  // namespace dnmf
