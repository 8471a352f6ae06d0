// The process grid without MPI: parsing, block ranges, layouts that cover every row and column exactly
// once, the grid choice against a brute-force search of the model, and Grid's placement and refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::dist {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParseGrid, AcceptsRowsByColumns) {
  EXPECT_EQ(parse_grid("2x3"), (GridShape{2, 3}));
  EXPECT_EQ(parse_grid("1x1"), (GridShape{1, 1}));
  EXPECT_EQ(parse_grid("64x128"), (GridShape{64, 128}));
  EXPECT_EQ(parse_grid("64x128").size(), 8192);
  EXPECT_EQ(parse_grid("3x7").str(), "3x7");
}

TEST(ParseGrid, RefusesAnythingElseNamingTheText) {
  for (const std::string bad : {"", "auto", "2", "2x", "x2", "0x2", "2x0", "-1x2", "2X3", "2x3x1", " 2x3", "2x3 ",
                                "2.0x3", "1234567x1", "axb"}) {
    const std::string e = error_of([&] { (void)parse_grid(bad); });
    EXPECT_NE(e.find("'" + bad + "'"), std::string::npos) << "for '" << bad << "': " << e;
    EXPECT_NE(e.find("PRxPC"), std::string::npos) << e;
  }
}

TEST(BlockRange, SpreadsTheRemainderOneEachOverTheFirstParts) {
  // 10 over 4: 3, 3, 2, 2.
  EXPECT_EQ(block_range(10, 4, 0), (Range{0, 3}));
  EXPECT_EQ(block_range(10, 4, 1), (Range{3, 6}));
  EXPECT_EQ(block_range(10, 4, 2), (Range{6, 8}));
  EXPECT_EQ(block_range(10, 4, 3), (Range{8, 10}));
  // More parts than items: the last parts are empty.
  EXPECT_EQ(block_range(2, 3, 0), (Range{0, 1}));
  EXPECT_EQ(block_range(2, 3, 1), (Range{1, 2}));
  EXPECT_EQ(block_range(2, 3, 2), (Range{2, 2}));
  EXPECT_EQ(block_range(0, 2, 1).size(), 0);
  EXPECT_EQ(block_range(7, 1, 0), (Range{0, 7}));
}

TEST(BlockRange, PartsAreConsecutiveAndDifferByAtMostOne) {
  for (index_t extent : {1, 5, 37, 100, 1001})
    for (int parts = 1; parts <= 13; ++parts) {
      index_t next = 0, smallest = extent, largest = 0;
      for (int q = 0; q < parts; ++q) {
        const Range r = block_range(extent, parts, q);
        EXPECT_EQ(r.first, next) << extent << " over " << parts << ", part " << q;
        next = r.last;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
      }
      EXPECT_EQ(next, extent);
      EXPECT_LE(largest - smallest, 1);
    }
}

// Every row of W is owned by exactly one rank, inside that rank's block row; likewise every column of H.
// The blocks of A tile the matrix. Piece sizes agree with the owners' ranges.
TEST(MakeLayout, CoversEveryRowAndColumnExactlyOnce) {
  const index_t sizes[][2] = {{1, 1}, {7, 5}, {37, 29}, {100, 3}, {3, 100}, {211, 173}, {64, 64}};
  for (const auto& mn : sizes)
    for (int pr = 1; pr <= 7; ++pr)
      for (int pc = 1; pc <= 7; ++pc) {
        const index_t m = mn[0], n = mn[1];
        const GridShape shape{pr, pc};
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + " on " + shape.str());
        std::vector<int> w_owner(to_size(m), 0), h_owner(to_size(n), 0);
        std::vector<int> a_cover(to_size(m * n), 0);
        for (int i = 0; i < pr; ++i)
          for (int j = 0; j < pc; ++j) {
            const Layout l = make_layout(shape, i, j, m, n);
            EXPECT_EQ(l.m, m);
            EXPECT_EQ(l.n, n);
            EXPECT_EQ(l.a_rows, block_range(m, pr, i));
            EXPECT_EQ(l.a_cols, block_range(n, pc, j));
            EXPECT_GE(l.w_rows.first, l.a_rows.first);
            EXPECT_LE(l.w_rows.last, l.a_rows.last);
            EXPECT_GE(l.h_cols.first, l.a_cols.first);
            EXPECT_LE(l.h_cols.last, l.a_cols.last);
            ASSERT_EQ(l.w_piece_sizes.size(), to_size(pc));
            ASSERT_EQ(l.h_piece_sizes.size(), to_size(pr));
            EXPECT_EQ(l.w_piece_sizes[to_size(j)], l.w_rows.size());
            EXPECT_EQ(l.h_piece_sizes[to_size(i)], l.h_cols.size());
            index_t w_sum = 0, h_sum = 0;
            for (index_t s : l.w_piece_sizes) w_sum += s;
            for (index_t s : l.h_piece_sizes) h_sum += s;
            EXPECT_EQ(w_sum, l.a_rows.size()) << "W's pieces make up the block row";
            EXPECT_EQ(h_sum, l.a_cols.size()) << "H's pieces make up the block column";
            for (index_t r = l.w_rows.first; r < l.w_rows.last; ++r) ++w_owner[to_size(r)];
            for (index_t c = l.h_cols.first; c < l.h_cols.last; ++c) ++h_owner[to_size(c)];
            for (index_t c = l.a_cols.first; c < l.a_cols.last; ++c)
              for (index_t r = l.a_rows.first; r < l.a_rows.last; ++r) ++a_cover[to_size(r + c * m)];
            // The piece of rank (i, j) is the j-th of its block row and the i-th of its block column.
            index_t w_before = 0, h_before = 0;
            for (int q = 0; q < j; ++q) w_before += l.w_piece_sizes[to_size(q)];
            for (int q = 0; q < i; ++q) h_before += l.h_piece_sizes[to_size(q)];
            EXPECT_EQ(l.w_rows.first, l.a_rows.first + w_before);
            EXPECT_EQ(l.h_cols.first, l.a_cols.first + h_before);
          }
        for (int c : w_owner) EXPECT_EQ(c, 1);
        for (int c : h_owner) EXPECT_EQ(c, 1);
        for (int c : a_cover) EXPECT_EQ(c, 1);
      }
}

TEST(MakeLayout, WOwnershipIncreasesWithTheRank) {
  // gather_factors relies on it: W's pieces gathered in rank order are W's rows in order.
  for (const GridShape shape : {GridShape{2, 3}, GridShape{3, 2}, GridShape{4, 1}, GridShape{1, 5}}) {
    index_t next = 0;
    for (int r = 0; r < shape.size(); ++r) {
      const Layout l = make_layout(shape, r / shape.cols, r % shape.cols, 41, 23);
      EXPECT_EQ(l.w_rows.first, next) << shape.str() << " rank " << r;
      next = l.w_rows.last;
    }
    EXPECT_EQ(next, 41);
  }
}

TEST(WordsPerRank, IsTheFormulaOfTheDesign) {
  // 2x3 grid, m=120, n=90, k=4: W half gathers (pc-1)/pc·k·m/pr = 2/3·4·60 = 160, scatters P (pr-1)/pr·k·n/pc =
  // 1/2·4·30 = 60; H half mirrors (60 + 160); two k x k allreduces of 2(p-1)/p·k² = 2·5/6·16 each.
  const double expected = 160 + 60 + 60 + 160 + 2 * 2 * 5.0 / 6.0 * 16;
  EXPECT_NEAR(words_per_rank({2, 3}, 120, 90, 4), expected, 1e-9);
  EXPECT_EQ(words_per_rank({1, 1}, 1000, 1000, 8), 0.0) << "one process moves nothing";
  // About 2k(m/pr + n/pc) for large grids.
  const double big = words_per_rank({64, 64}, 1 << 20, 1 << 20, 16);
  EXPECT_NEAR(big / (2.0 * 16 * ((1 << 20) / 64.0 + (1 << 20) / 64.0)), 1.0, 0.02);
}

// choose_grid against a brute-force search over every factorisation pr·pc = p whose blocks are not empty.
TEST(ChooseGrid, PicksTheMinimumOfTheModel) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<index_t> extent(1, 5000), rank(1, 64);
  for (int trial = 0; trial < 400; ++trial) {
    const int p = 1 + trial % 97;
    const index_t m = extent(rng), n = std::max<index_t>(1, extent(rng) / (1 + trial % 4)), k = rank(rng);
    double best = std::numeric_limits<double>::infinity();
    for (int pr = 1; pr <= p; ++pr) {
      if (p % pr != 0 || pr > m || p / pr > n) continue;
      best = std::min(best, words_per_rank({pr, p / pr}, m, n, k));
    }
    const GridShape chosen = choose_grid(p, m, n, k);
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k) + " chose " + chosen.str());
    EXPECT_EQ(chosen.size(), p);
    if (std::isinf(best)) continue;  // no grid fits (p > m and p > n, say): nothing to compare with
    EXPECT_LE(chosen.rows, m);
    EXPECT_LE(chosen.cols, n);
    EXPECT_LE(words_per_rank(chosen, m, n, k), best * (1 + 1e-12));
  }
}

TEST(ChooseGrid, FollowsTheShapeOfTheMatrix) {
  EXPECT_EQ(choose_grid(1, 100, 100, 8), (GridShape{1, 1}));
  EXPECT_EQ(choose_grid(4, 1000, 1000, 8), (GridShape{2, 2}));
  EXPECT_EQ(choose_grid(16, 4000, 4000, 16), (GridShape{4, 4}));
  // Tall: more grid rows; wide: more grid columns.
  const GridShape tall = choose_grid(8, 100000, 1000, 8);
  EXPECT_GT(tall.rows, tall.cols);
  const GridShape wide = choose_grid(8, 1000, 100000, 8);
  EXPECT_GT(wide.cols, wide.rows);
  // A prime number of processes has only the two thin grids: the one splitting the longer side wins.
  EXPECT_EQ(choose_grid(7, 7000, 300, 8), (GridShape{7, 1}));
  EXPECT_EQ(choose_grid(7, 300, 7000, 8), (GridShape{1, 7}));
  // Equal words (a square matrix): the squarer grid, then the taller one, which keeps CSR's single pass.
  EXPECT_EQ(choose_grid(2, 1000, 1000, 8), (GridShape{2, 1}));
  EXPECT_EQ(choose_grid(8, 1000, 1000, 8), (GridShape{4, 2}));
  EXPECT_EQ(choose_grid(32, 5000, 5000, 8), (GridShape{8, 4}));
  // Never more grid rows than matrix rows.
  EXPECT_LE(choose_grid(6, 2, 1000, 1).rows, 2);
}

// A stand-in world of `size` ranks for checking Grid's placement without MPI: split() only needs to hand
// back some communicator, and the collectives are never called.
class FakeWorld final : public Communicator {
 public:
  FakeWorld(int rank, int size) : rank_(rank), size_(size) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string name() const override { return "fake"; }
  void barrier() override {}
  [[nodiscard]] std::unique_ptr<Communicator> split(int color, int key) override {
    splits.push_back({color, key});
    return std::make_unique<SingleCommunicator>();
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
  std::vector<std::pair<int, int>> splits;

 protected:
  void do_allreduce(void*, std::size_t, Scalar, bool) override {}
  void do_reduce_scatter(const void*, void*, const std::vector<std::size_t>&, Scalar) override {}
  void do_allgather(const void*, void*, const std::vector<std::size_t>&, Scalar) override {}
  void do_gather(const void*, void*, const std::vector<std::size_t>&, Scalar, int) override {}
  void do_broadcast(void*, std::size_t, Scalar, int) override {}
  void do_alltoallv(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&,
                    Scalar) override {}

 private:
  int rank_, size_;
};

TEST(Grid, PlacesRankRowMajorAndSplitsByRowAndColumn) {
  for (int r = 0; r < 6; ++r) {
    FakeWorld world(r, 6);
    const Grid grid(world, {2, 3});
    EXPECT_EQ(grid.row(), r / 3);
    EXPECT_EQ(grid.col(), r % 3);
    ASSERT_EQ(world.splits.size(), 2u);
    // Row communicator: color = grid row, key = j; column communicator: a color no row uses, key = i.
    EXPECT_EQ(world.splits[0], std::make_pair(r / 3, r % 3));
    EXPECT_EQ(world.splits[1], std::make_pair(2 + r % 3, r / 3));
    EXPECT_NE(world.splits[0].first, world.splits[1].first) << "row and column colors must not collide";
  }
}

TEST(Grid, RefusesAShapeThatDoesNotMatchTheProcessCount) {
  SingleCommunicator single;
  const std::string one = error_of([&] { const Grid g(single, {2, 2}); });
  EXPECT_NE(one.find("--grid 2x2 needs 4 processes"), std::string::npos) << one;
  EXPECT_NE(one.find("has 1"), std::string::npos) << one;
  EXPECT_NE(one.find("mpirun -np 4"), std::string::npos) << "one process is told how to start more: " << one;
  FakeWorld six(0, 6);
  const std::string many = error_of([&] { const Grid g(six, {2, 2}); });
  EXPECT_NE(many.find("needs 4 processes, but this job has 6"), std::string::npos) << many;
  EXPECT_TRUE(six.splits.empty()) << "no communicator is made for a refused grid";
  EXPECT_EQ(error_of([&] { const Grid g(single, {1, 1}); }), "");
}

}  // namespace
}  // namespace dnmf::dist
