// Tests for the .npy reader and writer: round trips, hand-made files with known bytes, block reads,
// dtype conversion and every rejected input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/npy_header.hpp"
#include "support/error_message.hpp"
#include "support/temp_dir_test.hpp"

namespace {

namespace fs = std::filesystem;
using dnmf::DenseMatrix;
using dnmf::DenseView;
using dnmf::index_t;
using testing::HasSubstr;

/// Fixture owning a fresh temporary directory.
class NpyTest : public dnmf::test::TempDirTest {
 protected:
};

template <class T>
class NpyTypedTest : public NpyTest {};
using Precisions = testing::Types<float, double>;
TYPED_TEST_SUITE(NpyTypedTest, Precisions);

using dnmf::test::error_message;

/// The bytes of a .npy file built by hand, independently of the library's writer.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string file = std::string("\x93NUMPY", 6);
  file += static_cast<char>(major);
  file += '\0';
  const std::size_t length = dict.size();
  const int length_bytes = major == 1 ? 2 : 4;
  for (int k = 0; k < length_bytes; ++k) file += static_cast<char>((length >> (8 * k)) & 0xff);
  return file + dict + data;
}

template <class S>
std::string raw(const std::vector<S>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(S));
}

void write_bytes(const std::string& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good());
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <class T>
DenseMatrix<T> sample(index_t rows, index_t cols) {
  DenseMatrix<T> m(rows, cols);
  for (index_t j = 0; j < cols; ++j) {
    for (index_t i = 0; i < rows; ++i) m(i, j) = T(i * 100 + j) + T(0.25);
  }
  return m;
}

template <class T, class U>
void expect_equal(const DenseMatrix<T>& actual, const DenseMatrix<U>& expected) {
  ASSERT_EQ(actual.rows(), expected.rows());
  ASSERT_EQ(actual.cols(), expected.cols());
  for (index_t j = 0; j < expected.cols(); ++j) {
    for (index_t i = 0; i < expected.rows(); ++i) {
      ASSERT_EQ(actual(i, j), static_cast<T>(expected(i, j))) << "at (" << i << ", " << j << ")";
    }
  }
}

/// Columns [c0, c1) and rows [r0, r1) of a matrix, as a new matrix.
template <class T>
DenseMatrix<T> slice(const DenseMatrix<T>& m, index_t r0, index_t r1, index_t c0, index_t c1) {
  DenseMatrix<T> out(r1 - r0, c1 - c0);
  for (index_t j = c0; j < c1; ++j) {
    for (index_t i = r0; i < r1; ++i) out(i - r0, j - c0) = m(i, j);
  }
  return out;
}

template <class T>
std::vector<T> row_major(const DenseMatrix<T>& m) {
  std::vector<T> data;
  for (index_t i = 0; i < m.rows(); ++i) {
    for (index_t j = 0; j < m.cols(); ++j) data.push_back(m(i, j));
  }
  return data;
}

const std::vector<std::pair<index_t, index_t>> kShapes = {{3, 4}, {1, 5}, {5, 1}, {1, 1}, {4, 0}, {0, 3}, {0, 0}};

// ---------------------------------------------------------------------------------------------
// Round trips

TYPED_TEST(NpyTypedTest, FortranOrderRoundTrip) {
  using T = TypeParam;
  for (const auto& [rows, cols] : kShapes) {
    SCOPED_TRACE(testing::Message() << rows << "x" << cols);
    const DenseMatrix<T> m = sample<T>(rows, cols);
    const std::string file = this->path("m.npy");
    dnmf::io::write_npy<T>(file, m.view());
    expect_equal(dnmf::io::read_npy<T>(file), m);
    expect_equal(dnmf::io::read_npy<double>(file), m);  // widening (or identity) conversion
    expect_equal(dnmf::io::read_npy<float>(file), m);   // values are exact in float
  }
}

TYPED_TEST(NpyTypedTest, RowMajorRoundTrip) {
  using T = TypeParam;
  for (const auto& [rows, cols] : kShapes) {
    SCOPED_TRACE(testing::Message() << rows << "x" << cols);
    const DenseMatrix<T> m = sample<T>(rows, cols);
    const std::string file = this->path("m.npy");
    const std::vector<T> data = row_major(m);
    dnmf::io::write_npy_row_major<T>(file, data.data(), rows, cols);
    EXPECT_FALSE(dnmf::io::read_npy_header(file).fortran_order);
    expect_equal(dnmf::io::read_npy<T>(file), m);
    expect_equal(dnmf::io::read_npy<double>(file), m);
  }
}

TYPED_TEST(NpyTypedTest, WrittenHeaderIsVersion1AlignedTo64Bytes) {
  using T = TypeParam;
  const std::string file = this->path("m.npy");
  dnmf::io::write_npy<T>(file, sample<T>(7, 3).view());
  const std::string bytes = read_bytes(file);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_length = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_length) % 64, 0u);
  const std::string dict = bytes.substr(10, header_length);
  EXPECT_THAT(dict, HasSubstr(sizeof(T) == 4 ? "'descr': '<f4'" : "'descr': '<f8'"));
  EXPECT_THAT(dict, HasSubstr("'fortran_order': True"));
  EXPECT_THAT(dict, HasSubstr("'shape': (7, 3)"));
  EXPECT_EQ(dict.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_length + std::size_t{7 * 3} * sizeof(T));

  const dnmf::io::NpyHeader header = dnmf::io::read_npy_header(file);
  EXPECT_EQ(header.kind, 'f');
  EXPECT_EQ(header.word_size, sizeof(T));
  EXPECT_TRUE(header.fortran_order);
  EXPECT_EQ(header.rows, 7);
  EXPECT_EQ(header.cols, 3);
  EXPECT_EQ(header.data_offset, 10 + header_length);
}

TYPED_TEST(NpyTypedTest, WritingAStridedViewWritesOnlyTheBlock) {
  using T = TypeParam;
  const DenseMatrix<T> big = sample<T>(6, 5);
  const DenseView<const T> block = big.view().columns(1, 4).row_range(2, 5);  // 3x3, ld 6
  dnmf::io::write_npy<T>(this->path("b.npy"), block);
  expect_equal(dnmf::io::read_npy<T>(this->path("b.npy")), slice(big, 2, 5, 1, 4));
}

TEST_F(NpyTest, NegativeShapeIsRejectedByTheWriter) {
  std::vector<double> data(4);
  EXPECT_THAT(error_message([&] { dnmf::io::write_npy_row_major<double>(path("n.npy"), data.data(), -1, 4); }),
              HasSubstr(path("n.npy") + ": cannot write a matrix of negative size -1x4"));
  EXPECT_FALSE(fs::exists(path("n.npy")));
}

// ---------------------------------------------------------------------------------------------
// Hand-made files

const char* const kDict23C = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n";
const std::vector<double> kData23 = {1, 2, 3, 4, 5, 6};  // row-major [[1, 2, 3], [4, 5, 6]]

void expect_2x3_c_order(const DenseMatrix<double>& m) {
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m.storage(), (dnmf::AlignedVector<double>{1, 4, 2, 5, 3, 6}));  // column-major
}

TEST_F(NpyTest, HandWrittenCOrderFileIsTransposedIntoColumnMajor) {
  write_bytes(path("c.npy"), npy_bytes(kDict23C, raw(kData23)));
  expect_2x3_c_order(dnmf::io::read_npy<double>(path("c.npy")));
  const DenseMatrix<float> f = dnmf::io::read_npy<float>(path("c.npy"));
  EXPECT_EQ(f.storage(), (dnmf::AlignedVector<float>{1, 4, 2, 5, 3, 6}));
}

TEST_F(NpyTest, HandWrittenFortranOrderF4File) {
  const std::vector<float> data = {1, 4, 2, 5, 3, 6};  // column-major [[1, 2, 3], [4, 5, 6]]
  write_bytes(path("f.npy"), npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", raw(data)));
  expect_2x3_c_order(dnmf::io::read_npy<double>(path("f.npy")));
}

TEST_F(NpyTest, HeaderVariantsAreAccepted) {
  const std::vector<std::pair<std::string, int>> variants = {
      {"{'shape':(2,3),'fortran_order':False,'descr':'<f8'}", 1},
      {"{ \"descr\" : \"<f8\" ,\n 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }   \n", 1},
      {"{'descr': '=f8', 'fortran_order': False, 'shape': (2, 3)}\n", 1},
      {"{'descr': '|f8', 'fortran_order': False, 'shape': (2L, 3L), }\n", 1},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), 'extra': [1, (2, 'x')], }\n", 1},
      {kDict23C, 2},
      {kDict23C, 3},
  };
  for (const auto& [dict, major] : variants) {
    SCOPED_TRACE(dict + " version " + std::to_string(major));
    write_bytes(path("v.npy"), npy_bytes(dict, raw(kData23), major));
    expect_2x3_c_order(dnmf::io::read_npy<double>(path("v.npy")));
  }
}

TEST_F(NpyTest, OneDimensionalArrayIsAColumn) {
  for (const char* order : {"False", "True"}) {
    write_bytes(
        path("v.npy"),
        npy_bytes(std::string("{'descr': '<f8', 'fortran_order': ") + order + ", 'shape': (6,), }\n", raw(kData23)));
    const DenseMatrix<double> m = dnmf::io::read_npy<double>(path("v.npy"));
    EXPECT_EQ(m.rows(), 6);
    EXPECT_EQ(m.cols(), 1);
    EXPECT_EQ(std::vector<double>(m.storage().begin(), m.storage().end()), kData23);
    expect_equal(dnmf::io::read_npy_rows<double>(path("v.npy"), 2, 5), slice(m, 2, 5, 0, 1));
  }
}

template <class S>
void check_integer_dtype(const std::string& file, const std::string& descr) {
  SCOPED_TRACE(descr);
  // Row-major 2x3 of small values, negative ones only for signed types.
  const std::vector<S> values = {S(0), S(1), S(127), std::is_signed_v<S> ? S(-5) : S(200), S(7), S(42)};
  write_bytes(file, npy_bytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 3), }\n", raw(values)));
  const DenseMatrix<double> d = dnmf::io::read_npy<double>(file);
  const DenseMatrix<float> f = dnmf::io::read_npy<float>(file);
  ASSERT_EQ(d.rows(), 2);
  ASSERT_EQ(d.cols(), 3);
  for (index_t i = 0; i < 2; ++i) {
    for (index_t j = 0; j < 3; ++j) {
      EXPECT_EQ(d(i, j), double(values[i * 3 + j]));
      EXPECT_EQ(f(i, j), float(values[i * 3 + j]));
    }
  }
  const dnmf::io::NpyHeader header = dnmf::io::read_npy_header(file);
  EXPECT_EQ(header.word_size, sizeof(S));
  EXPECT_EQ(header.kind, std::is_signed_v<S> ? 'i' : 'u');
}

TEST_F(NpyTest, LittleEndianIntegerDtypesAreConverted) {
  check_integer_dtype<std::int8_t>(path("i.npy"), "|i1");
  check_integer_dtype<std::int16_t>(path("i.npy"), "<i2");
  check_integer_dtype<std::int32_t>(path("i.npy"), "<i4");
  check_integer_dtype<std::int64_t>(path("i.npy"), "<i8");
  check_integer_dtype<std::uint8_t>(path("i.npy"), "|u1");
  check_integer_dtype<std::uint16_t>(path("i.npy"), "<u2");
  check_integer_dtype<std::uint32_t>(path("i.npy"), "<u4");
  check_integer_dtype<std::uint64_t>(path("i.npy"), "<u8");
}

// numpy's bool is a byte, and any non-zero byte is True (uint8_array.view(bool) keeps the bytes): read as 1, as
// numpy reads it. Read as its byte, a mask's 255 was a weight of 255. The dtype is named as numpy writes it.
TEST_F(NpyTest, BoolBytesAreZeroOrOne) {
  const std::vector<std::uint8_t> bytes = {0, 1, 255, 2, 0, 7};
  write_bytes(path("b.npy"), npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }\n", raw(bytes)));
  const DenseMatrix<double> d = dnmf::io::read_npy<double>(path("b.npy"));
  const DenseMatrix<float> f = dnmf::io::read_npy<float>(path("b.npy"));
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j) {
      const double expected = bytes[dnmf::to_size(i * 3 + j)] != 0 ? 1.0 : 0.0;
      EXPECT_EQ(d(i, j), expected) << i << "," << j;
      EXPECT_EQ(f(i, j), static_cast<float>(expected)) << i << "," << j;
    }
  EXPECT_EQ(dnmf::io::dtype_name(dnmf::io::read_npy_header(path("b.npy"))), "b1");
}

// ---------------------------------------------------------------------------------------------
// Rejected files: each message names the file and the specific problem, on one line.

class NpyErrorTest : public NpyTest {
 protected:
  std::string load_error(const std::string& bytes) {
    const std::string file = path("A.npy");
    write_bytes(file, bytes);
    std::string message = error_message([&] { dnmf::io::read_npy<double>(file); });
    EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    // The header alone must already be refused.
    EXPECT_EQ(error_message([&] { dnmf::io::read_npy_header(file); }), message);
    return message;
  }
  std::string dict_error(const std::string& dict, const std::string& data = raw(kData23)) {
    return load_error(npy_bytes(dict, data));
  }
};

TEST_F(NpyErrorTest, BigEndianDtype) {
  EXPECT_THAT(dict_error("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }\n"),
              HasSubstr("A.npy: unsupported dtype '>f8' (big-endian; expected little-endian f4 or f8"));
}

TEST_F(NpyErrorTest, ComplexObjectHalfAndStringDtypes) {
  EXPECT_THAT(dict_error("{'descr': '<c16', 'fortran_order': False, 'shape': (1, 3), }\n"),
              HasSubstr("unsupported dtype '<c16' (complex values;"));
  EXPECT_THAT(dict_error("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }\n"),
              HasSubstr("unsupported dtype '|O' (Python objects;"));
  EXPECT_THAT(dict_error("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }\n"),
              HasSubstr("unsupported dtype '<f2' (half precision;"));
  EXPECT_THAT(dict_error("{'descr': '<U4', 'fortran_order': False, 'shape': (2, 3), }\n"),
              HasSubstr("unsupported dtype '<U4'"));
  EXPECT_THAT(dict_error("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2, 3), }\n"),
              HasSubstr("structured arrays are not supported"));
}

TEST_F(NpyErrorTest, ThreeDimensionalAndScalarArrays) {
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3), }\n"),
              HasSubstr("A.npy: 3-D array of shape (1, 2, 3); only 1-D and 2-D arrays are supported"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n"), HasSubstr("0-D (scalar)"));
}

TEST_F(NpyErrorTest, TruncatedDataIsFoundFromTheFileSize) {
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': True, 'shape': (2000, 1500), }\n", std::string(1000, 'x')),
              HasSubstr("A.npy: truncated: header says 2000x1500 f8 = 24000000 bytes of data, file has 1000 bytes"));
}

TEST_F(NpyErrorTest, TruncatedHeader) {
  std::string bytes = npy_bytes(kDict23C, "");
  bytes.resize(30);
  EXPECT_THAT(load_error(bytes), HasSubstr("truncated: the header is said to be"));
  EXPECT_THAT(load_error(std::string("\x93NUMPY\x02\x00\x10", 9)), HasSubstr("not a .npy file"));
}

TEST_F(NpyErrorTest, BadMagicAndVersion) {
  EXPECT_THAT(load_error("PK\x03\x04 this is a zip file, maybe an .npz"), HasSubstr("A.npy: not a .npy file"));
  EXPECT_THAT(load_error(""), HasSubstr("not a .npy file"));
  EXPECT_THAT(load_error(npy_bytes(kDict23C, raw(kData23), 4)),
              HasSubstr("unsupported .npy format version 4.0 (expected 1.0, 2.0 or 3.0)"));
}

TEST_F(NpyErrorTest, MalformedDict) {
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False}\n"), HasSubstr("malformed header: no 'shape'"));
  EXPECT_THAT(dict_error("{'descr' '<f8', 'fortran_order': False, 'shape': (2, 3)}\n"),
              HasSubstr("malformed header: expected ':' at character 10"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': 'yes', 'shape': (2, 3)}\n"),
              HasSubstr("'fortran_order' is the string 'yes', expected True or False"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': 'False', 'shape': (2, 3)}\n"),
              HasSubstr("'fortran_order' is the string 'False', expected True or False"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': 1, 'shape': (2, 3)}\n"),
              HasSubstr("'fortran_order' is 1, expected True or False"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3)}\n"),
              HasSubstr("malformed header: expected a value"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3)} junk\n"),
              HasSubstr("unexpected text after the closing '}'"));
  EXPECT_THAT(dict_error("{'descr': '<f8\x01', 'fortran_order': False, 'shape': [2, 3]}\n"),
              HasSubstr("unsupported dtype '<f8\\x01'"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3]}\n"),
              HasSubstr("'shape' is [2, 3], expected a tuple of integers"));
  EXPECT_THAT(dict_error("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 3)}\n"),
              HasSubstr("integer too large"));
}

TEST_F(NpyTest, MissingFileNamesPathAndReason) {
  const std::string file = path("missing.npy");
  EXPECT_EQ(error_message([&] { dnmf::io::read_npy<float>(file); }), file + ": cannot open: No such file or directory");
}

// ---------------------------------------------------------------------------------------------
// Block reads

/// Writes `m` in the given order as `file`, in precision S.
template <class S, class T>
void write_in_order(const std::string& file, const DenseMatrix<T>& m, bool fortran) {
  DenseMatrix<S> converted(m.rows(), m.cols());
  for (std::size_t k = 0; k < m.storage().size(); ++k) converted.storage()[k] = static_cast<S>(m.storage()[k]);
  if (fortran) {
    dnmf::io::write_npy<S>(file, converted.view());
  } else {
    const std::vector<S> data = row_major(converted);
    dnmf::io::write_npy_row_major<S>(file, data.data(), m.rows(), m.cols());
  }
}

template <class S, class T>
void check_blocks(const std::string& file) {
  const DenseMatrix<T> m = sample<T>(7, 5);
  for (const bool fortran : {true, false}) {
    SCOPED_TRACE(fortran ? "Fortran order" : "C order");
    write_in_order<S>(file, m, fortran);
    const DenseMatrix<T> full = dnmf::io::read_npy<T>(file);
    expect_equal(full, m);
    for (const auto& [first, last] : std::vector<std::pair<index_t, index_t>>{{0, 5}, {1, 4}, {4, 5}, {2, 2}}) {
      SCOPED_TRACE(testing::Message() << "columns [" << first << ", " << last << ")");
      expect_equal(dnmf::io::read_npy_columns<T>(file, first, last), slice(full, 0, 7, first, last));
    }
    for (const auto& [first, last] : std::vector<std::pair<index_t, index_t>>{{0, 7}, {2, 6}, {6, 7}, {3, 3}}) {
      SCOPED_TRACE(testing::Message() << "rows [" << first << ", " << last << ")");
      expect_equal(dnmf::io::read_npy_rows<T>(file, first, last), slice(full, first, last, 0, 5));
    }
  }
}

TYPED_TEST(NpyTypedTest, BlockReadsMatchSlicesOfTheFullRead) {
  check_blocks<TypeParam, TypeParam>(this->path("m.npy"));
}

TYPED_TEST(NpyTypedTest, BlockReadsWithConversion) {
  using Other = std::conditional_t<std::is_same_v<TypeParam, float>, double, float>;
  check_blocks<Other, TypeParam>(this->path("m.npy"));
}

TEST_F(NpyTest, BlockReadsOfAnIntegerFile) {
  const std::vector<std::int16_t> data = {1, 2, 3, 4, 5, 6};  // row-major 2x3
  write_bytes(path("i.npy"), npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }\n", raw(data)));
  EXPECT_EQ(dnmf::io::read_npy_columns<double>(path("i.npy"), 1, 3).storage(),
            (dnmf::AlignedVector<double>{2, 5, 3, 6}));
  EXPECT_EQ(dnmf::io::read_npy_rows<float>(path("i.npy"), 1, 2).storage(), (dnmf::AlignedVector<float>{4, 5, 6}));
}

TEST_F(NpyTest, BlockRangeOutOfBounds) {
  const std::string file = path("A.npy");
  dnmf::io::write_npy<double>(file, sample<double>(7, 5).view());
  EXPECT_EQ(error_message([&] { dnmf::io::read_npy_columns<double>(file, 3, 6); }),
            file + ": column range [3, 6) is out of bounds for a 7x5 array");
  EXPECT_THAT(error_message([&] { dnmf::io::read_npy_columns<double>(file, -1, 2); }),
              HasSubstr("column range [-1, 2)"));
  EXPECT_THAT(error_message([&] { dnmf::io::read_npy_rows<float>(file, 4, 3); }),
              HasSubstr(file + ": row range [4, 3) is out of bounds"));
  EXPECT_THAT(error_message([&] { dnmf::io::read_npy_rows<float>(file, 0, 8); }), HasSubstr("row range [0, 8)"));
}

// Sizes beyond the reader's internal buffer, so that reads are split into several pieces, including
// single rows and columns longer than a piece.
TEST_F(NpyTest, LargeArraysAreReadInPiecesCorrectly) {
  const auto value = [](index_t i, index_t j) { return float((i * 7919 + j * 104729) % 1000003); };
  struct Case {
    index_t rows, cols;
  };
  for (const Case shape : {Case{1100, 1100}, Case{1, 1'100'000}, Case{1'100'000, 2}}) {
    SCOPED_TRACE(testing::Message() << shape.rows << "x" << shape.cols);
    DenseMatrix<float> m(shape.rows, shape.cols);
    for (index_t j = 0; j < shape.cols; ++j) {
      for (index_t i = 0; i < shape.rows; ++i) m(i, j) = value(i, j);
    }
    for (const bool fortran : {true, false}) {
      write_in_order<float>(path("big.npy"), m, fortran);
      expect_equal(dnmf::io::read_npy<double>(path("big.npy")), m);
      const index_t r0 = shape.rows / 3;
      expect_equal(dnmf::io::read_npy_rows<double>(path("big.npy"), r0, shape.rows),
                   slice(m, r0, shape.rows, 0, shape.cols));
      const index_t c0 = shape.cols / 2;
      expect_equal(dnmf::io::read_npy_columns<double>(path("big.npy"), c0, shape.cols),
                   slice(m, 0, shape.rows, c0, shape.cols));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Interoperability with numpy itself, where it is installed.

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
#ifdef DNMF_TEST_PYTHON
  // The build names its interpreter (make's build/venv): numpy must be there.
  const std::string python = DNMF_TEST_PYTHON;
  ASSERT_EQ(std::system(("'" + python + "' -c 'import numpy' >/dev/null 2>&1").c_str()), 0)
      << python << " cannot import numpy";
#else
  const std::string python = "python3";
  if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 with numpy is not available (configure with -DPython_EXECUTABLE=build/venv/bin/python)";
  }
#endif
  std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "a = np.arange(12, dtype=np.float64).reshape(3, 4) * 0.5\n"
      "np.save(d + '/c.npy', a)\n"
      "np.save(d + '/f.npy', np.asfortranarray(a.astype(np.float32)))\n"
      "np.save(d + '/v.npy', np.arange(5, dtype=np.int32))\n"
      "np.save(d + '/b.npy', a.astype('>f8'))\n";
  // And the other way round: numpy must load what the writer produces, in both orders.
  DenseMatrix<double> ours(3, 4);
  for (index_t i = 0; i < 3; ++i) {
    for (index_t j = 0; j < 4; ++j) ours(i, j) = 0.5 * double(i * 4 + j);
  }
  const std::vector<float> ours_c = row_major(sample<float>(2, 5));
  dnmf::io::write_npy<double>(path("ours_f.npy"), ours.view());
  dnmf::io::write_npy_row_major<float>(path("ours_c.npy"), ours_c.data(), 2, 5);
  script +=
      "f = np.load(d + '/ours_f.npy')\n"
      "assert f.dtype == np.float64 and f.flags.f_contiguous and (f == a).all(), f\n"
      "c = np.load(d + '/ours_c.npy')\n"
      "assert c.dtype == np.float32 and c.flags.c_contiguous and c.shape == (2, 5), c\n"
      "assert (c == np.add.outer(np.arange(2) * 100, np.arange(5)) + 0.25).all(), c\n";
  write_bytes(path("make.py"), script);
  ASSERT_EQ(std::system(("'" + python + "' '" + path("make.py") + "' '" + dir_.string() + "'").c_str()), 0);

  DenseMatrix<double> expected(3, 4);
  for (index_t i = 0; i < 3; ++i) {
    for (index_t j = 0; j < 4; ++j) expected(i, j) = 0.5 * double(i * 4 + j);
  }
  expect_equal(dnmf::io::read_npy<double>(path("c.npy")), expected);
  EXPECT_TRUE(dnmf::io::read_npy_header(path("f.npy")).fortran_order);
  expect_equal(dnmf::io::read_npy<double>(path("f.npy")), expected);
  expect_equal(dnmf::io::read_npy_columns<float>(path("c.npy"), 1, 3), slice(expected, 0, 3, 1, 3));
  EXPECT_EQ(dnmf::io::read_npy<double>(path("v.npy")).storage(), (dnmf::AlignedVector<double>{0, 1, 2, 3, 4}));
  EXPECT_THAT(error_message([&] { dnmf::io::read_npy<double>(path("b.npy")); }), HasSubstr("unsupported dtype '>f8'"));
}

}  // namespace
