// Tests for .npz input: archives packed here with libzip the way numpy.savez and scipy.sparse.save_npz write
// them (members stored and deflated; .npy images from the library's writer or built by hand for the integer
// and byte-string members), read back block by block and compared exactly with the source matrix; the choice
// of the array; and damaged archives, each error naming the file, the member and the problem.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/dnmf.hpp"
#include "io/block_read.hpp"
#include "io/npz.hpp"
#include "support/error_message.hpp"
#include "support/matrix_views.hpp"
#include "support/npz_archives.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"

namespace {

using dnmf::CsrMatrix;
using dnmf::DenseMatrix;
using dnmf::index_t;
using dnmf::dist::block_range;
using dnmf::dist::Range;
using dnmf::io::FileFormat;
using dnmf::test::compressed_members;
using dnmf::test::dense_of;
using dnmf::test::error_message;
using dnmf::test::file_bytes;
using dnmf::test::Members;
using dnmf::test::npy_image;
using dnmf::test::raw;
using dnmf::test::scipy_members;
using dnmf::test::slice;
using dnmf::test::vector_image;
using dnmf::test::write_bytes;
using dnmf::test::write_zip;
using testing::AllOf;
using testing::HasSubstr;
using testing::StartsWith;

class NpzTest : public dnmf::test::TempDirTest {
 protected:
  template <class T>
  dnmf::io::LocalBlock<T> read(const std::string& p, Range rows, Range cols) {
    return dnmf::io::read_block<T>(p, rows, cols, single_);
  }
  /// Every block of a 3 x 2 split of `p` equals the same block of `whole`.
  template <class T>
  void expect_blocks(const std::string& p, const DenseMatrix<T>& whole, bool sparse) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 2; ++j) {
        const Range rows = block_range(whole.rows(), 3, i), cols = block_range(whole.cols(), 2, j);
        const auto block = read<T>(p, rows, cols);
        ASSERT_EQ(block.sparse, sparse) << p;
        const DenseMatrix<T> got = sparse ? dense_of(block.csr) : block.dense;
        EXPECT_EQ(got.storage(), slice(whole, rows, cols).storage()) << p << " block " << i << "," << j;
      }
    }
  }
  dnmf::dist::SingleCommunicator single_;
};

template <class T>
class NpzTyped : public NpzTest {};
using Precisions = testing::Types<float, double>;
TYPED_TEST_SUITE(NpzTyped, Precisions);

// ---------------------------------------------------------------------------------------------
// Reading

TEST(NpzPaths, FormatsByName) {
  EXPECT_EQ(dnmf::io::format_of("A.npz"), FileFormat::npz);
  EXPECT_EQ(dnmf::io::format_of("dir/A.NPZ"), FileFormat::npz);
  EXPECT_EQ(dnmf::io::format_of("A.npz:counts"), FileFormat::npz);
  EXPECT_EQ(dnmf::io::format_of("A.npz:x.npy"), FileFormat::npz);  // a member's name, not the file's extension
  EXPECT_EQ(dnmf::io::format_of("run:1/A.npz"), FileFormat::npz);
  EXPECT_EQ(dnmf::io::format_of("A.h5ad"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("A.H5AD:/layers/counts"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_of("A.hdf5:/X"), FileFormat::hdf5);
  EXPECT_EQ(dnmf::io::format_name(FileFormat::npz), "npz");
  EXPECT_EQ(dnmf::io::split_npz_path("run:1/A.npz:B").file, "run:1/A.npz");
  EXPECT_EQ(dnmf::io::split_npz_path("run:1/A.npz:B").member, "B");
  EXPECT_EQ(error_message([] { dnmf::io::format_of("A.npzz"); }),
            "A.npzz: unknown input format (expected .npy, .npz, .mtx, .h5/.hdf5/.h5ad or .dcsr)");
}

TYPED_TEST(NpzTyped, ScipyCsrAndCscStoredAndDeflated) {
  using T = TypeParam;
  const DenseMatrix<T> whole = dnmf::test::random_dense<T>(17, 11, 4, 0.7);
  const index_t nnz = dnmf::test::to_csr(whole).nnz();
  for (const bool by_columns : {false, true}) {
    for (const bool deflate : {false, true}) {
      const std::string p =
          this->path(std::string(by_columns ? "csc" : "csr") + (deflate ? "_deflated" : "_stored") + ".npz");
      // scipy's defaults: int32 indices and indptr, values as the matrix holds them.
      write_zip(p, compressed_members<T, std::int32_t, std::int32_t>(whole, by_columns), deflate);
      const dnmf::io::MatrixShape shape = dnmf::io::read_shape(p);
      EXPECT_EQ(shape.rows, 17);
      EXPECT_EQ(shape.cols, 11);
      EXPECT_EQ(shape.stored, nnz);
      EXPECT_TRUE(shape.sparse);
      this->expect_blocks(p, whole, true);
    }
  }
}

TEST_F(NpzTest, ScipyIndexTypesAndConversions) {
  const DenseMatrix<double> whole = dnmf::test::random_dense<double>(9, 13, 5, 0.6);
  // int64 indices and indptr (scipy's choice for large matrices), float64 data read as float32.
  const std::string wide = path("wide.npz");
  write_zip(wide, compressed_members<double, std::int64_t, std::int64_t>(whole, true), true);
  DenseMatrix<float> as_float(9, 13);
  for (index_t j = 0; j < 13; ++j)
    for (index_t i = 0; i < 9; ++i) as_float(i, j) = static_cast<float>(whole(i, j));
  expect_blocks<float>(wide, as_float, true);
  // Integer counts as data: converted, as the .npy reader converts integer arrays.
  DenseMatrix<double> counts(9, 13);
  for (index_t j = 0; j < 13; ++j)
    for (index_t i = 0; i < 9; ++i) counts(i, j) = double((i * 5 + j * 3) % 7 == 0 ? 0 : (i + 2 * j) % 9);
  const std::string ints = path("counts.npz");
  write_zip(ints, compressed_members<std::int64_t, std::int32_t, std::int64_t>(counts, false), false);
  expect_blocks<double>(ints, counts, true);
}

TEST_F(NpzTest, ScipyUnsortedIndicesAndDuplicatesAreSortedAndSummed) {
  // 3 x 5 CSR: row 0 = {4: 1, 0: 2, 4: 3}, row 1 empty, row 2 = {2: 5, 1: 6}; and the same numbers as CSC
  // (column 0 = {row 2: 1, row 0: 2, row 2: 3}, ...) of its transpose's shape.
  const std::string p = path("A.npz");
  write_zip(
      p, scipy_members<double, std::int32_t, std::int32_t>("csr", 3, 5, {1, 2, 3, 5, 6}, {4, 0, 4, 2, 1}, {0, 3, 3, 5}),
      true);
  const auto block = read<double>(p, {0, 3}, {0, 5});
  EXPECT_EQ(block.csr.indptr(), (std::vector<index_t>{0, 2, 2, 4}));
  EXPECT_EQ(block.csr.indices(), (std::vector<dnmf::col_index_t>{0, 4, 1, 2}));
  EXPECT_EQ(block.csr.values(), (std::vector<double>{2, 4, 6, 5}));
  const std::string q = path("B.npz");
  write_zip(
      q, scipy_members<double, std::int32_t, std::int32_t>("csc", 5, 3, {1, 2, 3, 5, 6}, {4, 0, 4, 2, 1}, {0, 3, 3, 5}),
      false);
  const auto t = read<double>(q, {0, 5}, {0, 3});
  EXPECT_EQ(t.csr.indptr(), (std::vector<index_t>{0, 1, 2, 3, 3, 4}));
  EXPECT_EQ(t.csr.indices(), (std::vector<dnmf::col_index_t>{0, 2, 2, 0}));
  EXPECT_EQ(t.csr.values(), (std::vector<double>{2, 6, 5, 4}));
}

TYPED_TEST(NpzTyped, SavezArraysInBothOrders) {
  using T = TypeParam;
  const DenseMatrix<T> whole = dnmf::test::random_dense<T>(13, 8, 3, 0.3);
  // The library's writers make the members: Fortran order (write_npy) and C order (write_npy_row_major).
  dnmf::io::write_npy<T>(this->path("f.npy"), whole.view());
  const std::vector<T> rows = dnmf::test::row_major(whole);
  dnmf::io::write_npy_row_major<T>(this->path("c.npy"), rows.data(), 13, 8);
  for (const char* order : {"f", "c"}) {
    for (const bool deflate : {false, true}) {
      const std::string p = this->path(std::string(order) + (deflate ? "_z" : "_s") + ".npz");
      write_zip(p, {{"arr_0.npy", file_bytes(this->path(std::string(order) + ".npy"))}}, deflate);
      const dnmf::io::MatrixShape shape = dnmf::io::read_shape(p);
      EXPECT_EQ(shape.rows, 13);
      EXPECT_EQ(shape.cols, 8);
      EXPECT_EQ(shape.stored, 13 * 8);
      EXPECT_FALSE(shape.sparse);
      this->expect_blocks(p, whole, false);
      EXPECT_EQ(this->template read<T>(p + ":arr_0", {0, 13}, {0, 8}).dense.storage(), whole.storage());
    }
  }
}

TEST_F(NpzTest, IntegerArrayIsConvertedAsTheNpyReaderDoes) {
  DenseMatrix<double> counts(4, 3);
  std::vector<std::int64_t> c_order;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j) {
      counts(i, j) = double(i * 3 + j);
      c_order.push_back(i * 3 + j);
    }
  const std::string p = path("counts.npz");
  write_zip(p, {{"counts.npy", npy_image("<i8", "(4, 3)", raw(c_order))}}, true);
  EXPECT_EQ(read<double>(p, {0, 4}, {0, 3}).dense.storage(), counts.storage());
  write_bytes(path("counts.npy"), npy_image("<i8", "(4, 3)", raw(c_order)));
  EXPECT_EQ(dnmf::io::read_npy<double>(path("counts.npy")).storage(), counts.storage());
}

TEST_F(NpzTest, SeveralArraysMustBeNamed) {
  const DenseMatrix<double> a = dnmf::test::random_dense<double>(3, 4, 1),
                            b = dnmf::test::random_dense<double>(5, 2, 2);
  dnmf::io::write_npy<double>(path("a.npy"), a.view());
  dnmf::io::write_npy<double>(path("b.npy"), b.view());
  const std::string p = path("two.npz");
  write_zip(p, {{"A.npy", file_bytes(path("a.npy"))}, {"B.npy", file_bytes(path("b.npy"))}}, true);
  EXPECT_EQ(error_message([&] { (void)dnmf::io::read_shape(p); }),
            p + ": holds several arrays (A, B); name one as " + p + ":A");
  EXPECT_EQ(read<double>(p + ":B", {0, 5}, {0, 2}).dense.storage(), b.storage());
  EXPECT_EQ(read<double>(p + ":A.npy", {0, 3}, {0, 4}).dense.storage(), a.storage());
  EXPECT_EQ(dnmf::io::read_shape(p + ":B").rows, 5);
  EXPECT_EQ(error_message([&] { (void)dnmf::io::read_shape(p + ":C"); }), p + ": has no array 'C'; it holds A, B");
  const std::string empty = path("empty.npz");
  write_zip(empty, {{"notes.txt", "hello"}}, false);
  EXPECT_THAT(error_message([&] { (void)dnmf::io::read_shape(empty); }),
              StartsWith(empty + ": holds no arrays (no .npy members)"));
  // Two members of one name (Python's zipfile writes them; libzip does not, so the second member's name is
  // patched in the bytes): numpy reads the last, this reader read the first.
  const std::string twice = path("twice.npz");
  write_zip(twice, {{"A.npy", file_bytes(path("a.npy"))}, {"Z.npy", file_bytes(path("b.npy"))}}, false);
  std::string bytes = file_bytes(twice);
  for (std::size_t at = bytes.find("Z.npy"); at != std::string::npos; at = bytes.find("Z.npy", at)) bytes[at] = 'A';
  write_bytes(twice, bytes);
  EXPECT_THAT(error_message([&] { (void)dnmf::io::read_shape(twice + ":A"); }),
              StartsWith(twice + ": holds more than one member named 'A.npy'"));
  // Unnamed: the same refusal (it said "holds several arrays (A, A); name one as twice.npz:A", which then failed).
  EXPECT_THAT(error_message([&] { (void)dnmf::io::read_shape(twice); }),
              StartsWith(twice + ": holds more than one member named 'A.npy'"));
}

TEST_F(NpzTest, WholeMatrixConvertAndFactorThroughThePublicCalls) {
  const DenseMatrix<double> a = dnmf::test::noisy_rank4(30, 20, 11, 0.3);
  const CsrMatrix<double> s = dnmf::test::to_csr(a);
  const std::string sparse = path("S.npz"), dense = path("D.npz"), npy = path("D.npy");
  write_zip(sparse, compressed_members<double, std::int32_t, std::int32_t>(a, true), true);
  dnmf::io::write_npy<double>(npy, a.view());
  write_zip(dense, {{"X.npy", file_bytes(npy)}}, true);

  const dnmf::io::LoadedMatrix<double> loaded = dnmf::io::load_matrix<double>(sparse);
  ASSERT_TRUE(loaded.sparse);
  EXPECT_EQ(dense_of(loaded.csr).storage(), a.storage());
  EXPECT_EQ(dnmf::inspect(sparse).format, FileFormat::npz);
  EXPECT_EQ(dnmf::inspect(dense).stats.nonzeros, s.nnz());
  const dnmf::io::MatrixShape converted = dnmf::io::convert_matrix<double>(sparse, path("S.dcsr"));
  EXPECT_EQ(converted.stored, s.nnz());
  EXPECT_EQ(dense_of(dnmf::io::read_dcsr<double>(path("S.dcsr"))).storage(), a.storage());

  // Source::file: the same factors as from the .npy file (dense) and from the matrix in memory (CSR).
  dnmf::FactorOptions o;
  o.rank = 4;
  o.max_iterations = 25;
  o.tol = 0;
  const auto from_npy = dnmf::factor<double>(dnmf::Source::file(npy), o);
  const auto from_npz = dnmf::factor<double>(dnmf::Source::file(dense), o);
  EXPECT_EQ(from_npz.format, "npz");
  EXPECT_EQ(from_npz.result.W.storage(), from_npy.result.W.storage());
  EXPECT_EQ(from_npz.result.H.storage(), from_npy.result.H.storage());
  // CSR products on several threads sum in a varying order, so sparse runs agree to rounding, not bit for bit.
  const auto from_memory = dnmf::factor<double>(dnmf::Source::csr<double>(s.view()), o);
  const auto from_sparse = dnmf::factor<double>(dnmf::Source::file(sparse), o);
  EXPECT_EQ(from_sparse.nnz, s.nnz());
  EXPECT_LE(dnmf::test::max_relative_difference(from_sparse.result.W, from_memory.result.W), 1e-12);
  EXPECT_LE(dnmf::test::max_relative_difference(from_sparse.result.H, from_memory.result.H), 1e-12);
  // Under a memory budget an .npz is held whole, never streamed: a budget that fits runs resident.
  dnmf::Context budget;
  budget.memory_budget = dnmf::parse_bytes("1G");
  const auto budgeted = dnmf::factor<double>(dnmf::Source::file(sparse), o, budget);
  EXPECT_FALSE(budgeted.memory.streamed);
  EXPECT_LE(dnmf::test::max_relative_difference(budgeted.result.W, from_sparse.result.W), 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Damaged and unsuitable archives

class NpzDamage : public NpzTest {
 protected:
  void SetUp() override {
    NpzTest::SetUp();
    // 3 x 2: row 0 = {0: 1}, row 1 = {1: 2}, row 2 empty.
    good_ = scipy_members<double, std::int32_t, std::int32_t>("csr", 3, 2, {1, 2}, {0, 1}, {0, 1, 2, 2});
  }
  /// good_ with member `name` replaced by `bytes` (or removed when `bytes` is empty), written to `file`.
  std::string variant(const std::string& file, const std::string& name, const std::string& bytes,
                      bool deflate = false) {
    Members members;
    for (const auto& member : good_) {
      if (member.first != name) {
        members.push_back(member);
      } else if (!bytes.empty()) {
        members.emplace_back(name, bytes);
      }
    }
    const std::string p = path(file);
    write_zip(p, members, deflate);
    return p;
  }
  std::string shape_error(const std::string& p) {
    return error_message([&] { (void)dnmf::io::read_shape(p); });
  }
  std::string read_error(const std::string& p) {
    return error_message([&] { (void)read<double>(p, {0, 3}, {0, 2}); });
  }
  Members good_;
};

TEST_F(NpzDamage, NotAZipOrCutShort) {
  const std::string text = path("text.npz");
  write_bytes(text, "not a zip archive at all");
  EXPECT_THAT(shape_error(text), StartsWith(text + ": not a zip archive, or one cut short"));
  EXPECT_THAT(shape_error(path("missing.npz")), StartsWith(path("missing.npz") + ": cannot open"));
  const std::string good = variant("good.npz", "", "", true);
  const std::string bytes = file_bytes(good);
  const std::string cut = path("cut.npz");
  write_bytes(cut, bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(shape_error(cut), StartsWith(cut + ": not a zip archive, or one cut short"));
  // The read throws dnmf::CollectiveError when every process (here: the only one) fails alike.
  EXPECT_THROW((void)read<double>(cut, {0, 3}, {0, 2}), dnmf::CollectiveError);
  // A .npz given the .npy name is recognised by its first bytes.
  write_bytes(path("zip.npy"), bytes);
  EXPECT_THAT(error_message([&] { (void)dnmf::io::read_npy_header(path("zip.npy")); }),
              HasSubstr("it is a zip archive, as numpy's .npz files are"));
}

/// Where member `name`'s data starts in the archive `bytes`: after its local header (30 bytes, the name and an
/// extra field whose lengths are at offsets 26 and 28).
std::size_t member_data_offset(const std::string& bytes, const std::string& name) {
  const std::string signature("PK\x03\x04", 4);
  for (std::size_t at = bytes.find(signature); at != std::string::npos; at = bytes.find(signature, at + 1)) {
    const auto u16 = [&](std::size_t k) {
      return std::size_t(static_cast<unsigned char>(bytes[at + k])) |
             std::size_t(static_cast<unsigned char>(bytes[at + k + 1])) << 8;
    };
    if (bytes.compare(at + 30, u16(26), name) == 0) return at + 30 + u16(26) + u16(28);
  }
  ADD_FAILURE() << "no local header for " << name;
  return 0;
}

TEST_F(NpzDamage, CorruptMemberData) {
  // A stored member's byte changed after the archive was written: the checksum no longer matches.
  const std::string stored = variant("stored.npz", "", "", false);
  std::string bytes = file_bytes(stored);
  const std::size_t data = member_data_offset(bytes, "data.npy");
  ASSERT_EQ(bytes.compare(data, 6, "\x93NUMPY"), 0);
  bytes[data + 64 + 3] ^= 0x40;  // inside the first value (numpy pads the header to 64 bytes)
  const std::string flipped = path("flipped.npz");
  write_bytes(flipped, bytes);
  EXPECT_THAT(read_error(flipped), AllOf(StartsWith(flipped + ":data.npy: cannot uncompress"), HasSubstr("CRC")));
  // A deflated member's compressed bytes overwritten: the stream is broken or the checksum fails.
  const std::string deflated = variant("deflated.npz", "", "", true);
  bytes = file_bytes(deflated);
  const std::size_t compressed = member_data_offset(bytes, "data.npy");
  for (std::size_t k = compressed; k < compressed + 8; ++k) bytes[k] = '\xff';
  const std::string broken = path("broken.npz");
  write_bytes(broken, bytes);
  EXPECT_THAT(read_error(broken), StartsWith(broken + ":data.npy: "));
}

TEST_F(NpzDamage, MissingOrMisshapenMembers) {
  EXPECT_EQ(shape_error(variant("a.npz", "indptr.npy", "")),
            path("a.npz") +
                ": has no member 'indptr.npy'; a scipy.sparse.save_npz archive holds format, shape, data, indices "
                "and indptr (this one holds indices, format, shape, data)");
  EXPECT_EQ(shape_error(variant("b.npz", "indptr.npy", vector_image<std::int32_t>({0, 1, 2}))),
            path("b.npz") + ": 'indptr.npy' has 3 entries; the shape (3, 2) of a CSR matrix needs 4");
  EXPECT_EQ(shape_error(variant("c.npz", "indices.npy", vector_image<std::int32_t>({0}))),
            path("c.npz") + ": 'indices.npy' has 1 entries but 'data.npy' has 2");
  EXPECT_EQ(shape_error(variant("d.npz", "shape.npy", vector_image<std::int64_t>({3, 2, 1}))),
            path("d.npz") + ":shape.npy: is (3, 2, 1); expected two non-negative integers (rows, columns)");
  EXPECT_EQ(
      shape_error(variant("e.npz", "format.npy", npy_image("|S3", "()", "coo"))),
      path("e.npz") + ": holds a scipy.sparse 'coo' matrix; dnmf reads CSR and CSC (save matrix.tocsr() instead)");
  EXPECT_THAT(shape_error(variant("f.npz", "format.npy", npy_image("<i8", "()", raw<std::int64_t>({1})))),
              StartsWith(path("f.npz") + ":format.npy: expected a 0-D byte string such as b'csr'"));
  EXPECT_EQ(shape_error(variant("g.npz", "indices.npy", vector_image<double>({0, 1}))),
            path("g.npz") + ":indices.npy: holds dtype '<f8'; expected integers (int32 or int64)");
  EXPECT_THAT(shape_error(variant("h.npz", "data.npy", npy_image("<c16", "(2,)", std::string(32, '\0')))),
              StartsWith(path("h.npz") + ":data.npy: unsupported dtype '<c16' (complex values;"));
  EXPECT_THAT(shape_error(variant("i.npz", "data.npy", npy_image("<f8", "(2,)", raw<double>({1})))),
              StartsWith(path("i.npz") + ":data.npy: truncated: header says 2x1 f8 = 16 bytes of data"));
  EXPECT_EQ(shape_error(variant("j.npz", "indptr.npy", npy_image("<i4", "(2, 2)", raw<std::int32_t>({0, 1, 2, 2})))),
            path("j.npz") + ":indptr.npy: is a 2-D array; expected a 1-D array");
  // Older scipy wrote the format as a unicode string.
  const std::string unicode =
      variant("k.npz", "format.npy", npy_image("<U3", "()", raw<std::int32_t>({'c', 's', 'r'})));
  EXPECT_EQ(read<double>(unicode, {0, 3}, {0, 2}).csr.nnz(), 2);
  // A lone array of three dimensions.
  const std::string cube = path("cube.npz");
  write_zip(cube, {{"arr_0.npy", npy_image("<f8", "(1, 2, 1)", raw<double>({1, 2}))}}, false);
  EXPECT_EQ(shape_error(cube), cube + ":arr_0: 3-D array of shape (1, 2, 1); only 1-D and 2-D arrays are supported");
}

TEST_F(NpzDamage, BadIndicesAndValues) {
  EXPECT_EQ(read_error(variant("a.npz", "indptr.npy", vector_image<std::int32_t>({0, 2, 1, 2}))),
            path("a.npz") + ": 'indptr' decreases at row 1 (from 2 to 1)");
  EXPECT_EQ(read_error(variant("b.npz", "indptr.npy", vector_image<std::int32_t>({0, 1, 1, 1}))),
            path("b.npz") + ": 'indptr' runs from 0 to 1; expected 0 to 2 (the length of 'data')");
  EXPECT_EQ(read_error(variant("c.npz", "indices.npy", vector_image<std::int32_t>({0, 7}))),
            path("c.npz") + ": column index 7 of row 1 (entry 1) is out of range 0..1");
  EXPECT_EQ(read_error(variant("d.npz", "indices.npy", vector_image<std::int32_t>({-1, 1}))),
            path("d.npz") + ": column index -1 of row 0 (entry 0) is out of range 0..1");
  // An unsigned 64-bit index beyond int64's range is out of range, not a negative number the file does not hold.
  const std::vector<std::uint64_t> huge{0, (std::uint64_t{1} << 63) + 1};
  EXPECT_EQ(read_error(variant("h.npz", "indices.npy", npy_image("<u8", "(2,)", raw(huge)))),
            path("h.npz") + ": column index 9223372036854775807 of row 1 (entry 1) is out of range 0..1");
  EXPECT_EQ(read_error(variant("e.npz", "data.npy", vector_image<double>({1, -2}))),
            path("e.npz") + ": entry at row 1, column 1 (0-based) is -2; input must be non-negative");
  const std::string nan = variant("f.npz", "data.npy", vector_image<double>({std::nan(""), 2}));
  EXPECT_EQ(read_error(nan), path("f.npz") +
                                 ": entry at row 0, column 0 (0-based) is NaN; input must be finite and non-negative "
                                 "(NaN entries of A can be fitted as missing values: "
                                 "--missing nan, MissingValues::nan_missing in C++, or dnmf.NMF().fit(X, "
                                 "missing='nan'))");
  EXPECT_NO_THROW((void)read<double>(nan, {1, 3}, {0, 2}));  // the bad entry is in another process's rows
  // CSC names its lines as columns.
  good_ = scipy_members<double, std::int32_t, std::int32_t>("csc", 2, 3, {1, 2}, {0, 5}, {0, 1, 2, 2});
  EXPECT_EQ(error_message([&] {
              (void)read<double>(variant("g.npz", "", ""), {0, 2}, {0, 3});
            }),
            path("g.npz") + ": row index 5 of column 1 (entry 1) is out of range 0..1");
  // Dense: named by global row and column, in either order on disk.
  DenseMatrix<double> a = dnmf::test::random_dense<double>(6, 5, 9);
  a(4, 2) = -0.5;
  dnmf::io::write_npy<double>(path("a.npy"), a.view());
  const std::string dense = path("dense.npz");
  write_zip(dense, {{"M.npy", file_bytes(path("a.npy"))}}, true);
  EXPECT_EQ(error_message([&] {
              (void)read<double>(dense, {3, 6}, {1, 4});
            }),
            dense + ":M: entry at row 4, column 2 (0-based) is -0.5; input must be non-negative");
  EXPECT_EQ(error_message([&] {
              (void)read<double>(dense, {0, 7}, {0, 5});
            }),
            dense + ":M: row range [0, 7) is out of bounds for a 6x5 matrix");
}

// A masked run reads A and its mask unchecked and checks only the observed entries (NaN may mean missing):
// the values come back as stored, dense and sparse, and the whole-file read (dnmf info's) takes them too.
TEST_F(NpzDamage, UncheckedReadsKeepBadValuesAsStored) {
  const std::string sparse = variant("u.npz", "data.npy", vector_image<double>({std::nan(""), -2}));
  const dnmf::io::LocalBlock<double> s = dnmf::io::read_npz_block<double>(sparse, {0, 3}, {0, 2}, false);
  ASSERT_TRUE(s.sparse);
  ASSERT_EQ(s.csr.nnz(), 2);
  EXPECT_TRUE(std::isnan(s.csr.values()[0]));
  EXPECT_EQ(s.csr.values()[1], -2.0);
  EXPECT_EQ(dnmf::io::load_matrix<double>(sparse).csr.values()[1], -2.0);
  EXPECT_EQ(dnmf::inspect(sparse).stats.nan, 1);
  DenseMatrix<double> a = dnmf::test::random_dense<double>(6, 5, 9);
  a(4, 2) = -0.5;
  a(1, 3) = std::nan("");
  dnmf::io::write_npy<double>(path("a.npy"), a.view());
  const std::string dense = path("dense.npz");
  write_zip(dense, {{"M.npy", file_bytes(path("a.npy"))}}, true);
  const dnmf::io::LocalBlock<double> d = dnmf::io::read_npz_block<double>(dense, {1, 6}, {2, 4}, false);
  EXPECT_EQ(d.dense(3, 0), -0.5);
  EXPECT_TRUE(std::isnan(d.dense(0, 1)));
  const dnmf::EntryStats stats = dnmf::inspect(dense).stats;
  EXPECT_EQ(stats.negative, 1);
  EXPECT_EQ(stats.nan, 1);
}

}  // namespace
