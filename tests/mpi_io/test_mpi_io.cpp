// Per-rank block reads under mpirun: on every grid that fits the process count, each rank's block of a .npy,
// .npz, Matrix Market or HDF5 file equals the same slice of the matrix read whole on one process; Matrix Market
// files are parsed by byte ranges on all ranks, so these also cover routing, symmetric mirroring, duplicates
// split over ranks and blocks with no entries. A corrupt part of a file is an error on the rank that read it
// (with the file's line or the entry's global position) and a PeerError elsewhere, never a hang (a Matrix Market
// line: every rank throws the failing rank's message as a CollectiveError, as all learn who failed); the factor
// writer's file read back equals the gathered factors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/hdf5_io.hpp"
#include "io/mtx_collective.hpp"
#include "solvers/solve.hpp"
#include "support/matrix_views.hpp"
#include "support/npz_archives.hpp"
#include "support/random_matrices.hpp"

namespace {

using dnmf::CsrMatrix;
using dnmf::DenseMatrix;
using dnmf::index_t;
using dnmf::dist::Communicator;
using dnmf::dist::GridShape;
using dnmf::dist::Range;
using dnmf::test::dense_of;
using dnmf::test::slice;
using testing::HasSubstr;
using testing::StartsWith;

Communicator& world() { return dnmf::dist::world(); }

/// Every pr x pc grid of the world's size.
std::vector<GridShape> grids() {
  std::vector<GridShape> out;
  for (int pr = 1; pr <= world().size(); ++pr) {
    if (world().size() % pr == 0) out.push_back({pr, world().size() / pr});
  }
  return out;
}

/// This rank's block ranges on `shape`.
dnmf::dist::Layout layout_on(GridShape shape, index_t m, index_t n) {
  const int r = world().rank();
  return dnmf::dist::make_layout(shape, r / shape.cols, r % shape.cols, m, n);
}

/// How one rank's read ended.
struct Outcome {
  enum Kind { ok, own, peer, collective } kind = ok;
  std::string message;
  dnmf::ErrorKind error_kind = dnmf::ErrorKind::general;
};

template <class Read>
Outcome outcome_of(Read&& read) {
  try {
    read();
  } catch (const dnmf::CollectiveError& e) {
    return {Outcome::collective, e.what(), e.kind()};
  } catch (const dnmf::PeerError& e) {
    return {Outcome::peer, e.what(), e.kind()};
  } catch (const dnmf::Error& e) {
    return {Outcome::own, e.what(), e.kind()};
  }
  return {};
}

std::int64_t count_over_ranks(bool here) { return world().sum<std::int64_t>(here ? 1 : 0); }

/// A directory all ranks share (made by rank 0), removed at the end.
class MpiIoTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string name(256, '\0');
    if (world().rank() == 0) {
      std::string pattern = (std::filesystem::temp_directory_path() / "dnmf_mpi_io_XXXXXX").string();
      ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
      name = pattern;
      name.resize(256, '\0');
    }
    world().broadcast(name.data(), name.size(), dnmf::dist::Scalar::u8, 0);
    dir_ = name.c_str();
  }
  void TearDown() override {
    world().barrier();
    if (world().rank() == 0) std::filesystem::remove_all(dir_);
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Rank 0 writes `text` to `name`; every rank returns its path once it is there.
  std::string shared_file(const std::string& name, const std::string& text) {
    const std::string p = path(name);
    if (world().rank() == 0) std::ofstream(p, std::ios::binary) << text;
    world().barrier();
    return p;
  }
  std::filesystem::path dir_;
};

TEST(MpiIo, RunsOnEveryProcessOfTheLauncher) {
  // Guards the rest: a launcher whose processes each ran alone would pass every test trivially.
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  ASSERT_NE(launched, nullptr) << "run under mpirun";
  EXPECT_EQ(world().size(), std::atoi(launched));
  EXPECT_GT(world().size(), 1);
}

// ---------------------------------------------------------------------------------------------
// Matrix Market

/// A Matrix Market text with `count` random entries of an m x n matrix (1-based), comment and blank lines
/// among them, duplicates likely; symmetric files keep to the lower triangle; `rows_limit` confines the entries
/// to the first rows (so that some blocks have none).
std::string mtx_text(index_t m, index_t n, int count, const std::string& field, bool symmetric, std::uint64_t seed,
                     index_t rows_limit = -1) {
  std::mt19937_64 rng(seed);
  const index_t rows = rows_limit > 0 ? rows_limit : m;
  std::string body;
  for (int e = 0; e < count; ++e) {
    index_t i = static_cast<index_t>(rng() % rows) + 1, j = static_cast<index_t>(rng() % n) + 1;
    if (symmetric && j > i) std::swap(i, j);
    body += std::to_string(i) + " " + std::to_string(j);
    if (field != "pattern") body += ' ' + std::to_string(rng() % 1000) + (field == "real" ? ".25" : "");
    body += "\n";
    if (e % 17 == 5) body += "% a comment among the entries\n";
    if (e % 23 == 7) body += "\n";
  }
  return "%%MatrixMarket matrix coordinate " + field + (symmetric ? " symmetric" : " general") +
         "\n% made by a test\n" + std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(count) + "\n" +
         body;
}

TEST_F(MpiIoTest, MatrixMarketBlocksOnEveryGridEqualTheSerialRead) {
  struct Case {
    std::string name, text;
    index_t m, n;
  };
  const std::vector<Case> cases = {
      {"general", mtx_text(37, 29, 400, "real", false, 1), 37, 29},
      {"symmetric", mtx_text(31, 31, 300, "real", true, 2), 31, 31},
      {"pattern", mtx_text(23, 41, 250, "pattern", false, 3), 23, 41},
      {"integer", mtx_text(19, 13, 200, "integer", false, 4), 19, 13},
      {"top_rows_only", mtx_text(40, 20, 60, "real", false, 5, 6), 40, 20},  // lower blocks hold no entries
      {"duplicates", mtx_text(5, 4, 300, "real", false, 6), 5, 4},           // each entry listed ~15 times
      {"few", mtx_text(50, 50, 2, "real", false, 7), 50, 50},                // most ranks parse no entry
  };
  for (const Case& c : cases) {
    const std::string p = shared_file(c.name + ".mtx", c.text);
    const DenseMatrix<double> whole = dense_of(dnmf::io::read_mtx<double>(p));  // the one-process reader
    for (const GridShape shape : grids()) {
      const dnmf::dist::Layout l = layout_on(shape, c.m, c.n);
      for (const std::size_t chunk : {std::size_t{16} << 20, std::size_t{7}}) {
        const CsrMatrix<double> block = dnmf::io::read_mtx_block<double>(p, l.a_rows, l.a_cols, world(), chunk);
        EXPECT_EQ(dense_of(block).storage(), slice(whole, l.a_rows, l.a_cols).storage())
            << c.name << " on " << shape.str() << ", chunk " << chunk << ", rank " << world().rank();
      }
      const auto via_read_block = dnmf::io::read_block<float>(p, l.a_rows, l.a_cols, world());
      EXPECT_TRUE(via_read_block.sparse);
      EXPECT_EQ(dense_of(via_read_block.csr).rows(), l.a_rows.size());
    }
  }
}

TEST_F(MpiIoTest, MatrixMarketOverlappingBlocksEachGetTheirEntries) {
  // Not a grid: rank r asks for rows [r, m) x columns [0, n - r), so entries go to several ranks at once; and
  // every rank asks for the whole matrix.
  const index_t m = 15, n = 12;
  const std::string p = shared_file("A.mtx", mtx_text(m, n, 120, "real", false, 9));
  const DenseMatrix<double> whole = dense_of(dnmf::io::read_mtx<double>(p));
  const index_t r = world().rank();
  const Range rows{r, m}, cols{0, n - r};
  EXPECT_EQ(dense_of(dnmf::io::read_mtx_block<double>(p, rows, cols, world())).storage(),
            slice(whole, rows, cols).storage());
  EXPECT_EQ(dense_of(dnmf::io::read_mtx_block<double>(p, {0, m}, {0, n}, world())).storage(), whole.storage());
}

TEST_F(MpiIoTest, MatrixMarketCorruptLineIsReportedByItsRankWithTheLineNumber) {
  // 300 entries; the one on line 4 + 280 (in the last tenth of the bytes: the last rank's range) is malformed.
  std::string text = "%%MatrixMarket matrix coordinate real general\n% c\n20 20 300\n";
  for (int e = 0; e < 300; ++e) {
    text += e == 280 ? "3 4 x7\n" : std::to_string(e % 20 + 1) + " " + std::to_string(e / 20 + 1) + " 1.5\n";
  }
  const std::string p = shared_file("A.mtx", text);
  for (const GridShape shape : grids()) {
    const dnmf::dist::Layout l = layout_on(shape, 20, 20);
    // The line lies in the last rank's bytes; every rank knows which rank failed, so all throw its message as
    // a CollectiveError (the job prints it once and ends normally; an error on one rank ended it in MPI_Abort).
    const Outcome o = outcome_of([&] { dnmf::io::read_block<double>(p, l.a_rows, l.a_cols, world()); });
    EXPECT_EQ(o.kind, Outcome::collective) << shape.str();
    EXPECT_EQ(o.message, p + ":284: bad value 'x7'") << shape.str();
    EXPECT_EQ(o.error_kind, dnmf::ErrorKind::data) << shape.str();
  }
  // The same file with a negative value instead: named by line and global position.
  std::string negative = text;
  negative.replace(negative.find("3 4 x7"), 6, "3 4 -7");
  const std::string q = shared_file("N.mtx", negative);
  const Outcome o = outcome_of([&] { dnmf::io::read_mtx_block<double>(q, {0, 20}, {0, 20}, world()); });
  EXPECT_EQ(o.kind, Outcome::collective);
  EXPECT_EQ(o.message, q + ":284: entry at row 2, column 3 (0-based) is -7; input must be non-negative");
}

TEST_F(MpiIoTest, MatrixMarketEntryCountProblems) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n8 8 40\n";
  std::string fewer = head, more = head;
  for (int e = 0; e < 39; ++e) fewer += std::to_string(e % 8 + 1) + " " + std::to_string(e / 8 + 1) + " 2\n";
  for (int e = 0; e < 60; ++e) more += std::to_string(e % 8 + 1) + " " + std::to_string(e % 5 + 1) + " 2\n";
  const std::string f = shared_file("F.mtx", fewer), m = shared_file("M.mtx", more);
  const Range rows = dnmf::dist::block_range(8, world().size(), world().rank());
  // Too few: every rank knows it (counts are shared), so it is reported once, as a collective error.
  const Outcome short_file = outcome_of([&] { dnmf::io::read_block<double>(f, rows, {0, 8}, world()); });
  EXPECT_EQ(short_file.kind, Outcome::collective);
  EXPECT_EQ(short_file.message, f + ":42: truncated: the file ends after 39 of the 40 entries announced on line 2");
  // Too many: the rank holding entry 41 (line 43) names its line.
  const Outcome long_file = outcome_of([&] { dnmf::io::read_block<double>(m, rows, {0, 8}, world()); });
  EXPECT_EQ(long_file.kind, Outcome::collective);
  EXPECT_EQ(long_file.message, m + ":43: more entries than the 40 announced on line 2");
  // A header problem is found on rank 0 and shared.
  const std::string h = shared_file("H.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n");
  const Outcome header = outcome_of([&] { dnmf::io::read_block<double>(h, rows, {0, 2}, world()); });
  EXPECT_EQ(header.kind, Outcome::collective);
  EXPECT_EQ(header.message, h + ":1: unsupported field 'complex' (expected real, integer or pattern)");
}

// ---------------------------------------------------------------------------------------------
// .npy

TEST_F(MpiIoTest, NpyBlocksOnEveryGridAndABadEntryInOneBlock) {
  const index_t m = 23, n = 17;
  DenseMatrix<double> whole = dnmf::test::random_dense<double>(m, n, 11, 0.2);
  const std::string p = path("A.npy");
  if (world().rank() == 0) dnmf::io::write_npy<double>(p, whole.view());
  world().barrier();
  for (const GridShape shape : grids()) {
    const dnmf::dist::Layout l = layout_on(shape, m, n);
    const auto block = dnmf::io::read_block<double>(p, l.a_rows, l.a_cols, world());
    EXPECT_EQ(block.dense.storage(), slice(whole, l.a_rows, l.a_cols).storage()) << shape.str();
  }
  whole(21, 3) = -1;  // in the last block row
  const std::string q = path("B.npy");
  if (world().rank() == 0) {
    std::vector<double> rows_first;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) rows_first.push_back(whole(i, j));
    dnmf::io::write_npy_row_major<double>(q, rows_first.data(), m, n);
  }
  world().barrier();
  const GridShape tall{world().size(), 1};
  const dnmf::dist::Layout l = layout_on(tall, m, n);
  const Outcome o = outcome_of([&] { dnmf::io::read_block<double>(q, l.a_rows, l.a_cols, world()); });
  EXPECT_EQ(count_over_ranks(o.kind == Outcome::own), 1);
  if (o.kind == Outcome::own) {
    EXPECT_EQ(world().rank(), world().size() - 1);
    EXPECT_EQ(o.message, q + ": entry at row 21, column 3 (0-based) is -1; input must be non-negative");
  } else {
    EXPECT_EQ(o.kind, Outcome::peer);
  }
  EXPECT_EQ(o.error_kind, dnmf::ErrorKind::data);  // on every rank: a peer's error is of the failure's kind
}

TEST_F(MpiIoTest, NpzBlocksOnEveryGridAndFailures) {
  // Every rank uncompresses the archive itself and keeps its block: scipy CSR (deflated), CSC (stored), savez.
  const index_t m = 23, n = 17;
  DenseMatrix<double> sparse = dnmf::test::random_dense<double>(m, n, 14, 0.8);
  const DenseMatrix<double> dense = dnmf::test::random_dense<double>(m, n, 15, 0.2);
  const std::string csr = path("csr.npz"), csc = path("csc.npz"), savez = path("savez.npz");
  if (world().rank() == 0) {
    using dnmf::test::compressed_members;
    dnmf::test::write_zip(csr, compressed_members<double, std::int32_t, std::int32_t>(sparse, false), true);
    dnmf::test::write_zip(csc, compressed_members<double, std::int64_t, std::int64_t>(sparse, true), false);
    dnmf::io::write_npy<double>(path("d.npy"), dense.view());
    dnmf::test::write_zip(savez, {{"arr_0.npy", dnmf::test::file_bytes(path("d.npy"))}}, true);
  }
  world().barrier();
  for (const GridShape shape : grids()) {
    const dnmf::dist::Layout l = layout_on(shape, m, n);
    for (const std::string& p : {csr, csc}) {
      const auto block = dnmf::io::read_block<double>(p, l.a_rows, l.a_cols, world());
      ASSERT_TRUE(block.sparse);
      EXPECT_EQ(dense_of(block.csr).storage(), slice(sparse, l.a_rows, l.a_cols).storage()) << p << shape.str();
    }
    const auto d = dnmf::io::read_block<double>(savez, l.a_rows, l.a_cols, world());
    EXPECT_EQ(d.dense.storage(), slice(dense, l.a_rows, l.a_cols).storage()) << shape.str();
  }
  // A bad entry in the last block row: that rank's error, a PeerError elsewhere.
  sparse(21, 3) = -1;
  const std::string bad = path("bad.npz");
  if (world().rank() == 0) {
    dnmf::test::write_zip(bad, dnmf::test::compressed_members<double, std::int32_t, std::int32_t>(sparse, true), true);
  }
  world().barrier();
  const dnmf::dist::Layout tall = layout_on({world().size(), 1}, m, n);
  const Outcome o = outcome_of([&] { dnmf::io::read_block<double>(bad, tall.a_rows, tall.a_cols, world()); });
  EXPECT_EQ(count_over_ranks(o.kind == Outcome::own), 1);
  if (o.kind == Outcome::own) {
    EXPECT_EQ(world().rank(), world().size() - 1);
    EXPECT_EQ(o.message, bad + ": entry at row 21, column 3 (0-based) is -1; input must be non-negative");
  } else {
    EXPECT_EQ(o.kind, Outcome::peer);
  }
  EXPECT_EQ(o.error_kind, dnmf::ErrorKind::data);
  // A truncated archive fails alike everywhere: one collective error, no rank left waiting.
  const std::string cut = path("cut.npz");
  if (world().rank() == 0) {
    const std::string bytes = dnmf::test::file_bytes(csr);
    dnmf::test::write_bytes(cut, bytes.substr(0, bytes.size() / 2));
  }
  world().barrier();
  const Outcome c = outcome_of([&] { dnmf::io::read_block<double>(cut, {0, 1}, {0, 1}, world()); });
  EXPECT_EQ(c.kind, Outcome::collective);
  EXPECT_THAT(c.message, StartsWith(cut + ": not a zip archive, or one cut short"));
}

// ---------------------------------------------------------------------------------------------
// HDF5 (MPI-IO)

TEST_F(MpiIoTest, Hdf5DenseAndCsrBlocksOnEveryGrid) {
  if (!dnmf::io::hdf5_built()) GTEST_SKIP() << "HDF5 support not built";
  const index_t m = 29, n = 21;
  const DenseMatrix<double> dense = dnmf::test::random_dense<double>(m, n, 12, 0.1);
  const DenseMatrix<double> sparse = dnmf::test::random_dense<double>(m, n, 13, 0.85);
  const std::string p = path("A.h5");
  if (world().rank() == 0) {
    dnmf::io::write_h5_dense<double>(p, "/dense", dense.view());
    dnmf::io::write_h5_csr<double>(p, "/X", dnmf::test::to_csr(sparse).view(), /*append=*/true);
  }
  world().barrier();
  for (const GridShape shape : grids()) {
    const dnmf::dist::Layout l = layout_on(shape, m, n);
    const auto d = dnmf::io::read_block<double>(p + ":dense", l.a_rows, l.a_cols, world());
    EXPECT_EQ(d.dense.storage(), slice(dense, l.a_rows, l.a_cols).storage()) << shape.str();
    const auto s = dnmf::io::read_block<double>(p, l.a_rows, l.a_cols, world());  // default object: /X
    ASSERT_TRUE(s.sparse);
    EXPECT_EQ(dense_of(s.csr).storage(), slice(sparse, l.a_rows, l.a_cols).storage()) << shape.str();
  }
  // Every rank fails alike on a missing object: one collective error.
  const Outcome o = outcome_of([&] { dnmf::io::read_block<double>(p + ":/none", {0, 1}, {0, 1}, world()); });
  EXPECT_EQ(o.kind, Outcome::collective);
  EXPECT_THAT(o.message, StartsWith(p + ": has no object '/none'"));
}

TEST_F(MpiIoTest, Hdf5FactorWriteReadBackEqualsTheGatheredFactors) {
  if (!dnmf::io::hdf5_built()) GTEST_SKIP() << "HDF5 support not built";
  const index_t m = 19, n = 14, k = 3;
  for (const GridShape shape : grids()) {
    const dnmf::dist::Grid grid(world(), shape);
    const dnmf::dist::Layout l = dnmf::dist::make_layout(grid, m, n);
    dnmf::solvers::Factors<double> pieces{DenseMatrix<double>(k, l.w_rows.size()),
                                          DenseMatrix<double>(k, l.h_cols.size())};
    for (index_t c = 0; c < l.w_rows.size(); ++c)
      for (index_t q = 0; q < k; ++q) pieces.wt(q, c) = 1 + double(l.w_rows.first + c) + 0.125 * double(q);
    for (index_t c = 0; c < l.h_cols.size(); ++c)
      for (index_t q = 0; q < k; ++q) pieces.h(q, c) = 2 + 0.5 * double(l.h_cols.first + c) + double(q);
    const std::string p = path("F_" + std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + ".h5");
    dnmf::io::write_factors_h5<double>(p, grid, l, pieces.wt.view(), pieces.h.view());
    DenseMatrix<double> W, H;
    dnmf::solvers::gather_factors(grid, l, pieces, W, H);
    if (world().rank() == 0) {
      dnmf::dist::SingleCommunicator one;
      const auto w_file = dnmf::io::read_hdf5_block<double>(p + ":/W", {0, m}, {0, k}, one);
      const auto h_file = dnmf::io::read_hdf5_block<double>(p + ":/H", {0, k}, {0, n}, one);
      EXPECT_EQ(w_file.dense.storage(), W.storage()) << shape.str();
      EXPECT_EQ(h_file.dense.storage(), H.storage()) << shape.str();
      EXPECT_EQ(W(7, 2), 1 + 7 + 0.25);  // the gathered factors are the planted ones
      for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
        EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
      }
    }
    world().barrier();
  }
}

}  // namespace
