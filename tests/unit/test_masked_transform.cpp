// transform() of new data with missing values: each column of H against a plain float64 reference written here
// (the exact NNLS over the column's observed rows, by trying every support), for a weighted dense mask, NaN as
// missing, sparse A with unstored entries missing, f32; a zero-weight entry changes nothing; a column with no
// observed entry gets zeros; bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/source.hpp"
#include "support/error_message.hpp"

namespace dnmf {
namespace {

constexpr index_t kM = 14, kN = 9, kK = 3;

/// A deterministic pseudo-random number in [0, 1) (the tests need no statistics, only variety).
double hash01(index_t a, index_t b, index_t c) {
  std::uint64_t x = static_cast<std::uint64_t>(a) * 0x9E3779B97F4A7C15ULL ^
                    static_cast<std::uint64_t>(b) * 0xC2B2AE3D27D4EB4FULL ^
                    static_cast<std::uint64_t>(c) * 0x165667B19E3779F9ULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return static_cast<double>(x >> 11) / static_cast<double>(1ULL << 53);
}

/// Solves the k x k system g x = b (Gaussian elimination with partial pivoting); false when singular.
bool solve_small(std::vector<double> g, std::vector<double> b, std::size_t k, std::vector<double>& x) {
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::abs(g[r * k + c]) > std::abs(g[p * k + c])) p = r;
    if (std::abs(g[p * k + c]) < 1e-300) return false;
    for (std::size_t q = 0; q < k; ++q) std::swap(g[c * k + q], g[p * k + q]);
    std::swap(b[c], b[p]);
    for (std::size_t r = c + 1; r < k; ++r) {
      const double f = g[r * k + c] / g[c * k + c];
      for (std::size_t q = c; q < k; ++q) g[r * k + q] -= f * g[c * k + q];
      b[r] -= f * b[c];
    }
  }
  x.assign(k, 0);
  for (std::size_t c = k; c-- > 0;) {
    double s = b[c];
    for (std::size_t q = c + 1; q < k; ++q) s -= g[c * k + q] * x[q];
    x[c] = s / g[c * k + c];
  }
  return true;
}

/// The exact NNLS min Σ_i w_i (a_i − Σ_l W(i, l) x_l)², x ≥ 0, over the rows with w_i > 0: the optimum is the
/// least-squares solution on its own support, so the best feasible one over all 2^k supports is it.
std::vector<double> reference_column(const std::vector<double>& w_matrix, const std::vector<double>& a,
                                     const std::vector<double>& weight) {
  const auto m = a.size();
  const std::size_t k = kK;
  std::vector<double> best(k, 0.0);
  double best_value = std::numeric_limits<double>::infinity();
  for (unsigned support = 0; support < (1u << k); ++support) {
    std::vector<std::size_t> s;
    for (std::size_t l = 0; l < k; ++l)
      if ((support >> l) & 1u) s.push_back(l);
    std::vector<double> g(s.size() * s.size(), 0.0), b(s.size(), 0.0), xs;
    for (std::size_t i = 0; i < m; ++i) {
      if (weight[i] <= 0) continue;
      for (std::size_t p = 0; p < s.size(); ++p) {
        b[p] += weight[i] * a[i] * w_matrix[i + s[p] * m];
        for (std::size_t q = 0; q < s.size(); ++q)
          g[p * s.size() + q] += weight[i] * w_matrix[i + s[p] * m] * w_matrix[i + s[q] * m];
      }
    }
    if (!s.empty() && !solve_small(g, b, s.size(), xs)) continue;
    if (std::any_of(xs.begin(), xs.end(), [](double v) { return v < 0; })) continue;
    std::vector<double> x(k, 0.0);
    for (std::size_t p = 0; p < s.size(); ++p) x[s[p]] = xs[p];
    double value = 0;
    for (std::size_t i = 0; i < m; ++i) {
      if (weight[i] <= 0) continue;
      double q = 0;
      for (std::size_t l = 0; l < k; ++l) q += w_matrix[i + l * m] * x[l];
      value += weight[i] * (a[i] - q) * (a[i] - q);
    }
    if (value < best_value) {
      best_value = value;
      best = x;
    }
  }
  return best;
}

struct Data {
  std::vector<double> w;       // kM x kK, column-major
  std::vector<double> a;       // kM x kN, column-major
  std::vector<double> weight;  // kM x kN: 0 missing, else a weight
};

Data make_data() {
  Data d;
  d.w.resize(kM * kK);
  for (index_t e = 0; e < kM * kK; ++e) d.w[to_size(e)] = hash01(e, 1, 7);
  d.a.resize(kM * kN);
  d.weight.resize(kM * kN);
  for (index_t j = 0; j < kN; ++j)
    for (index_t i = 0; i < kM; ++i) {
      const auto e = to_size(i + j * kM);
      d.a[e] = 2 * hash01(i, j, 3);
      const double u = hash01(i, j, 5);
      d.weight[e] = u < 0.25 ? 0.0 : (u < 0.35 ? 2.5 : 1.0);
    }
  return d;
}

std::vector<double> reference_h(const Data& d) {
  std::vector<double> h(kK * kN);
  for (index_t j = 0; j < kN; ++j) {
    const std::vector<double> a(d.a.begin() + j * kM, d.a.begin() + (j + 1) * kM);
    const std::vector<double> w(d.weight.begin() + j * kM, d.weight.begin() + (j + 1) * kM);
    const std::vector<double> x = reference_column(d.w, a, w);
    std::copy(x.begin(), x.end(), h.begin() + j * kK);
  }
  return h;
}

double reference_error(const Data& d, const std::vector<double>& h) {
  double num = 0, den = 0;
  for (index_t j = 0; j < kN; ++j)
    for (index_t i = 0; i < kM; ++i) {
      const double w = d.weight[to_size(i + j * kM)];
      if (w <= 0) continue;
      double q = 0;
      for (index_t l = 0; l < kK; ++l) q += d.w[to_size(i + l * kM)] * h[to_size(l + j * kK)];
      const double a = d.a[to_size(i + j * kM)];
      num += w * (a - q) * (a - q);
      den += w * a * a;
    }
  return std::sqrt(num / den);
}

template <class T>
void expect_near_h(const TransformResult<T>& r, const std::vector<double>& h, double tolerance) {
  ASSERT_EQ(r.H.rows(), kK);
  ASSERT_EQ(r.H.cols(), kN);
  for (index_t j = 0; j < kN; ++j)
    for (index_t l = 0; l < kK; ++l)
      EXPECT_NEAR(static_cast<double>(r.H(l, j)), h[to_size(l + j * kK)], tolerance) << "l=" << l << " j=" << j;
}

TEST(MaskedTransform, WeightedMaskMatchesReference) {
  const Data d = make_data();
  const std::vector<double> h = reference_h(d);
  MissingValues missing;
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  const TransformResult<double> r =
      transform<double>(Source::dense<double>(DenseView<const double>(d.a.data(), kM, kN)),
                        DenseView<const double>(d.w.data(), kM, kK), missing);
  expect_near_h(r, h, 1e-10);
  EXPECT_NEAR(r.rel_error, reference_error(d, h), 1e-10);
  index_t observed = 0;
  for (const double w : d.weight) observed += w > 0 ? 1 : 0;
  EXPECT_EQ(r.observed, observed);
  EXPECT_EQ(r.unobserved_cols, 0);
  // The reference's answers use several supports (some coefficients at zero): the test covers the pivoting.
  EXPECT_TRUE(std::any_of(h.begin(), h.end(), [](double v) { return v == 0; }));
  EXPECT_TRUE(std::any_of(h.begin(), h.end(), [](double v) { return v > 0; }));

  // A zero-weight entry may hold anything: huge, negative or NaN values change nothing.
  Data wild = d;
  int changed = 0;
  for (std::size_t e = 0; e < wild.a.size(); ++e)
    if (wild.weight[e] == 0) wild.a[e] = (changed++ % 3 == 0) ? 1e300 : (changed % 3 == 1 ? -5.0 : std::nan(""));
  ASSERT_GT(changed, 3);
  const TransformResult<double> same =
      transform<double>(Source::dense<double>(DenseView<const double>(wild.a.data(), kM, kN)),
                        DenseView<const double>(d.w.data(), kM, kK), missing);
  EXPECT_EQ(same.H.storage(), r.H.storage());
}

TEST(MaskedTransform, NanAsMissingAndAllOnes) {
  Data d = make_data();
  for (double& w : d.weight) w = w > 0 ? 1.0 : 0.0;
  std::vector<double> with_nan = d.a;
  for (std::size_t e = 0; e < d.a.size(); ++e)
    if (d.weight[e] == 0) with_nan[e] = std::nan("");
  MissingValues nan_missing;
  nan_missing.nan_missing = true;
  const TransformResult<double> r =
      transform<double>(Source::dense<double>(DenseView<const double>(with_nan.data(), kM, kN)),
                        DenseView<const double>(d.w.data(), kM, kK), nan_missing);
  expect_near_h(r, reference_h(d), 1e-10);
  // Without the flag a NaN is an error that names the flag.
  EXPECT_NE(test::error_message([&] {
              (void)transform<double>(Source::dense<double>(DenseView<const double>(with_nan.data(), kM, kN)),
                                      DenseView<const double>(d.w.data(), kM, kK), MissingValues{});
            }).find("--missing nan"),
            std::string::npos);

  // Every weight 1: the plain transform's answer.
  Data full = make_data();
  std::fill(full.weight.begin(), full.weight.end(), 1.0);
  const TransformResult<double> masked =
      transform<double>(Source::dense<double>(DenseView<const double>(full.a.data(), kM, kN)),
                        DenseView<const double>(full.w.data(), kM, kK), MissingValues{});
  const MatrixRef<double> a = DenseView<const double>(full.a.data(), kM, kN);
  const TransformResult<double> plain = transform<double>(a, DenseView<const double>(full.w.data(), kM, kK));
  ASSERT_EQ(masked.H.storage().size(), plain.H.storage().size());
  for (std::size_t e = 0; e < plain.H.storage().size(); ++e)
    EXPECT_NEAR(masked.H.storage()[e], plain.H.storage()[e], 1e-10);
  EXPECT_NEAR(masked.rel_error, plain.rel_error, 1e-10);
  expect_near_h(masked, reference_h(full), 1e-10);
}

TEST(MaskedTransform, SparseUnstoredMissingAndEmptyColumn) {
  Data d = make_data();
  for (double& w : d.weight) w = w > 0 ? 1.0 : 0.0;
  // Column 4 has no stored entry: its coefficients are zero.
  for (index_t i = 0; i < kM; ++i) d.weight[to_size(i + 4 * kM)] = 0;
  std::vector<index_t> indptr(1, 0);
  std::vector<col_index_t> indices;
  std::vector<double> values;
  for (index_t i = 0; i < kM; ++i) {
    for (index_t j = 0; j < kN; ++j)
      if (d.weight[to_size(i + j * kM)] > 0) {
        indices.push_back(static_cast<col_index_t>(j));
        values.push_back(d.a[to_size(i + j * kM)]);
      }
    indptr.push_back(static_cast<index_t>(indices.size()));
  }
  MissingValues unstored;
  unstored.unstored = Unstored::missing;
  const Source a = Source::csr<double>(CsrView<double>{kM, kN, indptr.data(), indices.data(), values.data()});
  const TransformResult<double> r = transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), unstored);
  expect_near_h(r, reference_h(d), 1e-10);
  EXPECT_EQ(r.unobserved_cols, 1);
  for (index_t l = 0; l < kK; ++l) EXPECT_EQ(r.H(l, 4), 0.0);
  EXPECT_NEAR(r.rel_error, reference_error(d, reference_h(d)), 1e-10);
}

TEST(MaskedTransform, NothingObservedGivesZeros) {
  // New data with no observed entry at all (a user with no ratings) is answered, not refused as factor() does;
  // and so is data whose observed entries are all zero.
  const Data d = make_data();
  const Source a = Source::dense<double>(DenseView<const double>(d.a.data(), kM, kN));
  const std::vector<double> none(d.weight.size(), 0.0);
  MissingValues missing;
  missing.mask = Source::dense<double>(DenseView<const double>(none.data(), kM, kN));
  const TransformResult<double> r = transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), missing);
  EXPECT_EQ(r.unobserved_cols, kN);
  EXPECT_EQ(r.observed, 0);
  EXPECT_EQ(r.rel_error, 0.0);
  for (index_t j = 0; j < kN; ++j)
    for (index_t l = 0; l < kK; ++l) EXPECT_EQ(r.H(l, j), 0.0);
  const std::vector<double> zeros(d.a.size(), 0.0);
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  const TransformResult<double> z =
      transform<double>(Source::dense<double>(DenseView<const double>(zeros.data(), kM, kN)),
                        DenseView<const double>(d.w.data(), kM, kK), missing);
  EXPECT_EQ(z.rel_error, 0.0);
  for (index_t j = 0; j < kN; ++j)
    for (index_t l = 0; l < kK; ++l) EXPECT_EQ(z.H(l, j), 0.0);
}

TEST(MaskedTransform, SinglePrecision) {
  const Data d = make_data();
  const std::vector<double> h = reference_h(d);
  std::vector<float> a(d.a.begin(), d.a.end()), w(d.w.begin(), d.w.end()), weight(d.weight.begin(), d.weight.end());
  MissingValues missing;
  missing.mask = Source::dense<float>(DenseView<const float>(weight.data(), kM, kN));
  const TransformResult<float> r = transform<float>(Source::dense<float>(DenseView<const float>(a.data(), kM, kN)),
                                                    DenseView<const float>(w.data(), kM, kK), missing);
  expect_near_h(r, h, 2e-4);
}

TEST(MaskedTransform, BadInput) {
  const Data d = make_data();
  const Source a = Source::dense<double>(DenseView<const double>(d.a.data(), kM, kN));
  MissingValues missing;
  // A mask of another shape names both shapes.
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kN, kM));
  const std::string shape =
      test::error_message([&] { (void)transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), missing); });
  EXPECT_NE(shape.find("9x14"), std::string::npos) << shape;
  EXPECT_NE(shape.find("14x9"), std::string::npos) << shape;
  // A negative weight names its place.
  std::vector<double> negative = d.weight;
  negative[to_size(2 + 3 * kM)] = -1;
  missing.mask = Source::dense<double>(DenseView<const double>(negative.data(), kM, kN));
  EXPECT_THROW((void)transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), missing), DataError);
  // W of another height, a negative W entry.
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  EXPECT_THROW((void)transform<double>(a, DenseView<const double>(d.w.data(), kM - 1, kK), missing), UsageError);
  std::vector<double> bad_w = d.w;
  bad_w[5] = -0.1;
  EXPECT_THROW((void)transform<double>(a, DenseView<const double>(bad_w.data(), kM, kK), missing), DataError);
  // The cuda backend's transform runs on the host, as the unmasked transform does (it was refused, so that
  // NMF(backend='cuda').transform(X, mask=M) always failed while transform(X) worked).
  const auto host = transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), missing);
  const auto cuda = transform<double>(a, DenseView<const double>(d.w.data(), kM, kK), missing, BackendKind::cuda);
  EXPECT_EQ(cuda.H.storage(), host.H.storage());
}

}  // namespace
}  // namespace dnmf

namespace dnmf {
namespace {

/// The largest violation of the optimality conditions of min ½ Σ_i w_i (a_ij − (W h_j)_i)² + l1 Σ h + ½ l2 ‖h‖²,
/// h ≥ 0, over every column, relative to the gradient's scale: with g = ∂/∂h, g_l = 0 where h_l > 0 and g_l ≥ 0
/// where h_l = 0 (an independent check: no solver, only the gradient).
double kkt_violation(const Data& d, const std::vector<double>& weight, const DenseMatrix<double>& h, double l1,
                     double l2) {
  double worst = 0;
  for (index_t j = 0; j < kN; ++j)
    for (index_t l = 0; l < kK; ++l) {
      double g = l1 + l2 * h(l, j), scale = l1 + l2 * h(l, j);
      for (index_t i = 0; i < kM; ++i) {
        double model = 0;
        for (index_t q = 0; q < kK; ++q) model += d.w[to_size(i + q * kM)] * h(q, j);
        const double term = weight[to_size(i + j * kM)] * d.w[to_size(i + l * kM)] * (model - d.a[to_size(i + j * kM)]);
        g += term;
        scale += std::abs(term);
      }
      if (h(l, j) < 0) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, (h(l, j) > 0 ? std::abs(g) : std::max(-g, 0.0)) / scale);
    }
  return worst;
}

// scikit-learn's transform applies the fit's W penalties; dnmf's Python estimator passes them, so transform takes
// an l1 and an l2 on the solved coefficients (it ignored them: fit_transform(X) and transform(X) of a penalised
// model differed by 13%). Each column is the exact optimum of the penalised problem, with and without missing
// values, checked by the optimality conditions; the penalties change the answer; bad ones are usage errors.
TEST(MaskedTransform, PenaltiesGiveThePenalisedOptimum) {
  const Data d = make_data();
  const TransformPenalty penalty{0.05, 0.3};
  const DenseView<const double> w(d.w.data(), kM, kK);
  const DenseView<const double> a(d.a.data(), kM, kN);
  const std::vector<double> ones(d.weight.size(), 1.0);
  const TransformResult<double> plain = transform<double>(MatrixRef<double>{a}, w);
  const TransformResult<double> unmasked = transform<double>(MatrixRef<double>{a}, w, BackendKind::cpu, penalty);
  EXPECT_LT(kkt_violation(d, ones, unmasked.H, penalty.l1, penalty.l2), 1e-10);
  EXPECT_GT(kkt_violation(d, ones, plain.H, penalty.l1, penalty.l2), 1e-3);  // the penalties mattered
  // rel_error stays the fit's error, without the penalty terms.
  EXPECT_NEAR(unmasked.rel_error, relative_error_direct<double>(MatrixRef<double>{a}, w, unmasked.H.view()), 1e-12);
  MissingValues missing;
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  const TransformResult<double> masked =
      transform<double>(Source::dense<double>(a), w, missing, BackendKind::cpu, penalty);
  EXPECT_LT(kkt_violation(d, d.weight, masked.H, penalty.l1, penalty.l2), 1e-10);
  for (const TransformPenalty bad : {TransformPenalty{-1, 0}, TransformPenalty{0, std::nan("")}}) {
    EXPECT_THROW((void)transform<double>(MatrixRef<double>{a}, w, BackendKind::cpu, bad), UsageError);
    EXPECT_THROW((void)transform<double>(Source::dense<double>(a), w, missing, BackendKind::cpu, bad), UsageError);
  }
}

// A basis is the same basis at any scale: with entries near 1e-160 WᵀW underflowed and the NNLS took every
// component for dead (H = 0, exit 0), near 1e160 it overflowed. Both transforms solve with the basis scaled by a
// power of two and hand back the caller's coefficients, penalties included; coefficients past the type's range
// are an error, not infinities.
TEST(MaskedTransform, ABasisOfAnyScaleGivesItsCoefficients) {
  const Data d = make_data();
  Data unmasked_data = d;
  std::fill(unmasked_data.weight.begin(), unmasked_data.weight.end(), 1.0);
  const std::vector<double> masked_h = reference_h(d), plain_h = reference_h(unmasked_data);
  const DenseView<const double> a(d.a.data(), kM, kN);
  MissingValues missing;
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  const auto scaled_by = [](const TransformResult<double>& r, double s) {
    TransformResult<double> out = r;
    for (double& v : out.H.storage()) v *= s;
    return out;
  };
  for (const double s : {1e-160, 1e-300, 1e160, 1e300}) {
    SCOPED_TRACE(::testing::Message() << "scale " << s);
    std::vector<double> ws = d.w;
    for (double& v : ws) v *= s;
    const DenseView<const double> w(ws.data(), kM, kK);
    const TransformResult<double> plain = transform<double>(MatrixRef<double>{a}, w);
    expect_near_h(scaled_by(plain, s), plain_h, 1e-10);
    EXPECT_NEAR(plain.rel_error, reference_error(unmasked_data, plain_h), 1e-10);
    const TransformResult<double> masked = transform<double>(Source::dense<double>(a), w, missing);
    expect_near_h(scaled_by(masked, s), masked_h, 1e-10);
    EXPECT_NEAR(masked.rel_error, reference_error(d, masked_h), 1e-10);
  }
  // Penalties on the caller's coefficients: W·s with (l1·s, l2·s²) is W with (l1, l2) in h·s.
  const double s = 1e-100;
  const TransformPenalty penalty{0.05, 0.3}, scaled_penalty{0.05 * s, 0.3 * s * s};
  std::vector<double> ws = d.w;
  for (double& v : ws) v *= s;
  const DenseView<const double> w(d.w.data(), kM, kK), small_w(ws.data(), kM, kK);
  const TransformResult<double> expected = transform<double>(MatrixRef<double>{a}, w, BackendKind::cpu, penalty);
  EXPECT_LT(kkt_violation(unmasked_data, unmasked_data.weight, expected.H, penalty.l1, penalty.l2), 1e-10);
  const TransformResult<double> got =
      scaled_by(transform<double>(MatrixRef<double>{a}, small_w, BackendKind::cpu, scaled_penalty), s);
  for (std::size_t e = 0; e < got.H.storage().size(); ++e)
    EXPECT_NEAR(got.H.storage()[e], expected.H.storage()[e], 1e-10) << e;
  const TransformResult<double> masked_got =
      scaled_by(transform<double>(Source::dense<double>(a), small_w, missing, BackendKind::cpu, scaled_penalty), s);
  EXPECT_LT(kkt_violation(d, d.weight, masked_got.H, penalty.l1, penalty.l2), 1e-10);

  // An L2 penalty on a basis too small for 2^2e·l2 to stay in range: l2 dominates the underflowing WᵀW, so h is
  // WᵀA / l2 to the NNLS's relative shift of 1e-12 (a capped penalty gave coefficients 1e11 times too large).
  for (const double tiny_scale : {1e-160, 1e-200}) {
    SCOPED_TRACE(::testing::Message() << "penalised, scale " << tiny_scale);
    const double l2 = 0.3;
    std::vector<double> tiny_w = d.w;
    for (double& v : tiny_w) v *= tiny_scale;
    const TransformResult<double> r = transform<double>(
        MatrixRef<double>{a}, DenseView<const double>(tiny_w.data(), kM, kK), BackendKind::cpu, {0, l2});
    for (index_t j = 0; j < kN; ++j)
      for (index_t l = 0; l < kK; ++l) {
        double p = 0;
        for (index_t i = 0; i < kM; ++i) p += tiny_w[to_size(i + l * kM)] * d.a[to_size(i + j * kM)];
        EXPECT_NEAR(r.H(l, j) / (p / l2), 1.0, 1e-10) << "l=" << l << " j=" << j;
      }
  }

  // float32: WᵀW of entries near 1e-25 is below float's range.
  std::vector<float> af(d.a.begin(), d.a.end()), wf(d.w.begin(), d.w.end()), tiny(d.w.size());
  for (std::size_t e = 0; e < tiny.size(); ++e) tiny[e] = static_cast<float>(d.w[e] * 1e-25);
  const DenseView<const float> af_view(af.data(), kM, kN);
  const TransformResult<float> f =
      transform<float>(MatrixRef<float>{af_view}, DenseView<const float>(wf.data(), kM, kK));
  const TransformResult<float> f_tiny =
      transform<float>(MatrixRef<float>{af_view}, DenseView<const float>(tiny.data(), kM, kK));
  double largest = 0;
  for (index_t e = 0; e < kK * kN; ++e) {
    largest = std::max(largest, static_cast<double>(f.H.storage()[to_size(e)]));
    EXPECT_NEAR(static_cast<double>(f_tiny.H.storage()[to_size(e)]) * 1e-25,
                static_cast<double>(f.H.storage()[to_size(e)]), 1e-4)
        << e;
  }
  EXPECT_GT(largest, 0.1);
  // Coefficients of 1e40 do not fit float32.
  std::vector<float> big_a(af);
  for (float& v : big_a) v *= 1e10F;
  for (std::size_t e = 0; e < tiny.size(); ++e) tiny[e] = static_cast<float>(d.w[e] * 1e-30);
  const auto overflowing = [&] {
    (void)transform<float>(MatrixRef<float>{DenseView<const float>(big_a.data(), kM, kN)},
                           DenseView<const float>(tiny.data(), kM, kK));
  };
  EXPECT_THROW(overflowing(), NumericalError);
  const std::string message = test::error_message(overflowing);
  EXPECT_NE(message.find("exceed float32's range"), std::string::npos) << message;
  {  // The same in float32 with an L2 penalty: h = WᵀA / l2 to float's rounding.
    for (std::size_t e = 0; e < tiny.size(); ++e) tiny[e] = static_cast<float>(d.w[e] * 1e-25);
    const TransformResult<float> r = transform<float>(
        MatrixRef<float>{af_view}, DenseView<const float>(tiny.data(), kM, kK), BackendKind::cpu, {0, 0.3});
    for (index_t j = 0; j < kN; ++j)
      for (index_t l = 0; l < kK; ++l) {
        double p = 0;
        for (index_t i = 0; i < kM; ++i)
          p += static_cast<double>(tiny[to_size(i + l * kM)]) * static_cast<double>(af[to_size(i + j * kM)]);
        EXPECT_NEAR(static_cast<double>(r.H(l, j)) / (p / 0.3), 1.0, 1e-5) << "l=" << l << " j=" << j;
      }
  }
  // Coefficients of 1e-320 (a huge basis for tiny data) keep few digits in float64: refused as well.
  std::vector<double> huge_w = d.w, tiny_a = d.a;
  for (double& v : huge_w) v *= 1e300;
  for (double& v : tiny_a) v *= 1e-20;
  const auto underflowing = [&] {
    (void)transform<double>(MatrixRef<double>{DenseView<const double>(tiny_a.data(), kM, kN)},
                            DenseView<const double>(huge_w.data(), kM, kK));
  };
  EXPECT_THROW(underflowing(), NumericalError);
  EXPECT_NE(test::error_message(underflowing).find("fall below float64's normal range"), std::string::npos);
  // One step further every coefficient rounds to zero: refused the same way, not H = 0 with a good error.
  for (double& v : tiny_a) v *= 1e-120;  // entries near 1e-140, coefficients near 1e-440
  EXPECT_THROW(underflowing(), NumericalError);
}

// A basis whose components differ in scale by more than 1/eps (1e-8 in float32, 1e-17 in float64) is solved as
// the same basis at one scale: each component is scaled by its own power of two. Before, the small component was
// taken for dead (its coefficients zero) and the others fitted without it (error 0.3 on exact data).
template <class T>
void check_mixed_scale_basis(double ratio, double tolerance) {
  SCOPED_TRACE(::testing::Message() << (std::is_same_v<T, float> ? "float32" : "float64") << ", ratio " << ratio);
  const Data d = make_data();
  std::vector<T> a(d.a.begin(), d.a.end()), w(d.w.begin(), d.w.end()), mixed(d.w.size());
  for (index_t i = 0; i < kM; ++i)
    for (index_t l = 0; l < kK; ++l)
      mixed[to_size(i + l * kM)] = static_cast<T>(d.w[to_size(i + l * kM)] * (l == 1 ? ratio : 1.0));
  const DenseView<const T> av(a.data(), kM, kN);
  const TransformResult<T> plain = transform<T>(MatrixRef<T>{av}, DenseView<const T>(w.data(), kM, kK));
  const TransformResult<T> got = transform<T>(MatrixRef<T>{av}, DenseView<const T>(mixed.data(), kM, kK));
  MissingValues missing;
  std::vector<T> ones(a.size(), T(1));
  missing.mask = Source::dense<T>(DenseView<const T>(ones.data(), kM, kN));
  const TransformResult<T> masked =
      transform<T>(Source::dense<T>(av), DenseView<const T>(mixed.data(), kM, kK), missing);
  double largest = 0;
  for (index_t j = 0; j < kN; ++j)
    for (index_t l = 0; l < kK; ++l) {
      const double expected = static_cast<double>(plain.H(l, j));
      const double back = l == 1 ? ratio : 1.0;  // component 1's coefficients are 1/ratio times larger
      largest = std::max(largest, expected);
      EXPECT_NEAR(static_cast<double>(got.H(l, j)) * back, expected, tolerance) << "l=" << l << " j=" << j;
      EXPECT_NEAR(static_cast<double>(masked.H(l, j)) * back, expected, tolerance) << "l=" << l << " j=" << j;
    }
  EXPECT_GT(largest, 0.1);
  EXPECT_NEAR(got.rel_error, plain.rel_error, tolerance);
}

TEST(MaskedTransform, ComponentsOfVeryDifferentScalesAreAllFitted) {
  check_mixed_scale_basis<float>(1e-8, 1e-4);
  check_mixed_scale_basis<float>(1e12, 1e-4);
  check_mixed_scale_basis<double>(1e-17, 1e-10);
  check_mixed_scale_basis<double>(1e-150, 1e-10);

  // With an L1 penalty, a small component's scaled penalty is huge (up to 1e300): its right-hand sides were left
  // at −l1, and the NNLS's tolerances, relative to the largest |b|, took every other coefficient for zero (H = 0,
  // exit 0). The optimum, checked by its optimality conditions on the basis as given:
  for (const double ratio : {1e-14, 1e-100}) {
    SCOPED_TRACE(::testing::Message() << "l1, ratio " << ratio);
    Data mixed = make_data();
    for (index_t i = 0; i < kM; ++i) mixed.w[to_size(i + kM)] *= ratio;
    const DenseView<const double> w(mixed.w.data(), kM, kK), a(mixed.a.data(), kM, kN);
    const TransformPenalty penalty{0.05, 0};
    const TransformResult<double> plain = transform<double>(MatrixRef<double>{a}, w, BackendKind::cpu, penalty);
    std::vector<double> ones(mixed.a.size(), 1.0);
    MissingValues missing;
    missing.mask = Source::dense<double>(DenseView<const double>(mixed.weight.data(), kM, kN));
    const TransformResult<double> masked =
        transform<double>(Source::dense<double>(a), w, missing, BackendKind::cpu, penalty);
    EXPECT_LT(kkt_violation(mixed, ones, plain.H, penalty.l1, 0), 1e-9);
    EXPECT_LT(kkt_violation(mixed, mixed.weight, masked.H, penalty.l1, 0), 1e-9);
    EXPECT_GT(*std::max_element(plain.H.storage().begin(), plain.H.storage().end()), 0.1);
    EXPECT_GT(*std::max_element(masked.H.storage().begin(), masked.H.storage().end()), 0.1);
  }
}

// A mask's weights scale its squared norm, not the data: weights of 1e-305 on ordinary data solve as weights of 1
// (the data check took Σ w a² for the data's scale and refused them as "too small").
TEST(MaskedTransform, TinyMaskWeightsOnOrdinaryDataSolveAsUnitWeights) {
  const Data d = make_data();
  const DenseView<const double> w(d.w.data(), kM, kK), a(d.a.data(), kM, kN);
  std::vector<double> tiny(d.weight);
  for (double& v : tiny) v *= 1e-305;
  MissingValues unit, scaled;
  unit.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  scaled.mask = Source::dense<double>(DenseView<const double>(tiny.data(), kM, kN));
  const TransformResult<double> expected = transform<double>(Source::dense<double>(a), w, unit);
  const TransformResult<double> got = transform<double>(Source::dense<double>(a), w, scaled);
  for (std::size_t e = 0; e < got.H.storage().size(); ++e)
    EXPECT_NEAR(got.H.storage()[e], expected.H.storage()[e], 1e-10) << e;
  EXPECT_NEAR(got.rel_error, expected.rel_error, 1e-10);
}

// Data whose squares leave double's range are refused, as factor() refuses them (their error read NaN or 0 beside
// correct coefficients); float32 data of 1e20, which factor() takes, report their error (it read inf).
TEST(MaskedTransform, DataOfExtremeScaleAreRefusedOrReportTheirError) {
  const Data d = make_data();
  const DenseView<const double> w(d.w.data(), kM, kK);
  MissingValues missing;
  missing.mask = Source::dense<double>(DenseView<const double>(d.weight.data(), kM, kN));
  for (const double s : {1e250, 1e-250, 1e-160}) {
    SCOPED_TRACE(::testing::Message() << "scale " << s);
    std::vector<double> a = d.a;
    for (double& v : a) v *= s;
    const DenseView<const double> av(a.data(), kM, kN);
    const std::string what = s > 1 ? "overflow double precision" : "too small";
    for (const bool with_mask : {false, true}) {
      const auto run = [&] {
        if (with_mask)
          (void)transform<double>(Source::dense<double>(av), w, missing);
        else
          (void)transform<double>(MatrixRef<double>{av}, w);
      };
      if (s > 1)
        EXPECT_THROW(run(), NumericalError);  // as factor() reports squares that overflow
      else
        EXPECT_THROW(run(), DataError);
      EXPECT_NE(test::error_message(run).find(what), std::string::npos) << test::error_message(run);
    }
  }
  std::vector<float> a(d.a.begin(), d.a.end()), big(d.a.size()), wf(d.w.begin(), d.w.end());
  for (std::size_t e = 0; e < big.size(); ++e) big[e] = static_cast<float>(d.a[e] * 1e20);
  const DenseView<const float> wv(wf.data(), kM, kK);
  const TransformResult<float> unit = transform<float>(MatrixRef<float>{DenseView<const float>(a.data(), kM, kN)}, wv);
  const TransformResult<float> large =
      transform<float>(MatrixRef<float>{DenseView<const float>(big.data(), kM, kN)}, wv);
  ASSERT_TRUE(std::isfinite(large.rel_error));
  EXPECT_NEAR(large.rel_error, unit.rel_error, 1e-4 * unit.rel_error);
  EXPECT_GT(unit.rel_error, 0.01);
}

}  // namespace
}  // namespace dnmf
