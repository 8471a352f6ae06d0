// Tests for per-rank block reads on one process: .npy blocks by positioned reads, Matrix Market blocks through
// the collective reader (one rank; the byte-range split itself is checked for many ranks through the line
// scanner), the shape probe, and the errors (file, place, problem) of each.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/hdf5_path.hpp"
#include "io/input_file.hpp"
#include "io/mtx_collective.hpp"
#include "io/mtx_parse.hpp"
#include "io/npy_block.hpp"
#include "support/error_message.hpp"
#include "support/matrix_views.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace {

using dnmf::CsrMatrix;
using dnmf::DenseMatrix;
using dnmf::index_t;
using dnmf::dist::block_range;
using dnmf::dist::Range;
using dnmf::test::dense_of;
using dnmf::test::error_message;
using dnmf::test::slice;
using testing::HasSubstr;
using testing::StartsWith;

class BlockReadTest : public dnmf::test::TempDirTest {
 protected:
  std::string file(const std::string& bytes, const std::string& name) {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  /// The message reading a 3x3 block of `text` (as A.mtx, in 5-byte chunks) raises.
  std::string mtx_error(const std::string& text) {
    const std::string p = file(text, "A.mtx");
    return error_message([&] { dnmf::io::read_mtx_block<double>(p, {0, 3}, {0, 3}, single_, 5); });
  }
  dnmf::dist::SingleCommunicator single_;
};

template <class T>
class BlockReadTyped : public BlockReadTest {};
using Precisions = testing::Types<float, double>;
TYPED_TEST_SUITE(BlockReadTyped, Precisions);

template <class T>
void expect_equal(const DenseMatrix<T>& got, const DenseMatrix<T>& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  EXPECT_EQ(got.storage(), want.storage()) << what;
}

/// Bytes of a .npy file written here, not by the library: dtype `descr`, C or Fortran order.
std::string npy_bytes(const std::string& descr, bool fortran, index_t rows, index_t cols, const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  dict.append(63 - (10 + dict.size()) % 64, ' ');
  dict += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  return bytes + dict + data;
}

/// The values of `whole` in the file order of `fortran`, stored as S.
template <class S>
std::string npy_data(const DenseMatrix<double>& whole, bool fortran) {
  std::string data;
  const auto put = [&](double v) {
    const S s = static_cast<S>(v);
    data.append(reinterpret_cast<const char*>(&s), sizeof(S));
  };
  if (fortran) {
    for (index_t j = 0; j < whole.cols(); ++j)
      for (index_t i = 0; i < whole.rows(); ++i) put(whole(i, j));
  } else {
    for (index_t i = 0; i < whole.rows(); ++i)
      for (index_t j = 0; j < whole.cols(); ++j) put(whole(i, j));
  }
  return data;
}

/// A matrix whose entries are exact in float, int32 and double: i * 100 + j.
DenseMatrix<double> counting(index_t rows, index_t cols) {
  DenseMatrix<double> a(rows, cols);
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) a(i, j) = double(i * 100 + j);
  return a;
}

// ---------------------------------------------------------------------------------------------
// .npy

TYPED_TEST(BlockReadTyped, NpyEveryBlockOfA3x2SplitEqualsTheSlice) {
  using T = TypeParam;
  const DenseMatrix<double> whole = counting(11, 7);  // neither dimension divisible by the grid
  for (const bool fortran : {false, true}) {
    for (const std::string descr : {"<f4", "<f8", "<i4", "|u1"}) {
      if (descr == "|u1") continue;  // values up to 1006 do not fit a byte; covered by a smaller matrix below
      std::string data = descr == "<f4"   ? npy_data<float>(whole, fortran)
                         : descr == "<f8" ? npy_data<double>(whole, fortran)
                                          : npy_data<std::int32_t>(whole, fortran);
      const std::string p = this->file(npy_bytes(descr, fortran, 11, 7, data), "A.npy");
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) {
          const Range rows = block_range(11, 3, i), cols = block_range(7, 2, j);
          const std::string what =
              descr + (fortran ? " F" : " C") + " block " + std::to_string(i) + "," + std::to_string(j);
          const DenseMatrix<T> got = dnmf::io::read_npy_block<T>(p, rows, cols);
          DenseMatrix<T> want(rows.size(), cols.size());
          for (index_t c = 0; c < cols.size(); ++c)
            for (index_t r = 0; r < rows.size(); ++r) want(r, c) = T(whole(rows.first + r, cols.first + c));
          expect_equal(got, want, what);
        }
      }
    }
  }
}

TYPED_TEST(BlockReadTyped, NpyBlocksSpanningWholeRowsOrColumnsAndVectors) {
  using T = TypeParam;
  const DenseMatrix<double> whole = counting(9, 5);
  for (const bool fortran : {false, true}) {
    const std::string p = this->file(npy_bytes("<f8", fortran, 9, 5, npy_data<double>(whole, fortran)), "A.npy");
    // Whole rows (C order reads them as one run) and whole columns (Fortran order likewise).
    for (const auto& [rows, cols] : {std::pair{Range{2, 7}, Range{0, 5}}, std::pair{Range{0, 9}, Range{1, 4}},
                                     std::pair{Range{0, 9}, Range{0, 5}}, std::pair{Range{3, 3}, Range{0, 5}}}) {
      DenseMatrix<T> want(rows.size(), cols.size());
      for (index_t c = 0; c < cols.size(); ++c)
        for (index_t r = 0; r < rows.size(); ++r) want(r, c) = T(whole(rows.first + r, cols.first + c));
      expect_equal(dnmf::io::read_npy_block<T>(p, rows, cols), want, "span");
    }
  }
  // A 1 x n C-order array and a byte dtype.
  const DenseMatrix<double> row = counting(1, 6);
  const std::string p = this->file(npy_bytes("|u1", false, 1, 6, npy_data<std::uint8_t>(row, false)), "row.npy");
  const DenseMatrix<T> got = dnmf::io::read_npy_block<T>(p, {0, 1}, {2, 5});
  EXPECT_EQ(got.storage(), (dnmf::AlignedVector<T>{2, 3, 4}));
}

TYPED_TEST(BlockReadTyped, NpyLargeBlocksCrossTheReadChunk) {
  using T = TypeParam;
  // 1100 x 1000 f8 = 8.8 MB: whole-row groups and single columns longer than the 4 MiB read chunk.
  const DenseMatrix<double> whole = dnmf::test::random_dense<double>(1100, 1000, 5);
  for (const bool fortran : {false, true}) {
    const std::string p = this->file(npy_bytes("<f8", fortran, 1100, 1000, npy_data<double>(whole, fortran)), "A.npy");
    for (const auto& [rows, cols] :
         {std::pair{Range{0, 1100}, Range{0, 1000}}, std::pair{Range{13, 1001}, Range{7, 900}}}) {
      DenseMatrix<T> want(rows.size(), cols.size());
      for (index_t c = 0; c < cols.size(); ++c)
        for (index_t r = 0; r < rows.size(); ++r) want(r, c) = T(whole(rows.first + r, cols.first + c));
      expect_equal(dnmf::io::read_npy_block<T>(p, rows, cols), want, fortran ? "F" : "C");
    }
  }
}

TEST_F(BlockReadTest, NpyErrorsNameTheFileAndTheGlobalPosition) {
  DenseMatrix<double> whole = counting(6, 4);
  whole(4, 3) = std::nan("");
  whole(1, 1) = -2.5;
  const std::string p = file(npy_bytes("<f8", false, 6, 4, npy_data<double>(whole, false)), "A.npy");
  // The bad entries are reported by global row and column, by whichever block holds them.
  EXPECT_EQ(error_message([&] {
              dnmf::io::read_npy_block<double>(p, {3, 6}, {2, 4});
            }),
            p + ": entry at row 4, column 3 (0-based) is NaN; input must be finite and non-negative (NaN "
                "entries of A can be fitted as missing values: --missing nan, "
                "MissingValues::nan_missing in C++, or dnmf.NMF().fit(X, missing='nan'))");
  EXPECT_EQ(error_message([&] {
              dnmf::io::read_npy_block<float>(p, {0, 3}, {0, 2});
            }),
            p + ": entry at row 1, column 1 (0-based) is -2.5; input must be non-negative");
  EXPECT_NO_THROW(dnmf::io::read_npy_block<double>(p, {0, 3}, {2, 4}));  // a clean block of a bad file
  EXPECT_THAT(error_message([&] {
                dnmf::io::read_npy_block<double>(p, {0, 7}, {0, 4});
              }),
              HasSubstr(p + ": row range [0, 7) is out of bounds for a 6x4 array"));

  // Truncated: the header promises more data than the file holds.
  const std::string data = npy_data<double>(counting(6, 4), false);
  const std::string t = file(npy_bytes("<f8", false, 6, 4, data.substr(0, data.size() - 9)), "T.npy");
  EXPECT_THAT(error_message([&] {
                dnmf::io::read_npy_block<double>(t, {5, 6}, {0, 4});
              }),
              AllOf(StartsWith(t + ": truncated"), HasSubstr("6x4")));
  const std::string g = file("not a numpy file at all", "G.npy");
  EXPECT_THAT(error_message([&] {
                dnmf::io::read_npy_block<double>(g, {0, 1}, {0, 1});
              }),
              StartsWith(g + ": not a .npy file"));
  EXPECT_THAT(error_message([&] {
                dnmf::io::read_npy_block<double>(path("missing.npy"), {0, 1}, {0, 1});
              }),
              StartsWith(path("missing.npy") + ": cannot open"));
}

TEST_F(BlockReadTest, ReadBlockAndReadShapeDispatchNpy) {
  const DenseMatrix<double> whole = counting(5, 3);
  const std::string p = file(npy_bytes("<f8", true, 5, 3, npy_data<double>(whole, true)), "A.npy");
  const dnmf::io::MatrixShape shape = dnmf::io::read_shape(p, single_);
  EXPECT_EQ(shape.rows, 5);
  EXPECT_EQ(shape.cols, 3);
  EXPECT_EQ(shape.stored, 15);
  EXPECT_FALSE(shape.sparse);
  const auto block = dnmf::io::read_block<double>(p, {1, 4}, {1, 3}, single_);
  EXPECT_FALSE(block.sparse);
  expect_equal(block.dense, slice(whole, {1, 4}, {1, 3}), "block");
  // One process: a failure is the whole job's, a CollectiveError (still a dnmf::Error).
  EXPECT_THROW(dnmf::io::read_block<double>(p, {0, 6}, {0, 3}, single_), dnmf::CollectiveError);
  EXPECT_THROW(dnmf::io::read_shape(path("none.npy"), single_), dnmf::CollectiveError);
}

// ---------------------------------------------------------------------------------------------
// Matrix Market on one rank

const char* const kGeneral =
    "%%MatrixMarket matrix coordinate real general\n"
    "% comment\n"
    "7 6 12\n"
    "1 1 1.5\n"
    "7 6 2\n"
    "\n"
    "3 2 0.25\n"
    "% a comment between entries\n"
    "3 2 0.5\n"  // duplicate of the line above: summed
    "2 5 4\n"
    "5 1 1e1\n"
    "5 6 3\r\n"
    "6 3 +7\n"
    "1 6 8\n"
    "4 4 0\n"  // an explicit zero stays stored
    "7 1 9\n"
    "2 2 11";  // no final newline

const char* const kSymmetric =
    "%%MatrixMarket matrix coordinate real symmetric\n"
    "5 5 6\n"
    "1 1 2\n"
    "3 1 1.5\n"
    "5 2 4\n"
    "4 4 3\n"
    "5 4 7\n"
    "5 5 1\n";

const char* const kPattern =
    "%%MatrixMarket matrix coordinate pattern general\n"
    "4 9 5\n"
    "1 9\n"
    "4 1\n"
    "2 2\n"
    "2 8\n"
    "4 9\n";

TYPED_TEST(BlockReadTyped, MtxBlocksEqualSlicesOfTheSerialRead) {
  using T = TypeParam;
  for (const char* text : {kGeneral, kSymmetric, kPattern}) {
    const std::string p = this->file(text, "A.mtx");
    const DenseMatrix<T> whole = dense_of(dnmf::io::read_mtx<T>(p));
    const index_t m = whole.rows(), n = whole.cols();
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{16} << 20}) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 2; ++j) {
          const Range rows = block_range(m, 3, i), cols = block_range(n, 2, j);
          const CsrMatrix<T> block = dnmf::io::read_mtx_block<T>(p, rows, cols, this->single_, chunk);
          expect_equal(dense_of(block), slice(whole, rows, cols),
                       std::string(text).substr(0, 50) + " chunk " + std::to_string(chunk));
        }
      }
    }
    const auto block = dnmf::io::read_block<T>(p, {0, m}, {0, n}, this->single_);
    EXPECT_TRUE(block.sparse);
    expect_equal(dense_of(block.csr), whole, "read_block");
  }
}

TEST_F(BlockReadTest, MtxDuplicatesAreSummedAndZerosKept) {
  const std::string p = file(kGeneral, "A.mtx");
  const CsrMatrix<double> block = dnmf::io::read_mtx_block<double>(p, {2, 4}, {0, 6}, single_);
  // Row 2 holds (2, 1) = 0.25 + 0.5 once; row 3 the explicit zero at column 3.
  EXPECT_EQ(block.indptr(), (std::vector<index_t>{0, 1, 2}));
  EXPECT_EQ(block.indices(), (std::vector<dnmf::col_index_t>{1, 3}));
  EXPECT_EQ(block.values(), (std::vector<double>{0.75, 0.0}));
}

TEST_F(BlockReadTest, MtxBlockWithNoEntries) {
  const std::string p = file(kPattern, "A.mtx");
  const CsrMatrix<double> block = dnmf::io::read_mtx_block<double>(p, {2, 3}, {2, 7}, single_);
  EXPECT_EQ(block.rows(), 1);
  EXPECT_EQ(block.cols(), 5);
  EXPECT_EQ(block.nnz(), 0);
  EXPECT_EQ(block.indptr(), (std::vector<index_t>{0, 0}));
  const CsrMatrix<double> none = dnmf::io::read_mtx_block<double>(p, {4, 4}, {0, 0}, single_);
  EXPECT_EQ(none.rows(), 0);
  EXPECT_EQ(none.indptr(), (std::vector<index_t>{0}));
}

TEST_F(BlockReadTest, MtxShape) {
  const dnmf::io::MatrixShape shape = dnmf::io::read_shape(file(kSymmetric, "S.mtx"), single_);
  EXPECT_EQ(shape.rows, 5);
  EXPECT_EQ(shape.cols, 5);
  EXPECT_EQ(shape.stored, 6);
  EXPECT_TRUE(shape.sparse);
}

TEST_F(BlockReadTest, MtxErrorsNameTheFileAndLine) {
  const std::string p = path("A.mtx");
  const std::string head = "%%MatrixMarket matrix coordinate real general\n% c\n3 3 3\n";
  EXPECT_EQ(mtx_error(head + "1 1 1\n\n2 x 1\n3 3 1\n"), p + ":6: bad column index 'x'");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 4 1\n3 3 1\n"), p + ":5: column index 4 out of range 1..3");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2 abc\n3 3 1\n"), p + ":5: bad value 'abc'");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2\n3 3 1\n"), p + ":5: missing value after the row and column indices");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2 -3\n3 3 1\n"),
            p + ":5: entry at row 1, column 1 (0-based) is -3; input must be non-negative");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2 nan\n3 3 1\n"),
            p + ":5: entry at row 1, column 1 (0-based) is NaN; input must be finite and non-negative (NaN "
                "entries of A can be fitted as missing values: --missing nan, "
                "MissingValues::nan_missing in C++, or dnmf.NMF().fit(X, missing='nan'))");
  EXPECT_EQ(mtx_error(head + "1 1 1\n% c\n2 2 1\n"),
            p + ":7: truncated: the file ends after 2 of the 3 entries announced on line 3");
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2 1\n\n3 3 1\n1 2 1\n"), p + ":8: more entries than the 3 announced on line 3");
  // A bad line after the announced entries: the count is the first problem, as in the one-process reader.
  EXPECT_EQ(mtx_error(head + "1 1 1\n2 2 1\n3 3 1\n1 2 zz\n"), p + ":7: more entries than the 3 announced on line 3");
  EXPECT_EQ(mtx_error("%%MatrixMarket matrix array real general\n3 3\n"),
            p + ":1: dense 'array' Matrix Market files are not supported; convert to 'coordinate' format or save the "
                "matrix as .npy");
  EXPECT_EQ(mtx_error("%%MatrixMarket matrix coordinate real general\n% only comments\n"),
            p + ":3: missing size line 'rows columns entries' (the file ends after the header)");
  EXPECT_EQ(mtx_error(""), p + ":1: empty file (expected a '%%MatrixMarket' header line)");
  // The same messages as the one-process reader gives, where both report.
  for (const std::string& text :
       {head + "1 1 1\n\n2 x 1\n3 3 1\n", head + "1 1 1\n% c\n2 2 1\n", head + "1 1 1\n2 2 1\n\n3 3 1\n1 2 1\n"}) {
    const std::string collective = mtx_error(text);
    EXPECT_EQ(collective, error_message([&] { dnmf::io::read_mtx<double>(p); }));
  }
  // A block outside the matrix is refused before any reading.
  std::ofstream(p, std::ios::binary) << head << "1 1 1\n2 2 1\n3 3 1\n";
  EXPECT_EQ(error_message([&] {
              dnmf::io::read_mtx_block<double>(p, {0, 4}, {0, 3}, single_);
            }),
            p + ": rank 0 asked for rows [0, 4) x columns [0, 3) of a 3x3 matrix");
}

// ---------------------------------------------------------------------------------------------
// The byte-range split: every line of the data section belongs to exactly one of p ranges.

TEST_F(BlockReadTest, ByteRangesOwnEveryLineExactlyOnce) {
  std::string text = "%%MatrixMarket matrix coordinate real general\n2 2 40\n";
  std::vector<std::string> want;
  for (int k = 0; k < 40; ++k) {
    std::string line = std::to_string(k % 2 + 1) + " " + std::to_string(k % 2 + 1) + " " + std::to_string(k * 13);
    if (k % 7 == 3) line = "% comment " + std::to_string(k);
    if (k % 11 == 5) line.clear();              // blank line
    if (k == 20) line += std::string(50, ' ');  // a long line spanning several small ranges
    want.push_back(line);
    text += line + (k == 39 ? "" : "\n");
  }
  const std::string p = file(text, "A.mtx");
  const dnmf::io::detail::InputFile in(p);
  const dnmf::io::mtx::Header h = dnmf::io::mtx::read_header(in);
  EXPECT_EQ(h.size_line, 2);
  const std::uint64_t data = in.size() - h.data_offset;
  for (std::uint64_t parts = 1; parts <= 40; parts += (parts < 12 ? 1 : 9)) {
    for (const std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
      std::vector<std::string> got;
      for (std::uint64_t r = 0; r < parts; ++r) {
        const std::uint64_t begin = h.data_offset + data * r / parts, end = h.data_offset + data * (r + 1) / parts;
        dnmf::io::mtx::RangeLines lines(in, h.data_offset, begin, end, chunk);
        std::string_view line;
        while (lines.next(line)) got.emplace_back(line);
      }
      EXPECT_EQ(got, want) << parts << " ranges, chunk " << chunk;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Format detection

TEST(FormatOf, Hdf5PathsWithAndWithoutAnObject) {
  using dnmf::io::FileFormat;
  EXPECT_EQ(dnmf::io::format_of("A.h5"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("dir/A.HDF5"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("A.h5:/X"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("run:1/A.hdf5:group/X"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("A.npy"), FileFormat::npy);
  EXPECT_THAT(error_message([] { dnmf::io::format_of("A.h5x"); }), HasSubstr("unknown input format"));
  const dnmf::io::Hdf5Path a = dnmf::io::split_hdf5_path("run:1/A.h5:/g/X");
  EXPECT_EQ(a.file, "run:1/A.h5");
  EXPECT_EQ(a.object, "/g/X");
  const dnmf::io::Hdf5Path b = dnmf::io::split_hdf5_path("A.hdf5");
  EXPECT_EQ(b.file, "A.hdf5");
  EXPECT_EQ(b.object, "");
}

}  // namespace
