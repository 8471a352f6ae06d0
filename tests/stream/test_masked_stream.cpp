// Masked NMF with A and its mask streamed in tiles (solvers/masked_stream.hpp) against the in-memory masked
// solver (itself checked against a plain-loop reference in tests/unit/test_masked.cpp): same start, same
// iterations, f64 within 1e-10, with tiles much smaller than the matrix; bad input found mid-stream.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/masked_resident_bytes.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/context.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/io.hpp"
#include "io/dcsr.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "solvers/masked_stream.hpp"
#include "stream/masked_tiles.hpp"
#include "stream/planner.hpp"
#include "stream/tile_source.hpp"
#include "support/error_message.hpp"
#include "support/matrix_views.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace dnmf::stream {
namespace {

constexpr Algorithm kAll[] = {Algorithm::mu, Algorithm::kl, Algorithm::hals, Algorithm::bpp};
constexpr index_t kM = 90, kN = 60;

struct Outcome {
  DenseMatrix<double> wt, h;
  FactorResult<double> result;
  std::size_t tiles = 0;
  long long passes = 0;
};

/// Bytes of `lines` lines of `length` entries of `scalar` bytes, for A and its mask.
std::size_t pair_bytes(index_t lines, index_t length, std::size_t scalar) {
  return 2 * to_size(lines) * to_size(length) * scalar;
}

FactorOptions options_for(Algorithm algorithm, int iterations) {
  FactorOptions o;
  o.rank = 4;
  o.algorithm = algorithm;
  o.max_iterations = iterations;
  o.tol = 0;
  o.seed = 7;
  o.backend = BackendKind::cpu;
  return o;
}

/// Weights: about 15% missing, 5% weighted 2.5, the rest 1 (the in-memory solver's Gram corrections path).
DenseMatrix<double> make_mask(index_t m, index_t n) {
  DenseMatrix<double> w(m, n, 1.0);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      const index_t h = (i * 31 + j * 17) % 20;
      w(i, j) = h < 3 ? 0.0 : (h == 3 ? 2.5 : 1.0);
    }
  return w;
}

/// The figures the comparisons read from a run, and its factors in double.
template <class T>
Outcome outcome_of(const FactorResult<T>& r, const solvers::Factors<T>& f) {
  Outcome out;
  out.result.rel_error = r.rel_error;
  out.result.objective = r.objective;
  out.result.iterations = r.iterations;
  out.result.converged = r.converged;
  out.result.rel_error_history = r.rel_error_history;
  out.result.objective_history = r.objective_history;
  out.result.unobserved_rows = r.unobserved_rows;
  out.result.unobserved_cols = r.unobserved_cols;
  out.wt = DenseMatrix<double>(f.wt.rows(), f.wt.cols());
  out.h = DenseMatrix<double>(f.h.rows(), f.h.cols());
  for (std::size_t e = 0; e < f.wt.storage().size(); ++e) out.wt.storage()[e] = f.wt.storage()[e];
  for (std::size_t e = 0; e < f.h.storage().size(); ++e) out.h.storage()[e] = f.h.storage()[e];
  return out;
}

template <class T>
Outcome in_memory(const MatrixRef<T>& a, const MatrixRef<T>* mask, const MissingValues& missing,
                  const FactorOptions& o) {
  const solvers::StoredMatrix<T> sa{&a, false, "A"};
  const solvers::StoredMatrix<T> sm{mask, false, "M"};
  const auto problem = solvers::build_masked_problem<T>(sa, sm, missing);
  solvers::Factors<T> f;
  const FactorResult<T> r = solvers::solve_masked<T>(problem, o, f);
  return outcome_of(r, f);
}

template <class T>
Outcome streamed(const std::string& a_path, const std::string& mask_path, bool nan_missing, std::size_t slot_bytes,
                 int depth, const FactorOptions& o) {
  const io::MatrixShape shape = source_shape(a_path);
  auto a = open_source<T>(a_path, {0, shape.rows}, {0, shape.cols});
  std::unique_ptr<TileSource<T>> mask;
  if (!mask_path.empty()) mask = open_source<T>(mask_path, {0, shape.rows}, {0, shape.cols});
  MaskedTiles<T> tiles(std::move(a), std::move(mask), slot_bytes, depth);
  solvers::StreamedMaskedProblem<T> p;
  p.tiles = &tiles;
  p.a_name = a_path;
  p.mask_name = mask_path;
  p.nan_missing = nan_missing;
  p.m = shape.rows;
  p.n = shape.cols;
  solvers::scan_masked_tiles(p);
  solvers::Factors<T> f;
  const FactorResult<T> r = solvers::solve_masked_streamed<T>(p, o, f);
  Outcome out = outcome_of(r, f);
  out.tiles = tiles.tile_count();
  out.passes = tiles.stats().passes;
  return out;
}

void expect_same(const Outcome& s, const Outcome& r, double tol, const std::string& what) {
  EXPECT_LE(test::max_relative_difference(s.wt, r.wt), tol) << what << ": W";
  EXPECT_LE(test::max_relative_difference(s.h, r.h), tol) << what << ": H";
  EXPECT_EQ(s.result.iterations, r.result.iterations) << what;
  EXPECT_EQ(s.result.converged, r.result.converged) << what;
  ASSERT_EQ(s.result.rel_error_history.size(), r.result.rel_error_history.size()) << what;
  for (std::size_t i = 0; i < s.result.rel_error_history.size(); ++i) {
    EXPECT_NEAR(s.result.rel_error_history[i], r.result.rel_error_history[i], 100 * tol * r.result.rel_error_history[i])
        << what << ": rel_error at iteration " << i + 1;
    EXPECT_NEAR(s.result.objective_history[i], r.result.objective_history[i],
                100 * tol * std::abs(r.result.objective_history[i]))
        << what << ": objective at iteration " << i + 1;
  }
  EXPECT_NEAR(s.result.rel_error, r.result.rel_error, 100 * tol * r.result.rel_error) << what;
  // The final objective, KL's included, is of the returned pair on both paths.
  EXPECT_NEAR(s.result.objective, r.result.objective, 100 * tol * std::abs(r.result.objective)) << what;
}

class MaskedStream : public test::TempDirTest {
 protected:
  void SetUp() override {
    test::TempDirTest::SetUp();
    a_ = test::noisy_rank4(kM, kN, 5, 0.05);
    w_ = make_mask(kM, kN);
    io::write_npy<double>(path("A.npy"), a_.view());
    io::write_npy<double>(path("M.npy"), w_.view());
    io::write_npy_row_major<double>(path("Ac.npy"), test::row_major(a_).data(), kM, kN);
    io::write_npy_row_major<double>(path("Mc.npy"), test::row_major(w_).data(), kM, kN);
  }
  DenseMatrix<double> a_, w_;
};

// Column stripes (Fortran order, tiles lent from the mapping) and row stripes (C order, read and transposed):
// each with A's half first and the other half first, every algorithm.
TEST_F(MaskedStream, DenseMaskEqualsInMemory) {
  const MatrixRef<double> a{a_.view()}, w{w_.view()};
  MissingValues missing;
  missing.mask = Source::file(path("M.npy"));
  for (const Algorithm algo : kAll)
    for (const bool w_first : {false, true}) {
      FactorOptions o = options_for(algo, 20);
      o.w_first = w_first;
      const Outcome reference = in_memory<double>(a, &w, missing, o);
      const std::string what = to_string(algo) + (w_first ? " w_first" : " h_first");
      // 6 columns (or rows) of A and of the mask per tile: 10 (15) tiles.
      const Outcome columns = streamed<double>(path("A.npy"), path("M.npy"), false, pair_bytes(6, kM, 8), 3, o);
      expect_same(columns, reference, 1e-10, what + " column stripes");
      EXPECT_GE(columns.tiles, 8U);
      const Outcome rows = streamed<double>(path("Ac.npy"), path("Mc.npy"), false, pair_bytes(6, kN, 8), 2, o);
      expect_same(rows, reference, 1e-10, what + " row stripes");
      EXPECT_GE(rows.tiles, 12U);
      // One pass per iteration, plus the scan and the final error; the Frobenius figures of the last iteration
      // (H first) or the first half's sums (W first) take one more.
      EXPECT_EQ(columns.passes, algo == Algorithm::kl && !w_first ? 20 + 2 : 20 + 3) << what;
    }
}

// The stopping rule stops both at the same iteration (the streamed Frobenius figures arrive a pass late and the
// pass that finds the stop is undone).
TEST_F(MaskedStream, StoppingRuleStopsAtTheSameIteration) {
  const MatrixRef<double> a{a_.view()}, w{w_.view()};
  MissingValues missing;
  missing.mask = Source::file(path("M.npy"));
  for (const Algorithm algo : kAll)
    for (const bool w_first : {false, true}) {
      FactorOptions o = options_for(algo, 300);
      o.tol = 1e-3;
      o.w_first = w_first;
      const Outcome reference = in_memory<double>(a, &w, missing, o);
      ASSERT_TRUE(reference.result.converged) << to_string(algo);
      ASSERT_LT(reference.result.iterations, 300);
      const Outcome s = streamed<double>(path("A.npy"), path("M.npy"), false, pair_bytes(5, kM, 8), 3, o);
      expect_same(s, reference, 1e-9, to_string(algo) + " with --tol");
    }
}

TEST_F(MaskedStream, NanMissingWithoutMask) {
  DenseMatrix<double> a = a_;
  for (index_t j = 0; j < kN; ++j)
    for (index_t i = 0; i < kM; ++i)
      if ((i + 3 * j) % 11 == 0) a(i, j) = std::numeric_limits<double>::quiet_NaN();
  io::write_npy<double>(path("nan.npy"), a.view());
  const MatrixRef<double> ref{a.view()};
  MissingValues missing;
  missing.nan_missing = true;
  for (const Algorithm algo : kAll) {
    const FactorOptions o = options_for(algo, 20);
    const Outcome reference = in_memory<double>(ref, nullptr, missing, o);
    const Outcome s = streamed<double>(path("nan.npy"), "", true, pair_bytes(7, kM, 8) / 2, 3, o);
    expect_same(s, reference, 1e-10, to_string(algo) + " --missing nan");
    EXPECT_GE(s.tiles, 8U);
  }
}

// A .dcsr with --unstored missing: only stored entries observed; nnz-balanced row tiles.
TEST_F(MaskedStream, SparseUnstoredMissingEqualsInMemory) {
  const auto dense = test::noisy_rank4(kM, kN, 9, 0.6);
  const CsrMatrix<double> csr = test::to_csr(dense);
  io::write_dcsr<double>(path("S.dcsr"), csr.view());
  const MatrixRef<double> ref{csr.view()};
  MissingValues missing;
  missing.unstored = Unstored::missing;
  for (const Algorithm algo : kAll)
    for (const bool w_first : {false, true}) {
      FactorOptions o = options_for(algo, 20);
      o.w_first = w_first;
      const Outcome reference = in_memory<double>(ref, nullptr, missing, o);
      const Outcome s = streamed<double>(path("S.dcsr"), "", false, 3000, 3, o);
      expect_same(s, reference, 1e-10, to_string(algo) + (w_first ? " w_first" : "") + " dcsr");
      EXPECT_GE(s.tiles, 4U);
    }
}

// The masked read checks no values (the solver checks the observed ones), but it checks a CSR's structure on
// each tile's first read: a duplicate column in a row (a well-checksummed but non-canonical file) was fitted as
// two observations, where the in-memory read refuses the file.
TEST_F(MaskedStream, SparseDuplicateColumnIsRefusedAsInMemory) {
  const CsrMatrix<double> csr = test::to_csr(test::noisy_rank4(kM, kN, 9, 0.6));
  std::vector<col_index_t> indices = csr.indices();
  const index_t row = 70, at = csr.indptr()[to_size(row)];
  ASSERT_GE(csr.indptr()[to_size(row) + 1] - at, 2);
  indices[to_size(at + 1)] = indices[to_size(at)];  // row 70 lists its first column twice
  io::write_dcsr_unchecked<double>(path("dup.dcsr"),
                                   CsrMatrix<double>(kM, kN, csr.indptr(), indices, csr.values()).view());
  const FactorOptions o = options_for(Algorithm::mu, 2);
  const std::string message =
      test::error_message([&] { (void)streamed<double>(path("dup.dcsr"), "", false, 3000, 3, o); });
  EXPECT_NE(message.find("row 70 has column index"), std::string::npos) << message;
  EXPECT_NE(message.find("unsorted or duplicate"), std::string::npos) << message;
}

TEST_F(MaskedStream, FloatAgreesWithInMemoryFloat) {
  DenseMatrix<float> af(kM, kN), wf(kM, kN);
  for (std::size_t e = 0; e < af.storage().size(); ++e) {
    af.storage()[e] = static_cast<float>(a_.storage()[e]);
    wf.storage()[e] = static_cast<float>(w_.storage()[e]);
  }
  io::write_npy<float>(path("Af.npy"), af.view());
  io::write_npy<float>(path("Mf.npy"), wf.view());
  const MatrixRef<float> a{af.view()}, w{wf.view()};
  MissingValues missing;
  missing.mask = Source::file(path("Mf.npy"));
  for (const Algorithm algo : kAll) {
    const FactorOptions o = options_for(algo, 20);
    const Outcome reference = in_memory<float>(a, &w, missing, o);
    const Outcome s = streamed<float>(path("Af.npy"), path("Mf.npy"), false, pair_bytes(6, kM, 4), 3, o);
    EXPECT_LE(test::max_relative_difference(s.wt, reference.wt), 2e-3) << to_string(algo);
    EXPECT_LE(test::max_relative_difference(s.h, reference.h), 2e-3) << to_string(algo);
    EXPECT_NEAR(s.result.rel_error, reference.result.rel_error, 1e-3) << to_string(algo);
  }
}

TEST_F(MaskedStream, UnobservedRowAndColumnAreZero) {
  DenseMatrix<double> w = w_;
  for (index_t j = 0; j < kN; ++j) w(4, j) = 0;
  for (index_t i = 0; i < kM; ++i) w(i, 33) = 0;
  io::write_npy<double>(path("holes.npy"), w.view());
  const MatrixRef<double> a{a_.view()}, wr{w.view()};
  MissingValues missing;
  missing.mask = Source::file(path("holes.npy"));
  const FactorOptions o = options_for(Algorithm::hals, 20);
  const Outcome reference = in_memory<double>(a, &wr, missing, o);
  const Outcome s = streamed<double>(path("A.npy"), path("holes.npy"), false, pair_bytes(6, kM, 8), 3, o);
  expect_same(s, reference, 1e-10, "holes");
  EXPECT_EQ(s.result.unobserved_rows, 1);
  EXPECT_EQ(s.result.unobserved_cols, 1);
  for (index_t l = 0; l < 4; ++l) {
    EXPECT_EQ(s.wt(l, 4), 0.0);
    EXPECT_EQ(s.h(l, 33), 0.0);
  }
}

TEST_F(MaskedStream, BadInputFoundMidStreamNamesFileAndPlace) {
  const FactorOptions o = options_for(Algorithm::mu, 2);
  DenseMatrix<double> w = w_;
  w(70, 41) = -0.5;
  io::write_npy<double>(path("neg.npy"), w.view());
  std::string message;
  try {
    (void)streamed<double>(path("A.npy"), path("neg.npy"), false, pair_bytes(6, kM, 8), 3, o);
  } catch (const DataError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, path("neg.npy") +
                         ": weight at row 70, column 41 (0-based) is -0.5; mask weights must be finite and >= 0 "
                         "(0 = missing)");
  w(70, 41) = std::numeric_limits<double>::quiet_NaN();
  io::write_npy<double>(path("nanw.npy"), w.view());
  message = test::error_message(
      [&] { (void)streamed<double>(path("A.npy"), path("nanw.npy"), false, pair_bytes(6, kM, 8), 3, o); });
  EXPECT_NE(message.find("nanw.npy: weight at row 70, column 41 (0-based) is nan"), std::string::npos) << message;
  // A bad observed entry of A; the same entry where the mask says missing is never read.
  DenseMatrix<double> a = a_;
  a(51, 30) = -2;
  io::write_npy<double>(path("badA.npy"), a.view());
  message = test::error_message(
      [&] { (void)streamed<double>(path("badA.npy"), path("M.npy"), false, pair_bytes(6, kM, 8), 3, o); });
  EXPECT_NE(message.find("badA.npy: entry at row 51, column 30 (0-based) is -2"), std::string::npos) << message;
  w = w_;
  w(51, 30) = 0;
  io::write_npy<double>(path("hide.npy"), w.view());
  EXPECT_NO_THROW((void)streamed<double>(path("badA.npy"), path("hide.npy"), false, pair_bytes(6, kM, 8), 3, o));
  // A mask in the other order would be cut in other stripes.
  message = test::error_message(
      [&] { (void)streamed<double>(path("A.npy"), path("Mc.npy"), false, pair_bytes(6, kM, 8), 3, o); });
  EXPECT_NE(message.find("Mc.npy: streamed in row stripes but"), std::string::npos) << message;
}

/// The minimum budget a factor() call states when refused (the planner's "needs at least N bytes").
long long stated_minimum(const Source& a, const FactorOptions& o) {
  Context tiny;
  tiny.memory_budget = 1024;
  const std::string message = test::error_message([&] { (void)factor<double>(a, o, tiny); });
  const std::string marker = "needs at least ";
  const std::size_t at = message.find(marker);
  if (at == std::string::npos) {
    ADD_FAILURE() << message;
    return 0;
  }
  return std::stoll(message.substr(at + marker.size())) - stream::kStatedBaselineJitter;  // the planner's own figure
}

/// factor() under a budget `margin` bytes above the stated minimum. The minimum follows the process's RSS, which
/// a sanitizer's quarantine raises by more than the margin between two calls: a refusal restates it, and the
/// run is tried again at the new minimum.
Factorization<double> factor_near_minimum(const Source& a, const FactorOptions& o, long long margin) {
  Context budget;
  budget.memory_budget = stated_minimum(a, o) + margin;
  for (int attempt = 0;; ++attempt) {
    try {
      return factor<double>(a, o, budget);
    } catch (const Error& e) {
      const std::string message = e.what(), marker = "needs at least ";
      const std::size_t at = message.find(marker);
      if (attempt == 4 || at == std::string::npos) throw;
      budget.memory_budget = std::stoll(message.substr(at + marker.size())) - stream::kStatedBaselineJitter + margin;
    }
  }
}

// Through the public entry point: a budget just above the minimum streams A and its mask in small tiles, and
// the factors equal those of the in-memory masked run; the report says so.
TEST_F(MaskedStream, FactorUnderABudgetEqualsInMemory) {
  // 1.8 MiB, 3.7 MiB with its mask: a budget 1 MiB above the minimum cuts them in about ten pairs of tiles.
  const index_t m = 600, n = 400;
  const auto a = test::noisy_rank4(m, n, 11);
  const auto w = make_mask(m, n);
  io::write_npy<double>(path("big.npy"), a.view());
  io::write_npy<double>(path("bigM.npy"), w.view());
  const Source source = Source::file(path("big.npy"));
  for (const Algorithm algo : kAll) {
    FactorOptions o = options_for(algo, 10);
    o.missing.mask = Source::file(path("bigM.npy"));
    const Factorization<double> reference = factor<double>(source, o, Context{});
    const Factorization<double> run = factor_near_minimum(source, o, 1LL << 20);
    EXPECT_TRUE(run.memory.streamed) << to_string(algo);
    EXPECT_GE(run.memory.tiles_per_pass, 4) << to_string(algo);
    EXPECT_LE(test::max_relative_difference(run.result.W, reference.result.W), 1e-10) << to_string(algo);
    EXPECT_LE(test::max_relative_difference(run.result.H, reference.result.H), 1e-10) << to_string(algo);
    EXPECT_EQ(run.result.observed, reference.result.observed);
    EXPECT_TRUE(run.result.masked);
  }
  // A budget the in-memory masked solver fits: held, its plan counting 8 copies of A, in the report.
  FactorOptions o = options_for(Algorithm::mu, 3);
  o.missing.mask = Source::file(path("bigM.npy"));
  Context roomy;
  roomy.memory_budget = 1LL << 30;
  const Factorization<double> held = factor<double>(source, o, roomy);
  EXPECT_FALSE(held.memory.streamed);
  EXPECT_EQ(held.memory.budget_bytes, 1LL << 30);
  EXPECT_GE(held.memory.matrix_bytes, 8 * m * n * 8);
}

// The residence plan's bytes beside A's copies (api/masked_resident_bytes.hpp) are those of the Gram lists the
// in-memory solver builds: counted from the files, for a weighted mask and for NaN taken as missing, they equal
// the lists build_masked_problem makes; the bound from the headers is never below them.
TEST_F(MaskedStream, ResidencePlanCountsTheGramListsTheSolverBuilds) {
  const index_t m = 70, n = 50;
  auto a = test::noisy_rank4(m, n, 5);
  for (index_t j = 0; j < n; j += 3) a(j % m, j) = std::numeric_limits<double>::quiet_NaN();
  const auto w = make_mask(m, n);
  io::write_npy<double>(path("a.npy"), a.view());
  io::write_npy<double>(path("w.npy"), w.view());
  const MatrixRef<double> ar = DenseView<const double>(a.view());
  const MatrixRef<double> wr = DenseView<const double>(w.view());
  dist::SingleCommunicator self;
  const dist::Grid grid(self, {1, 1});
  const dist::Layout layout = dist::make_layout(grid, m, n);
  const io::MatrixShape shape = io::read_shape(path("a.npy"));
  for (const bool with_mask : {true, false}) {
    MissingValues missing;
    missing.nan_missing = true;
    if (with_mask) missing.mask = Source::file(path("w.npy"));
    const solvers::MaskedProblem<double> p = solvers::build_masked_problem<double>(
        {&ar, false, "a.npy"}, {with_mask ? &wr : nullptr, false, "w.npy"}, missing);
    const auto listed = static_cast<std::int64_t>(p.h_half.gram_row.size() + p.w_half.gram_row.size());
    ASSERT_GT(listed, 0);
    const std::int64_t starts = (m + n + 2) * static_cast<std::int64_t>(sizeof(index_t));
    std::optional<io::MatrixShape> mask_shape;
    if (with_mask) mask_shape = io::read_shape(path("w.npy"));
    const std::int64_t counted =
        api::masked_resident_extra_bytes<double>(path("a.npy"), shape, mask_shape, missing, layout, true);
    EXPECT_EQ(counted, listed * static_cast<std::int64_t>(sizeof(index_t) + sizeof(double)) + starts) << with_mask;
    EXPECT_GE(api::masked_resident_extra_bytes<double>(path("a.npy"), shape, mask_shape, missing, layout, false),
              counted)
        << with_mask;
  }
}

// A pass over a large file takes minutes: a cancel (Ctrl-C in Python) is answered before the next tile, not at the
// end of the pass. Unmasked and masked, the statistics pass or the scan being the first.
TEST_F(MaskedStream, CancelStopsInsideAPass) {
  const auto big = test::noisy_rank4(600, 400, 11);
  io::write_npy<double>(path("big.npy"), big.view());
  io::write_npy<double>(path("bigM.npy"), make_mask(600, 400).view());
  const Source a = Source::file(path("big.npy"));
  for (const bool masked : {false, true}) {
    FactorOptions o = options_for(Algorithm::mu, 5);
    if (masked) o.missing.mask = Source::file(path("bigM.npy"));
    // Above the minimum by less than A (1.8 MiB), so that A does not fit beside what the minimum counts.
    const long long margin = 512LL << 10;
    const Factorization<double> whole = factor_near_minimum(a, o, margin);
    ASSERT_TRUE(whole.memory.streamed) << masked;
    ASSERT_GE(whole.memory.tiles_per_pass, 4) << masked;
    int asked = 0;
    o.cancel = [&asked] { return ++asked == 3; };
    try {
      (void)factor_near_minimum(a, o, margin);
      ADD_FAILURE() << "the cancel was ignored, masked " << masked;
    } catch (const Cancelled& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("cancelled while streaming"), std::string::npos) << message;
      // "of N": the plan follows the process's RSS, so N may differ from the first run's.
      EXPECT_NE(message.find("big.npy (tile 3 of "), std::string::npos) << message;
    }
    EXPECT_EQ(asked, 3) << masked;
  }
}

// What streaming cannot do is a UsageError that says what to do instead.
TEST_F(MaskedStream, RefusalsSayWhatToDo) {
  // 1.8 MiB: 8 copies do not fit 2 MiB above the minimum, so the plan streams.
  const auto big = test::noisy_rank4(600, 400, 11);
  io::write_npy<double>(path("big.npy"), big.view());
  io::write_npy<double>(path("bigM.npy"), make_mask(600, 400).view());
  FactorOptions o = options_for(Algorithm::mu, 5);
  o.missing.mask = Source::file(path("bigM.npy"));
  const Source a = Source::file(path("big.npy"));
  o.init = InitMethod::nndsvd;
  std::string message = test::error_message([&] { (void)factor_near_minimum(a, o, 2LL << 20); });
  EXPECT_NE(message.find("--init random"), std::string::npos) << message;
  Context budget;
  budget.memory_budget = stated_minimum(a, o) + (2LL << 20);
  // An in-memory A with a budget.
  FactorOptions plain = options_for(Algorithm::mu, 5);
  plain.missing.nan_missing = true;
  message = test::error_message(
      [&] { (void)factor<double>(Source::dense(DenseView<const double>(a_.view())), plain, budget); });
  EXPECT_NE(message.find("file sources"), std::string::npos) << message;
  // A mask beside a .dcsr A does not stream: refused, saying why, when the problem does not fit in memory.
  io::write_dcsr<double>(path("big.dcsr"), test::to_csr(big).view());
  FactorOptions sparse = options_for(Algorithm::mu, 5);
  sparse.missing.unstored = Unstored::missing;
  sparse.missing.mask = Source::file(path("bigM.npy"));
  Context tiny;
  tiny.memory_budget = 1 << 20;
  message = test::error_message([&] { (void)factor<double>(Source::file(path("big.dcsr")), sparse, tiny); });
  EXPECT_NE(message.find("cannot stream"), std::string::npos) << message;
  EXPECT_NE(message.find("a mask beside a sparse A"), std::string::npos) << message;
}

// hals and bpp hold a k x k weighted Gram matrix per row of A (column stripes): when those do not fit but the
// rest would, the refusal names the algorithm and suggests mu or kl, which run under the same budget.
TEST_F(MaskedStream, GramMatricesThatDoNotFitAreRefusedNamingTheAlgorithm) {
  const index_t m = 20000, n = 50;  // k = 20: 62.5 MiB of Gram matrices for an 7.6 MiB A
  auto tall = test::noisy_rank4(m, n, 13);
  for (index_t i = 0; i < m; i += 97) tall(i, i % n) = std::numeric_limits<double>::quiet_NaN();
  io::write_npy<double>(path("tall.npy"), tall.view());
  const Source a = Source::file(path("tall.npy"));
  FactorOptions o = options_for(Algorithm::mu, 2);
  o.rank = 20;
  o.missing.nan_missing = true;
  Context budget;
  // Room for mu's sums and bpp's NNLS workspace, far from the Gram matrices.
  budget.memory_budget = stated_minimum(a, o) + (8LL << 20);
  for (const Algorithm algo : {Algorithm::hals, Algorithm::bpp}) {
    o.algorithm = algo;
    const std::string message = test::error_message([&] { (void)factor<double>(a, o, budget); });
    EXPECT_NE(message.find("--algo " + to_string(algo)), std::string::npos) << message;
    EXPECT_NE(message.find("use --algo mu or kl"), std::string::npos) << message;
  }
  o.algorithm = Algorithm::kl;
  EXPECT_TRUE(factor_near_minimum(a, o, 8LL << 20).memory.streamed);
}

}  // namespace
}  // namespace dnmf::stream
