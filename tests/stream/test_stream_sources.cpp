// Tile sources: every tile of a block, laid back together, equals the block read whole; partitions respect the
// byte cap and balance nnz; bad entries and corrupt files are errors naming the file and the place.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/dcsr.hpp"
#include "stream/dcsr_source.hpp"
#include "stream/memory_source.hpp"
#include "stream/npy_source.hpp"
#include "support/error_message.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"
#include "tile_assembly.hpp"

namespace dnmf::stream {
namespace {

using io::read_dcsr;
using io::read_dcsr_block;
using io::read_dcsr_header;
using io::read_dcsr_shape;
using io::write_dcsr;

using test::assemble;
using test::error_message;
using test::row_major;
using test::slice;

class SourceTest : public test::TempDirTest {};

// Blocks of a 37 x 23 matrix as the ranks of 1x1, 2x3 and 3x2 grids hold them.
std::vector<std::pair<dist::Range, dist::Range>> blocks(index_t m, index_t n) {
  std::vector<std::pair<dist::Range, dist::Range>> out;
  for (const dist::GridShape g : {dist::GridShape{1, 1}, dist::GridShape{2, 3}, dist::GridShape{3, 2}})
    for (int i = 0; i < g.rows; ++i)
      for (int j = 0; j < g.cols; ++j)
        out.emplace_back(dist::block_range(m, g.rows, i), dist::block_range(n, g.cols, j));
  return out;
}

TEST_F(SourceTest, NpyFortranOrderStreamsColumnStripes) {
  const auto a = test::random_dense<double>(37, 23, 1);
  io::write_npy<double>(path("a.npy"), a.view());
  for (const NpyAccess access : {NpyAccess::automatic, NpyAccess::read})
    for (const auto& [rows, cols] : blocks(37, 23)) {
      NpySource<double> source(path("a.npy"), rows, cols, access);
      EXPECT_EQ(source.direction(), backend::Side::H);
      EXPECT_EQ(source.staging_bytes(), 0u);  // read straight into the slots, or lent from the mapping
      // Whole columns of a file of T are lent from a mapping unless reads are asked for.
      const bool whole_columns = rows.size() == 37;
      EXPECT_EQ(source.mapped(), access == NpyAccess::automatic && whole_columns);
      EXPECT_EQ(source.fills_slots(), !source.mapped());
      std::size_t tiles = 0;
      const auto got = assemble(source, 3 * to_size(rows.size()) * 8, &tiles);
      EXPECT_EQ(got.storage(), slice(a, rows, cols).storage());
      EXPECT_EQ(tiles, to_size((cols.size() + 2) / 3));
    }
}

TEST_F(SourceTest, NpyMappedTilesSurviveSlotReuse) {
  // Two slots taking turns over six tiles: each refill unmaps the slot's previous pages (shared boundary
  // pages included) and the tile still reads right, and so does the neighbour that shares its boundary page.
  const auto a = test::random_dense<double>(300, 40, 15);
  io::write_npy<double>(path("m.npy"), a.view());
  NpySource<double> source(path("m.npy"), {0, 300}, {0, 40});
  ASSERT_TRUE(source.mapped());
  const auto extents = source.partition(300 * 8 * 7);
  ASSERT_EQ(extents.size(), 6u);
  Tile<double> slots[2];
  for (std::size_t t = 0; t < extents.size(); ++t) {
    source.read(extents[t], slots[t % 2], t < 2);
    const Tile<double>& now = slots[t % 2];
    ASSERT_NE(now.lent, nullptr);
    EXPECT_EQ(now.bytes_read, to_size(now.rows * now.cols) * 8);
    for (const Tile<double>* tile : {&slots[0], &slots[1]}) {
      if (tile->lent == nullptr) continue;
      for (index_t j = 0; j < tile->cols; ++j)
        for (index_t i = 0; i < tile->rows; ++i)
          ASSERT_EQ(tile->lent[i + j * tile->rows], a(i, tile->range.first + j)) << "tile " << t;
    }
  }
}

TEST_F(SourceTest, NpyCOrderStreamsRowStripesTransposed) {
  const auto a = test::random_dense<double>(37, 23, 2);
  const auto rm = row_major(a);
  io::write_npy_row_major<double>(path("c.npy"), rm.data(), 37, 23);
  for (const auto& [rows, cols] : blocks(37, 23)) {
    NpySource<double> source(path("c.npy"), rows, cols);
    EXPECT_EQ(source.direction(), backend::Side::W);
    const auto got = assemble(source, 4 * to_size(cols.size()) * 8);
    EXPECT_EQ(got.storage(), slice(a, rows, cols).storage());
  }
}

TEST_F(SourceTest, NpyConvertsStoredFloatToDoubleAndBack) {
  const auto a = test::random_dense<float>(30, 20, 3);
  io::write_npy<float>(path("f.npy"), a.view());
  NpySource<double> wide(path("f.npy"), {0, 30}, {0, 20});
  EXPECT_GT(wide.staging_bytes(), 0u);
  const auto got = assemble(wide, 5 * 30 * 8);
  for (index_t j = 0; j < 20; ++j)
    for (index_t i = 0; i < 30; ++i) EXPECT_EQ(got(i, j), static_cast<double>(a(i, j)));
  const auto d = test::random_dense<double>(30, 20, 4);
  io::write_npy_row_major<double>(path("d.npy"), row_major(d).data(), 30, 20);
  NpySource<float> narrow(path("d.npy"), {3, 30}, {2, 19});
  const auto got_f = assemble(narrow, 4 * 17 * 4);
  for (index_t j = 0; j < 17; ++j)
    for (index_t i = 0; i < 27; ++i) EXPECT_EQ(got_f(i, j), static_cast<float>(d(3 + i, 2 + j)));
}

TEST_F(SourceTest, NpyLinesLongerThanTheStagingBufferAreReadInPieces) {
  // C order, f4 -> f8: one row of 600k floats (2.4 MB) is more than half the 4 MiB staging buffer, so rows go
  // one at a time; with a column range of a wider file the same holds per row.
  const index_t m = 3, n = 1200000;
  DenseMatrix<float> a(m, n);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) a(i, j) = static_cast<float>((i * 7 + j) % 1000) * 0.5f;
  io::write_npy_row_major<float>(path("wide.npy"), row_major(a).data(), m, n);
  NpySource<double> source(path("wide.npy"), {0, m}, {100, n});
  const auto got = assemble(source, to_size(n) * 8 * 2);
  for (index_t j = 0; j < n - 100; j += 997)
    for (index_t i = 0; i < m; ++i) ASSERT_EQ(got(i, j), static_cast<double>(a(i, 100 + j)));
  EXPECT_EQ(got(2, n - 101), static_cast<double>(a(2, n - 1)));
}

TEST_F(SourceTest, NpyBadEntryNamesFileRowAndColumn) {
  auto a = test::random_dense<double>(12, 9, 5);
  a(7, 5) = -1.5;
  io::write_npy<double>(path("bad.npy"), a.view());
  NpySource<double> source(path("bad.npy"), {4, 12}, {3, 9});
  const std::string message = error_message([&] { (void)assemble(source, 1 << 20); });
  EXPECT_NE(message.find("bad.npy"), std::string::npos) << message;
  EXPECT_NE(message.find("row 7, column 5"), std::string::npos) << message;
  a(7, 5) = std::numeric_limits<double>::quiet_NaN();
  io::write_npy_row_major<double>(path("nan.npy"), row_major(a).data(), 12, 9);
  NpySource<double> c_order(path("nan.npy"), {0, 12}, {0, 9});
  const std::string nan = error_message([&] { (void)assemble(c_order, 1 << 20); });
  EXPECT_NE(nan.find("row 7, column 5 (0-based) is NaN"), std::string::npos) << nan;
}

TEST_F(SourceTest, NpyBlockOutsideTheArrayIsAnError) {
  io::write_npy<double>(path("a.npy"), test::random_dense<double>(5, 4, 6).view());
  const std::string message = error_message([&] { NpySource<double>(path("a.npy"), {0, 6}, {0, 4}); });
  EXPECT_NE(message.find("outside the 5x4 array"), std::string::npos) << message;
  EXPECT_NE(error_message([&] {
              (void)open_source<double>(path("a.mtx"), {0, 1}, {0, 1});
            }).find("convert"),
            std::string::npos);
}

TEST_F(SourceTest, OneLineLargerThanATileIsAnError) {
  io::write_npy<double>(path("a.npy"), test::random_dense<double>(50, 4, 7).view());
  NpySource<double> source(path("a.npy"), {0, 50}, {0, 4});
  EXPECT_EQ(source.min_tile_bytes(), 400u);
  EXPECT_NE(error_message([&] { (void)source.partition(399); }).find("one column"), std::string::npos);
}

// A sparse matrix with uneven rows: a few heavy rows among light ones.
DenseMatrix<double> uneven_sparse(index_t m, index_t n, std::uint64_t seed) {
  auto a = test::random_dense<double>(m, n, seed, 0.9);
  for (index_t j = 0; j < n; ++j) a(5, j) = 1.0 + static_cast<double>(j);  // a full row
  for (index_t j = 0; j < n; ++j) a(m - 3, j) = 0;                         // an empty row
  return a;
}

/// A CSR of `m` rows and `n` columns whose row i holds columns 0..count(i)-1, all ones.
template <class Count>
CsrMatrix<double> rows_of_ones(index_t m, index_t n, Count count) {
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  for (index_t i = 0; i < m; ++i) {
    for (index_t c = 0; c < count(i); ++c) indices.push_back(static_cast<col_index_t>(c));
    indptr.push_back(static_cast<index_t>(indices.size()));
  }
  std::vector<double> values(indices.size(), 1.0);
  return {m, n, std::move(indptr), std::move(indices), std::move(values)};
}

TEST_F(SourceTest, DcsrRoundTripAndShape) {
  const auto a = uneven_sparse(40, 30, 8);
  const auto csr = test::to_csr(a);
  write_dcsr<double>(path("a.dcsr"), csr.view());
  const io::MatrixShape shape = read_dcsr_shape(path("a.dcsr"));
  EXPECT_EQ(shape.rows, 40);
  EXPECT_EQ(shape.cols, 30);
  EXPECT_EQ(shape.stored, csr.nnz());
  EXPECT_TRUE(shape.sparse);
  const CsrMatrix<double> back = read_dcsr<double>(path("a.dcsr"));
  EXPECT_EQ(back.indptr(), csr.indptr());
  EXPECT_EQ(back.indices(), csr.indices());
  EXPECT_EQ(back.values(), csr.values());
  // Stored as f4, read as f8: values rounded once.
  const CsrMatrix<float> narrow = test::to_csr(test::random_dense<float>(10, 8, 9, 0.5));
  write_dcsr<float>(path("f.dcsr"), narrow.view());
  const CsrMatrix<double> wide = read_dcsr<double>(path("f.dcsr"));
  ASSERT_EQ(wide.nnz(), narrow.nnz());
  for (index_t p = 0; p < wide.nnz(); ++p) EXPECT_EQ(wide.values()[p], static_cast<double>(narrow.values()[p]));
}

TEST_F(SourceTest, DcsrBlocksAndTilesEqualTheSlices) {
  const auto a = uneven_sparse(37, 23, 10);
  write_dcsr<double>(path("a.dcsr"), test::to_csr(a).view());
  for (const auto& [rows, cols] : blocks(37, 23)) {
    DcsrSource<double> source(path("a.dcsr"), rows, cols);
    EXPECT_EQ(source.direction(), backend::Side::W);
    EXPECT_EQ(source.staging_bytes() == 0, cols.first == 0 && cols.last == 23);
    const std::size_t cap = std::max<std::size_t>(source.min_tile_bytes(), 300);
    EXPECT_EQ(assemble(source, cap).storage(), slice(a, rows, cols).storage());
    const io::LocalBlock<double> block = read_dcsr_block<double>(path("a.dcsr"), rows, cols);
    ASSERT_TRUE(block.sparse);
    DenseMatrix<double> dense(rows.size(), cols.size());
    const auto v = block.csr.view();
    for (index_t i = 0; i < v.rows; ++i)
      for (index_t p = v.indptr[i]; p < v.indptr[i + 1]; ++p) dense(i, v.indices[p]) = v.values[p];
    EXPECT_EQ(dense.storage(), slice(a, rows, cols).storage());
  }
}

TEST_F(SourceTest, DcsrTilesAreNnzBalanced) {
  // 2000 rows with 1..40 entries each: tiles of about equal bytes, none above the cap.
  const index_t m = 2000, n = 64;
  const CsrMatrix<double> csr = rows_of_ones(m, n, [](index_t i) { return 1 + (i * 37) % 40; });
  write_dcsr<double>(path("b.dcsr"), csr.view());
  DcsrSource<double> source(path("b.dcsr"), {0, m}, {0, n});
  EXPECT_EQ(source.stored(), csr.nnz());
  EXPECT_EQ(source.min_tile_bytes(), 40u * 12 + 16);
  const std::size_t cap = 64 << 10;
  const auto tiles = source.partition(cap);
  const std::size_t total = tile_bytes<double>(true, csr.nnz(), m);
  ASSERT_EQ(tiles.size(), (total + cap - 1) / cap);
  std::size_t smallest = cap, largest = 0;
  for (const auto& t : tiles) {
    smallest = std::min(smallest, t.bytes);
    largest = std::max(largest, t.bytes);
  }
  EXPECT_LE(largest, cap);
  EXPECT_LT(static_cast<double>(largest - smallest), 0.1 * static_cast<double>(largest)) << smallest << " " << largest;
}

// A slot is sized for the most entries and the most rows of any tile (make_tile_slot). Full rows followed by
// many empty ones made one tile of entries and others of row pointers, and the slot, holding both maxima, came
// to 1.7x the cap: the ring passed the plan and the memory budget by that much. The file source and the
// in-memory one cut alike.
TEST_F(SourceTest, CsrSlotsOfSkewedRowsStayWithinTheCap) {
  const index_t full = 40, empty = 20000, m = full + empty, n = 100;
  const CsrMatrix<double> csr = rows_of_ones(m, n, [&](index_t i) { return i < full ? n : index_t{0}; });
  const std::vector<index_t>& indptr = csr.indptr();
  write_dcsr<double>(path("skew.dcsr"), csr.view());
  const DcsrSource<double> file(path("skew.dcsr"), {0, m}, {0, n});
  const MemorySource<double> memory(MatrixRef<double>{csr.view()}, backend::Side::W);
  const std::size_t cap = 64 << 10;
  for (const TileSource<double>* source :
       {static_cast<const TileSource<double>*>(&file), static_cast<const TileSource<double>*>(&memory)}) {
    SCOPED_TRACE(source->kind());
    const auto tiles = source->partition(cap);
    const LargestTile most = largest_tile(tiles);
    EXPECT_LE(tile_bytes<double>(true, most.entries, most.lines), cap)
        << tiles.size() << " tiles, most entries " << most.entries << ", most rows " << most.lines;
    // Every row once, in order, and each tile's count right.
    index_t next = 0, entries = 0;
    for (const auto& t : tiles) {
      EXPECT_EQ(t.range.first, next);
      EXPECT_EQ(t.entries, indptr[to_size(t.range.last)] - indptr[to_size(t.range.first)]);
      next = t.range.last;
      entries += t.entries;
    }
    EXPECT_EQ(next, m);
    EXPECT_EQ(entries, csr.nnz());
  }
}

TEST_F(SourceTest, DcsrBadEntriesAndCorruptFiles) {
  auto a = uneven_sparse(20, 10, 11);
  a(13, 4) = -2.0;
  write_dcsr<double>(path("neg.dcsr"), test::to_csr(a).view());
  DcsrSource<double> source(path("neg.dcsr"), {0, 20}, {0, 10});
  const std::string message = error_message([&] { (void)assemble(source, 1 << 20); });
  EXPECT_NE(message.find("neg.dcsr: entry at row 13, column 4 (0-based) is -2"), std::string::npos) << message;
  // The same entry outside a 2-D block's columns is still checked (the whole row was read).
  DcsrSource<double> narrow(path("neg.dcsr"), {10, 20}, {0, 3});
  EXPECT_NE(error_message([&] { (void)assemble(narrow, 1 << 20); }).find("row 13, column 4"), std::string::npos);

  { std::ofstream(path("junk.dcsr")) << "not a dcsr file at all, but long enough to hold a header of 64 bytes..."; }
  EXPECT_NE(error_message([&] { (void)read_dcsr_header(path("junk.dcsr")); }).find("junk.dcsr: not a .dcsr file"),
            std::string::npos);
  // Truncated: arrays beyond the end.
  write_dcsr<double>(path("t.dcsr"), test::to_csr(uneven_sparse(20, 10, 12)).view());
  std::filesystem::resize_file(path("t.dcsr"), std::filesystem::file_size(path("t.dcsr")) - 8);
  EXPECT_NE(error_message([&] { (void)read_dcsr_header(path("t.dcsr")); }).find("truncated"), std::string::npos);
}

TEST_F(SourceTest, DcsrColumnIndexOutOfRangeIsCaughtOnEveryRead) {
  const auto csr = test::to_csr(uneven_sparse(10, 6, 13));
  std::vector<col_index_t> indices = csr.indices();
  indices[3] = 99;
  const CsrMatrix<double> bad(10, 6, csr.indptr(), indices, csr.values());
  io::write_dcsr_unchecked<double>(path("idx.dcsr"), bad.view());  // write_dcsr refuses it
  DcsrSource<double> source(path("idx.dcsr"), {0, 10}, {0, 6});
  const auto extents = source.partition(1 << 20);
  Tile<double> tile = test::slot_for<double>(extents, true);
  const std::string message = error_message([&] { source.read(extents[0], tile, false); });
  EXPECT_NE(message.find("column index 99 outside [0, 6)"), std::string::npos) << message;
}

// A masked run reads A unchecked and checks only the observed entries (NaN may mean missing); a plain read
// refuses the same entries by global row and column.
TEST_F(SourceTest, DcsrBadValuesAreKeptWhenUnchecked) {
  const auto csr = test::to_csr(uneven_sparse(10, 6, 13));
  std::vector<double> values = csr.values();
  values[2] = std::nan("");
  values[5] = -3.0;
  const CsrMatrix<double> bad(10, 6, csr.indptr(), csr.indices(), values);
  io::write_dcsr_unchecked<double>(path("bad.dcsr"), bad.view());
  const io::LocalBlock<double> block = io::read_dcsr_block<double>(path("bad.dcsr"), {0, 10}, {0, 6}, false);
  EXPECT_TRUE(std::isnan(block.csr.values()[2]));
  EXPECT_EQ(block.csr.values()[5], -3.0);
  EXPECT_EQ(io::load_matrix<double>(path("bad.dcsr")).csr.values()[5], -3.0);
  const std::string message = error_message([&] {
    (void)io::read_dcsr_block<double>(path("bad.dcsr"), {0, 10}, {0, 6});
  });
  EXPECT_NE(message.find("is NaN"), std::string::npos) << message;
  // Through the staging path (a column range and conversion to float) too.
  const io::LocalBlock<float> part = io::read_dcsr_block<float>(path("bad.dcsr"), {0, 10}, {0, 6}, false);
  EXPECT_EQ(part.csr.values()[5], -3.0F);
}

// Issue 16, item 3: an input that shrinks during a streamed run is an IoError naming the file, never SIGBUS.
TEST_F(SourceTest, MappedNpyThatShrinksIsAnIoErrorNotSigbus) {
  const index_t m = 4096, n = 64;  // 32 KiB a column
  io::write_npy<double>(path("a.npy"), test::random_dense<double>(m, n, 21).view());
  NpySource<double> source(path("a.npy"), {0, m}, {0, n}, NpyAccess::mapped);
  ASSERT_TRUE(source.mapped());
  const auto extents = source.partition(8 * 32768);  // 8 columns a tile
  ASSERT_EQ(extents.size(), 8u);
  Tile<double> tile = test::slot_for<double>(extents, false);
  source.read(extents[0], tile, true);
  source.check_intact();  // nothing happened yet
  // Cut after the header: the lent tile's pages leave the mapping, and touching them raises SIGBUS, which the
  // guard answers with zeros.
  std::filesystem::resize_file(path("a.npy"), 128);
  volatile double sum = 0;
  for (std::size_t i = 0; i < tile.lent_bytes / sizeof(double); ++i) sum = sum + tile.lent[i];
  EXPECT_EQ(sum, 0.0);
  try {
    source.check_intact();
    ADD_FAILURE() << "a shrunk mapping passed check_intact";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find("a.npy: the file shrank while it was being read (mapped, "), std::string::npos)
        << e.what();
  }
  // The next tile is refused before it is lent.
  EXPECT_NE(error_message([&] { source.read(extents[1], tile, true); }).find("shrank"), std::string::npos);
}

TEST_F(SourceTest, ReadSourcesThatShrinkAreIoErrors) {
  const auto a = uneven_sparse(300, 40, 22);
  io::write_npy<double>(path("a.npy"), a.view());
  write_dcsr<double>(path("a.dcsr"), test::to_csr(a).view());
  NpySource<double> npy(path("a.npy"), {0, 300}, {0, 40}, NpyAccess::read);
  DcsrSource<double> dcsr(path("a.dcsr"), {0, 300}, {0, 40});
  std::vector<TileSource<double>*> sources = {&npy, &dcsr};
  std::vector<std::vector<TileExtent>> extents;
  for (TileSource<double>* source : sources) extents.push_back(source->partition(4096));
  std::filesystem::resize_file(path("a.npy"), 1000);
  std::filesystem::resize_file(path("a.dcsr"), 1000);
  for (std::size_t s = 0; s < sources.size(); ++s) {
    ASSERT_GT(extents[s].size(), 1u);
    Tile<double> tile = test::slot_for<double>(extents[s], sources[s]->sparse());
    try {
      sources[s]->read(extents[s].back(), tile, true);
      ADD_FAILURE() << sources[s]->name() << ": a read past the new end succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::io) << e.what();
      EXPECT_NE(std::string(e.what()).find(sources[s]->name() + ": the file shrank while it was being read"),
                std::string::npos)
          << e.what();
      // The size the file has now, not the offset of the read that found its end.
      EXPECT_NE(std::string(e.what()).find("it has 1000 bytes now"), std::string::npos) << e.what();
    }
  }
}

// A file rewritten in place during a streamed run (same size): its entries are checked on the first pass only,
// and a helper's run with -1000 written in after it exited 0 with H entries of -2.5e5. Every source now compares
// the file's size and modification time after each pass: an IoError naming the file. Mapped and pread .npy, .dcsr;
// an untouched file passes.
TEST_F(SourceTest, SourcesWrittenDuringTheRunAreIoErrors) {
  const auto a = uneven_sparse(300, 40, 22);
  io::write_npy<double>(path("a.npy"), a.view());
  io::write_npy<double>(path("f.npy"), a.view());  // Fortran order (column-major): the mapped source lends it
  write_dcsr<double>(path("a.dcsr"), test::to_csr(a).view());
  NpySource<double> pread(path("a.npy"), {0, 300}, {0, 40}, NpyAccess::read);
  NpySource<double> mapped(path("f.npy"), {0, 300}, {0, 40}, NpyAccess::mapped);
  DcsrSource<double> dcsr(path("a.dcsr"), {0, 300}, {0, 40});
  const std::vector<TileSource<double>*> sources = {&pread, &mapped, &dcsr};
  for (TileSource<double>* source : sources) EXPECT_NO_THROW(source->check_intact()) << source->name();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later modification time on any file system
  for (const char* name : {"a.npy", "f.npy", "a.dcsr"}) {
    std::fstream f(path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-16, std::ios::end);
    const double minus = -1000.0;
    f.write(reinterpret_cast<const char*>(&minus), sizeof minus);
  }
  for (TileSource<double>* source : sources) {
    const std::string m = test::error_message([&] { source->check_intact(); });
    EXPECT_NE(m.find(source->name() + ": the file was written while it was being read"), std::string::npos) << m;
  }
}

TEST(MemorySource, DenseBothDirectionsAndCsrRows) {
  const auto a = test::random_dense<double>(17, 11, 14, 0.4);
  for (const auto side : {backend::Side::H, backend::Side::W}) {
    MemorySource<double> source(MatrixRef<double>{a.view()}, {2, 15}, {1, 10}, side);
    EXPECT_EQ(assemble(source, 3 * 13 * 8).storage(), slice(a, {2, 15}, {1, 10}).storage());
  }
  const auto csr = test::to_csr(a);
  MemorySource<double> rows(MatrixRef<double>{csr.view()}, {2, 15}, {1, 10}, backend::Side::W);
  EXPECT_EQ(assemble(rows, 200).storage(), slice(a, {2, 15}, {1, 10}).storage());
  EXPECT_THROW(MemorySource<double>(MatrixRef<double>{csr.view()}, backend::Side::H), Error);
}

}  // namespace
}  // namespace dnmf::stream
