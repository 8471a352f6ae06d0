// The time model of --grid auto (dist/grid_cost.hpp): the path the iteration takes on each grid, the predicted
// seconds against the formula written out here, and the choice: the fastest grid, the words-only one on a near
// tie, the fused side on one node for a dense block, fewer words for hypersparse wide matrices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "dist/grid.hpp"
#include "dist/grid_cost.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {
namespace {

GridProblem dense(index_t m, index_t n, index_t k) {
  GridProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

GridProblem sparse(index_t m, index_t n, index_t k, double nnz) {
  GridProblem p = dense(m, n, k);
  p.sparse = true;
  p.nnz = nnz;
  return p;
}

TEST(GridCost, PathFollowsTheSolversRule) {
  const GridProblem d = dense(100, 80, 4);
  EXPECT_EQ(pass_path({1, 1}, d), PassPath::fused_h) << "one process: dense prefers the H side";
  EXPECT_EQ(pass_path({1, 4}, d), PassPath::fused_h);
  EXPECT_EQ(pass_path({4, 1}, d), PassPath::fused_w) << "H is split over the grid column: W's side";
  EXPECT_EQ(pass_path({2, 2}, d), PassPath::unfused);
  GridProblem no_fuse = d;
  no_fuse.fused = false;
  EXPECT_EQ(pass_path({1, 4}, no_fuse), PassPath::unfused) << "--no-fuse";
  const GridProblem s = sparse(100, 80, 4, 500);
  EXPECT_EQ(pass_path({1, 1}, s), PassPath::fused_w) << "CSR tiles by rows only";
  EXPECT_EQ(pass_path({1, 4}, s), PassPath::unfused);
  EXPECT_EQ(pass_path({4, 1}, s), PassPath::fused_w);
  EXPECT_EQ(to_string(PassPath::fused_h), "fused-H");
  EXPECT_EQ(to_string(PassPath::fused_w), "fused-W");
  EXPECT_EQ(to_string(PassPath::unfused), "unfused");
}

// Every term written out from the model's definition (docs/scaling.md) for three grids of one problem.
TEST(GridCost, PredictIsTheFormula) {
  const MachineRates r;
  const GridProblem p = dense(1001, 600, 8);
  struct Case {
    GridShape shape;
    double gflops;
  };
  for (const Case& c :
       {Case{{1, 3}, r.dense_fused_contiguous}, Case{{3, 1}, r.dense_fused_strided}, Case{{2, 3}, r.dense_unfused}}) {
    const double rows = std::ceil(1001.0 / c.shape.rows), cols = std::ceil(600.0 / c.shape.cols);
    const double words = words_per_rank(c.shape, 1001, 600, 8);
    const double p_total = c.shape.size();
    const double steps = 2.0 * (c.shape.rows - 1) + 2.0 * (c.shape.cols - 1) + 8.0 * std::ceil(std::log2(p_total));
    const GridCost got = predict(c.shape, p, r);
    SCOPED_TRACE(c.shape.str());
    EXPECT_DOUBLE_EQ(got.words, words);
    EXPECT_NEAR(got.compute_s, 4.0 * rows * cols * 8 / (c.gflops * 1e9), 1e-15);
    EXPECT_NEAR(got.memory_s, 4.0 * 8 * (rows + cols) * 8 / r.memory_bytes_per_s, 1e-15);
    EXPECT_NEAR(got.network_s, words * 8 / r.network_bytes_per_s + steps * r.latency_s, 1e-15);
    EXPECT_DOUBLE_EQ(got.total_s(), got.compute_s + got.memory_s + got.network_s);
  }
  // The cache term: the same grid with a cache below its panels (fused-H: Wt and Qt, 2·k·rows·8 bytes) runs
  // out_of_cache_slowdown times slower.
  const GridCost fused = predict({1, 3}, p, r);
  EXPECT_DOUBLE_EQ(fused.panel_bytes, 2.0 * 8 * 1001 * 8);
  EXPECT_DOUBLE_EQ(predict({3, 1}, p, r).panel_bytes, 2.0 * 8 * 600 * 8) << "fused-W: H and P, 2·k·cols";
  EXPECT_DOUBLE_EQ(predict({2, 3}, p, r).panel_bytes, 8.0 * 501 * 8) << "unfused dense: one k x rows panel";
  MachineRates small = r;
  small.cache_bytes = fused.panel_bytes - 1;
  EXPECT_NEAR(predict({1, 3}, p, small).compute_s, fused.compute_s * r.out_of_cache_slowdown, 1e-15);
  // One process: no collectives. Four-byte elements: the compute at twice the rate, half the bytes.
  EXPECT_EQ(predict({1, 1}, p, r).network_s, 0.0);
  GridProblem f32 = p;
  f32.element_bytes = 4;
  EXPECT_NEAR(predict({2, 3}, f32, r).compute_s * 2, predict({2, 3}, p, r).compute_s, 1e-15);
  EXPECT_NEAR(predict({2, 3}, f32, r).memory_s * 2, predict({2, 3}, p, r).memory_s, 1e-15);
  // Sparse: the non-zeros spread over the ranks.
  const GridProblem s = sparse(1000, 900, 8, 36000);
  EXPECT_NEAR(predict({2, 2}, s, r).compute_s, 4.0 * 9000 * 8 / (r.sparse_unfused * 1e9), 1e-15);
  EXPECT_NEAR(predict({4, 1}, s, r).compute_s, 4.0 * 9000 * 8 / (r.sparse_fused * 1e9), 1e-15);
  EXPECT_EQ(predict({4, 1}, s, small).compute_s, predict({4, 1}, s, r).compute_s) << "no cache term for CSR";
}

// Issue 14 item 7: on one node, 2 processes, the dense 4000x3000 k = 16 column-major block. 2x1 moves fewer
// words, but 1x2 lets the single pass tile contiguous column stripes; the model must pick 1x2, with a large
// cache (the Xeon, 2 MiB L2) and a small one (this machine's EPYC, 512 KiB) alike.
TEST(GridCost, OneNodeDensePrefersTheFusedContiguousSide) {
  MachineRates large, small;
  large.cache_bytes = 2 << 20;
  small.cache_bytes = 512 << 10;
  EXPECT_EQ(choose_grid_by_time(2, dense(4000, 3000, 16), small).chosen, (GridShape{1, 2}));
  const GridChoice c = choose_grid_by_time(2, dense(4000, 3000, 16), large);
  EXPECT_EQ(c.by_words, (GridShape{2, 1}));
  EXPECT_EQ(c.chosen, (GridShape{1, 2}));
  EXPECT_EQ(c.cost_of({1, 2}).path, PassPath::fused_h);
  EXPECT_GT(c.cost_of({1, 2}).words, c.cost_of({2, 1}).words);
  EXPECT_LT(c.cost_of({1, 2}).total_s() * 1.2, c.cost_of({2, 1}).total_s());
  // On 4 processes: 1x4 keeps the contiguous single pass, 2x2 runs unfused, 4x1 strided. 1x4's panels (Wt and
  // Qt over 4000 rows, 1 MiB) fit a 2 MiB cache but not 512 KiB, where 2x2's one 256 KiB panel wins.
  EXPECT_EQ(choose_grid_by_time(4, dense(4000, 3000, 16), large).chosen, (GridShape{1, 4}));
  EXPECT_EQ(choose_grid_by_time(4, dense(4000, 3000, 16), small).chosen, (GridShape{2, 2}));
  // A row-major block turns the sides round: W's row stripes are the contiguous ones.
  GridProblem row_major = dense(4000, 3000, 16);
  row_major.column_major = false;
  EXPECT_EQ(choose_grid_by_time(2, row_major, large).chosen, (GridShape{2, 1}));
  EXPECT_THROW((void)c.cost_of({3, 5}), Error);
}

// Hypersparse and wide on many processes: compute is small, the factor-sized buffers and the words decide.
TEST(GridCost, HypersparseWideMatricesMoveFewerWords) {
  for (const int p : {8, 16, 64}) {
    const GridProblem s = sparse(2000, 2000000, 16, 2e6);
    const GridChoice c = choose_grid_by_time(p, s);
    SCOPED_TRACE("p=" + std::to_string(p) + " chose " + c.chosen.str());
    double fewest = std::numeric_limits<double>::infinity();
    for (const GridCost& g : c.candidates) fewest = std::min(fewest, g.words);
    EXPECT_EQ(c.cost_of(c.chosen).words, fewest);
    EXPECT_EQ(c.chosen, c.by_words);
    EXPECT_GT(c.chosen.cols, c.chosen.rows);
  }
}

// Within the near-tie margin the words-only choice stays; beyond it the faster grid wins.
TEST(GridCost, NearTiesKeepTheWordsOnlyChoice) {
  // Square CSR matrix on 2 processes: 1x2 and 2x1 move the same words; the words-only rule takes 2x1
  // (taller). Make 1x2's unfused products 2% faster than 2x1's fused pass.
  MachineRates r;
  r.cache_bytes = 1e9;  // the rates alone decide here
  r.sparse_fused = 3.0;
  r.sparse_unfused = 3.06;
  const GridProblem s = sparse(4000, 4000, 16, 4e6);
  EXPECT_EQ(choose_grid_by_time(2, s, r).chosen, (GridShape{2, 1}));
  EXPECT_EQ(choose_grid_by_time(2, s, r, 0.0).chosen, (GridShape{1, 2}));
  r.sparse_unfused = 4.0;  // a third faster: beyond any near tie
  EXPECT_EQ(choose_grid_by_time(2, s, r).chosen, (GridShape{1, 2}));
}

// Against a brute-force search: the choice is a candidate whose time is within the margin of the fastest,
// and the fastest itself unless the words-only grid is within the margin.
TEST(GridCost, ChoiceIsTheFastestCandidate) {
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<index_t> extent(1, 20000), rank(1, 64);
  std::uniform_real_distribution<double> density(1e-6, 0.05);
  for (int trial = 0; trial < 400; ++trial) {
    const int p = 1 + trial % 37;
    GridProblem g = trial % 2 == 0 ? dense(extent(rng), extent(rng), rank(rng))
                                   : sparse(extent(rng), extent(rng) * (1 + trial % 5), rank(rng), 0);
    if (g.sparse) g.nnz = std::max(1.0, std::floor(density(rng) * static_cast<double>(g.m) * g.n));
    g.element_bytes = trial % 3 == 0 ? 4 : 8;
    const GridChoice c = choose_grid_by_time(p, g);
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " chose " +
                 c.chosen.str());
    EXPECT_EQ(c.chosen.size(), p);
    EXPECT_EQ(c.by_words, choose_grid(p, g.m, g.n, g.k));
    if (c.candidates.empty()) {
      EXPECT_EQ(c.chosen, c.by_words);
      continue;
    }
    double fastest = std::numeric_limits<double>::infinity();
    for (int pr = 1; pr <= p; ++pr) {
      if (p % pr != 0 || pr > g.m || p / pr > g.n) continue;
      fastest = std::min(fastest, predict({pr, p / pr}, g).total_s());
    }
    const double chosen = c.cost_of(c.chosen).total_s();
    EXPECT_LE(chosen, fastest * 1.05 * (1 + 1e-12));
    if (chosen > fastest * (1 + 1e-12)) {
      EXPECT_EQ(c.chosen, c.by_words);
    }
  }
}

}  // namespace
}  // namespace dnmf::dist
