// Tests for HDF5 matrices on one process: the writers' files read back block by block, files made here with
// the HDF5 C API the way other tools write them (integer and compressed datasets, scipy-style CSR groups with
// unsorted indices and duplicates, fixed-length string attributes), the choice of the default object, and every
// rejected input, each error naming the file, the object and the place.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/inspect.hpp"
#include "io/block_read.hpp"
#include "io/hdf5_io.hpp"
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
using testing::Not;
using testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// Files made with the HDF5 C API, independently of the library's writers.

/// An open HDF5 file for writing test inputs; closed (and checked) at the end of scope.
class RawFile {
 public:
  explicit RawFile(const std::string& path) : id_(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) {
    EXPECT_GE(id_, 0) << path;
  }
  ~RawFile() {
    for (const hid_t g : groups_) H5Gclose(g);
    EXPECT_GE(H5Fclose(id_), 0);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  [[nodiscard]] hid_t id() const { return id_; }

  /// A dataset of `dims` with file type `type`, filled from `data` (memory type `memory`), optionally
  /// chunked and deflated.
  void dataset(hid_t where, const std::string& name, std::vector<hsize_t> dims, hid_t type, hid_t memory,
               const void* data, bool compressed = false) {
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (compressed) {
      std::vector<hsize_t> chunk(dims.size());
      for (std::size_t d = 0; d < dims.size(); ++d) chunk[d] = std::max<hsize_t>(1, (dims[d] + 2) / 3);
      H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
      H5Pset_deflate(dcpl, 4);
    }
    const hid_t set = H5Dcreate2(where, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    EXPECT_GE(set, 0) << name;
    EXPECT_GE(H5Dwrite(set, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
    H5Dclose(set);
    H5Pclose(dcpl);
    H5Sclose(space);
  }

  hid_t group(const std::string& name) {
    const hid_t g = H5Gcreate2(id_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    groups_.push_back(g);
    return g;
  }

  /// A scalar fixed-length (not variable-length) string attribute, as some writers store them.
  static void fixed_string_attribute(hid_t object, const char* name, const std::string& value) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size() + 3);  // null padding after the text
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    std::string padded = value + std::string(3, '\0');
    H5Awrite(attribute, type, padded.data());
    H5Aclose(attribute);
    H5Sclose(space);
    H5Tclose(type);
  }

  static void integer_attribute(hid_t object, const char* name, const std::vector<std::int64_t>& values) {
    const hsize_t count = values.size();
    const hid_t space = H5Screate_simple(1, &count, nullptr);
    const hid_t attribute = H5Acreate2(object, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attribute, H5T_NATIVE_INT64, values.data());
    H5Aclose(attribute);
    H5Sclose(space);
  }

  /// A CSR group as scipy/AnnData lay it out; `encoding` empty: no encoding-type attribute.
  void csr_group(const std::string& name, const std::vector<double>& data, const std::vector<std::int64_t>& indices,
                 const std::vector<std::int32_t>& indptr, const std::vector<std::int64_t>& shape,
                 const std::string& encoding = "csr_matrix") {
    const hid_t g = group(name);
    if (!encoding.empty()) fixed_string_attribute(g, "encoding-type", encoding);
    if (!shape.empty()) integer_attribute(g, "shape", shape);
    dataset(g, "data", {data.size()}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data.data());
    dataset(g, "indices", {indices.size()}, H5T_STD_I64LE, H5T_NATIVE_INT64, indices.data());
    dataset(g, "indptr", {indptr.size()}, H5T_STD_I32LE, H5T_NATIVE_INT32, indptr.data());
  }

 private:
  hid_t id_;
  std::vector<hid_t> groups_;
};

class Hdf5Test : public dnmf::test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    if (!dnmf::io::hdf5_built()) GTEST_SKIP() << "HDF5 support not built";
  }
  template <class T>
  dnmf::io::LocalBlock<T> read(const std::string& p, Range rows, Range cols) {
    return dnmf::io::read_hdf5_block<T>(p, rows, cols, single_);
  }
  dnmf::dist::SingleCommunicator single_;
};

template <class T>
class Hdf5Typed : public Hdf5Test {};
using Precisions = testing::Types<float, double>;
TYPED_TEST_SUITE(Hdf5Typed, Precisions);

// ---------------------------------------------------------------------------------------------
// Round trips through the writers

TYPED_TEST(Hdf5Typed, DenseWriterThenEveryBlockOfA3x2Split) {
  using T = TypeParam;
  const DenseMatrix<T> whole = dnmf::test::random_dense<T>(13, 8, 3, 0.3);
  const std::string p = this->path("A.h5");
  dnmf::io::write_h5_dense<T>(p, "/X", whole.view());
  const dnmf::io::MatrixShape shape = dnmf::io::hdf5_shape(p);
  EXPECT_EQ(shape.rows, 13);
  EXPECT_EQ(shape.cols, 8);
  EXPECT_EQ(shape.stored, 13 * 8);
  EXPECT_FALSE(shape.sparse);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Range rows = block_range(13, 3, i), cols = block_range(8, 2, j);
      const auto block = this->template read<T>(p, rows, cols);
      EXPECT_FALSE(block.sparse);
      EXPECT_EQ(block.dense.storage(), slice(whole, rows, cols).storage()) << i << "," << j;
    }
  }
  // The same through read_block's dispatch, with the object named.
  const auto block = dnmf::io::read_block<T>(p + ":/X", {2, 9}, {0, 8}, this->single_);
  EXPECT_EQ(block.dense.storage(), slice(whole, {2, 9}, {0, 8}).storage());
}

TYPED_TEST(Hdf5Typed, CsrWriterThenEveryBlockOfA3x2Split) {
  using T = TypeParam;
  const DenseMatrix<T> whole = dnmf::test::random_dense<T>(17, 11, 4, 0.8);
  const CsrMatrix<T> csr = dnmf::test::to_csr(whole);
  const std::string p = this->path("A.h5");
  dnmf::io::write_h5_csr<T>(p, "X", csr.view());
  const dnmf::io::MatrixShape shape = dnmf::io::hdf5_shape(p);
  EXPECT_EQ(shape.rows, 17);
  EXPECT_EQ(shape.cols, 11);
  EXPECT_EQ(shape.stored, csr.nnz());
  EXPECT_TRUE(shape.sparse);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Range rows = block_range(17, 3, i), cols = block_range(11, 2, j);
      const auto block = this->template read<T>(p, rows, cols);
      ASSERT_TRUE(block.sparse);
      EXPECT_EQ(dense_of(block.csr).storage(), slice(whole, rows, cols).storage()) << i << "," << j;
    }
  }
  // A row range of a larger CSR view (indptr not starting at 0) is written as its own matrix.
  const std::string q = this->path("B.h5");
  dnmf::io::write_h5_csr<T>(q, "/g/sub", csr.view().row_range(5, 12));
  const auto part = this->template read<T>(q + ":/g/sub", {0, 7}, {0, 11});
  EXPECT_EQ(dense_of(part.csr).storage(), slice(whole, {5, 12}, {0, 11}).storage());
}

// Float64 data read in float32: a value float32 cannot hold is reported as the other readers report it. HDF5's own
// conversion (H5Dread to float) turned 1e39 into inf, 1e-50 into 0 and -1e-300 into -0.0, which was accepted.
TEST_F(Hdf5Test, Float64ValuesFloat32CannotHoldAreNamedInDenseAndCsr) {
  for (const bool sparse : {false, true}) {
    for (const auto& [value, words] :
         {std::pair{1e39, "too large for single precision"}, std::pair{1e-50, "too small for single precision"},
          std::pair{-1e-300, "is negative (beyond float32's range"}}) {
      DenseMatrix<double> whole = dnmf::test::random_dense<double>(9, 7, 8, 0.0);
      whole(5, 3) = value;
      const std::string p = path("N.h5");
      if (sparse) {
        dnmf::io::write_h5_csr<double>(p, "X", dnmf::test::to_csr(whole).view());
      } else {
        dnmf::io::write_h5_dense<double>(p, "X", whole.view());
      }
      const std::string message = error_message([&] { (void)read<float>(p, {0, 9}, {0, 7}); });
      EXPECT_THAT(message, HasSubstr("entry at row 5, column 3 (0-based) is ")) << value << " sparse " << sparse;
      EXPECT_THAT(message, HasSubstr(words)) << value << " sparse " << sparse;
      // Read in float64 the same file is taken as it is, except the negative value.
      if (value > 0) {
        EXPECT_EQ(read<double>(p, {0, 9}, {0, 7}).sparse, sparse);
      }
    }
    // Values float32 holds are read as before.
    const DenseMatrix<double> good = dnmf::test::random_dense<double>(9, 7, 9, 0.0);
    const std::string p = path("G.h5");
    if (sparse) {
      dnmf::io::write_h5_csr<double>(p, "X", dnmf::test::to_csr(good).view());
    } else {
      dnmf::io::write_h5_dense<double>(p, "X", good.view());
    }
    const auto block = read<float>(p, {0, 9}, {0, 7});
    const DenseMatrix<float> got = sparse ? dense_of(block.csr) : block.dense;
    for (index_t j = 0; j < 7; ++j)
      for (index_t i = 0; i < 9; ++i) EXPECT_EQ(got(i, j), static_cast<float>(good(i, j)));
  }
}

TEST_F(Hdf5Test, WritersReplaceOrAppend) {
  const DenseMatrix<double> a = dnmf::test::random_dense<double>(3, 2, 1),
                            b = dnmf::test::random_dense<double>(4, 5, 2);
  const std::string p = path("A.h5");
  dnmf::io::write_h5_dense<double>(p, "X", a.view());
  dnmf::io::write_h5_dense<double>(p, "X", b.view());  // replaces the file
  EXPECT_EQ(dnmf::io::hdf5_shape(p).rows, 4);
  dnmf::io::write_h5_dense<double>(p, "/extra/Y", a.view(), /*append=*/true);
  EXPECT_EQ(dnmf::io::hdf5_shape(p + ":extra/Y").cols, 2);
  EXPECT_THAT(error_message([&] { dnmf::io::write_h5_dense<double>(p, "X", a.view(), true); }),
              HasSubstr(p + ": already holds an object '/X'"));
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << "left behind: " << entry.path();
  }
  EXPECT_THAT(error_message([&] { dnmf::io::write_h5_dense<double>(path("no/such/dir/A.h5"), "X", a.view()); }),
              StartsWith(path("no/such/dir/A.h5") + ": cannot create"));
  // A name of no object is the caller's mistake, said as such (it was "already holds an object '/'" of a file that
  // was not there), and no file is made.
  for (const std::string name : {"", "/", "//"}) {
    const std::string fresh = path("fresh.h5");
    EXPECT_THROW(dnmf::io::write_h5_dense<double>(fresh, name, a.view()), dnmf::UsageError) << name;
    EXPECT_THAT(error_message([&] { dnmf::io::write_h5_dense<double>(fresh, name, a.view()); }),
                HasSubstr(fresh + ": the object name '" + name + "' names the root group"));
    const CsrMatrix<double> s = dnmf::test::to_csr(a);
    EXPECT_THROW(dnmf::io::write_h5_csr<double>(fresh, name, s.view()), dnmf::UsageError) << name;
    EXPECT_FALSE(std::filesystem::exists(fresh)) << name;
  }
}

TYPED_TEST(Hdf5Typed, FactorWriterOnOneProcess) {
  using T = TypeParam;
  const index_t m = 7, n = 5, k = 3;
  dnmf::dist::Grid grid(this->single_, {1, 1});
  const dnmf::dist::Layout layout = dnmf::dist::make_layout(grid, m, n);
  DenseMatrix<T> wt(k, m), h(k, n);
  for (index_t i = 0; i < m; ++i)
    for (index_t l = 0; l < k; ++l) wt(l, i) = T(1 + i + 0.25 * l);
  for (index_t j = 0; j < n; ++j)
    for (index_t l = 0; l < k; ++l) h(l, j) = T(2 + 0.5 * j + l);
  const std::string p = this->path("F.h5");
  dnmf::io::write_factors_h5<T>(p, grid, layout, wt.view(), h.view());
  const auto w_read = this->template read<T>(p + ":/W", {0, m}, {0, k});
  const auto h_read = this->template read<T>(p + ":/H", {0, k}, {0, n});
  for (index_t i = 0; i < m; ++i)
    for (index_t l = 0; l < k; ++l) EXPECT_EQ(w_read.dense(i, l), wt(l, i));
  EXPECT_EQ(h_read.dense.storage(), h.storage());
  EXPECT_FALSE(std::filesystem::exists(p + ".tmp." + std::to_string(::getpid())));
}

// ---------------------------------------------------------------------------------------------
// Files as other tools write them

TEST_F(Hdf5Test, IntegerAndCompressedDatasets) {
  const DenseMatrix<double> whole = dnmf::test::random_dense<double>(9, 6, 7, 0.2);
  DenseMatrix<double> counts(9, 6);
  for (index_t j = 0; j < 6; ++j)
    for (index_t i = 0; i < 9; ++i) counts(i, j) = double((i * 7 + j * 3) % 11);
  const std::string p = path("A.h5");
  {
    RawFile f(p);
    const std::vector<std::int32_t> ints = dnmf::test::row_major_as<std::int32_t>(counts);
    f.dataset(f.id(), "counts", {9, 6}, H5T_STD_I32LE, H5T_NATIVE_INT32, ints.data());
    const std::vector<double> values = dnmf::test::row_major_as<double>(whole);
    f.dataset(f.id(), "zipped", {9, 6}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data(),
              H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0);
  }
  DenseMatrix<float> counts_f(9, 6);
  for (index_t j = 0; j < 6; ++j)
    for (index_t i = 0; i < 9; ++i) counts_f(i, j) = float(counts(i, j));
  EXPECT_EQ(read<float>(p + ":counts", {2, 8}, {1, 6}).dense.storage(), slice(counts_f, {2, 8}, {1, 6}).storage());
  EXPECT_EQ(read<double>(p + ":/zipped", {4, 9}, {0, 3}).dense.storage(), slice(whole, {4, 9}, {0, 3}).storage());
}

// A filter this test registers under LZF's id to write chunks with it, and then removes, so that the library
// meets data compressed with a filter it cannot decode (h5py's default compression='lzf' on a machine without
// h5py's plugin). The filter itself leaves the bytes as they are.
std::size_t pass_through(unsigned /*flags*/, std::size_t /*cd_nelmts*/, const unsigned* /*cd_values*/,
                         std::size_t nbytes, std::size_t* /*buf_size*/, void** /*buf*/) {
  return nbytes;
}

/// `whole` (9 x 6) as dataset /X of a new file at `path`, in 3 x 3 chunks passed through `filter` (registered).
void write_filtered(const std::string& path, const DenseMatrix<double>& whole, H5Z_filter_t filter, unsigned flags) {
  RawFile f(path);
  const hsize_t dims[2] = {9, 6}, chunk[2] = {3, 3};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk);
  H5Pset_filter(dcpl, filter, flags, 0, nullptr);
  const hid_t set = H5Dcreate2(f.id(), "X", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  const std::vector<double> values = dnmf::test::row_major_as<double>(whole);
  EXPECT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  H5Dclose(set);
  H5Pclose(dcpl);
  H5Sclose(space);
}

TEST_F(Hdf5Test, DataCompressedWithAnUnavailableFilterIsNamed) {
  constexpr H5Z_filter_t kLzf = 32000;
  ASSERT_LE(H5Zfilter_avail(kLzf), 0) << "this HDF5 build decodes LZF itself: nothing to test";
  const H5Z_class2_t filter = {H5Z_CLASS_T_VERS, kLzf, 1, 1, "lzf", nullptr, nullptr, pass_through};
  ASSERT_GE(H5Zregister(&filter), 0);
  const DenseMatrix<double> whole = dnmf::test::random_dense<double>(9, 6, 3, 0.2);
  const std::string p = path("lzf.h5");
  write_filtered(p, whole, kLzf, H5Z_FLAG_OPTIONAL);  // as h5py sets it
  // While the filter is there the file reads as written.
  EXPECT_EQ(read<double>(p + ":X", {0, 9}, {0, 6}).dense.storage(), whole.storage());
  ASSERT_GE(H5Zunregister(kLzf), 0);
  const std::string message = error_message([&] { (void)read<double>(p + ":X", {0, 9}, {0, 6}); });
  EXPECT_THAT(message, HasSubstr("lzf.h5:/X"));
  EXPECT_THAT(message, HasSubstr("filter 'lzf' (id 32000)"));
  EXPECT_THAT(message, HasSubstr("compression='gzip'"));
  try {
    (void)read<double>(p + ":X", {0, 9}, {0, 6});
  } catch (const dnmf::Error& e) {
    EXPECT_EQ(e.kind(), dnmf::ErrorKind::data);  // bad input data: exit 3, not an internal failure
  }
}

// A filter that writes its chunks as they are and fails to decode them: what a corrupt compressed chunk does
// (inflate() fails). The read failed with exit 1 and a message without HDF5's reason, which a check of the
// filters had cleared from HDF5's error stack.
std::size_t fails_to_decode(unsigned flags, std::size_t /*cd_nelmts*/, const unsigned* /*cd_values*/,
                            std::size_t nbytes, std::size_t* /*buf_size*/, void** /*buf*/) {
  return (flags & H5Z_FLAG_REVERSE) != 0 ? 0 : nbytes;
}

TEST_F(Hdf5Test, DataThatCannotBeDecodedIsBadInputWithHdf5sReason) {
  constexpr H5Z_filter_t kBroken = 32099;
  const H5Z_class2_t filter = {H5Z_CLASS_T_VERS, kBroken, 1, 1, "broken", nullptr, nullptr, fails_to_decode};
  ASSERT_GE(H5Zregister(&filter), 0);
  const DenseMatrix<double> whole = dnmf::test::random_dense<double>(9, 6, 3, 0.2);
  const std::string p = path("broken.h5");
  write_filtered(p, whole, kBroken, H5Z_FLAG_MANDATORY);
  std::string message = "no error";
  dnmf::ErrorKind kind = dnmf::ErrorKind::general;
  try {
    (void)read<double>(p + ":X", {0, 9}, {0, 6});
  } catch (const dnmf::Error& e) {
    message = e.what();
    kind = e.kind();
  }
  H5Zunregister(kBroken);
  EXPECT_EQ(kind, dnmf::ErrorKind::data) << message;  // bad input data: exit 3
  EXPECT_THAT(message, HasSubstr("broken.h5:/X: cannot read"));
  EXPECT_THAT(message, HasSubstr("(the file's data are corrupt?)"));
  EXPECT_THAT(message, Not(HasSubstr("cannot read rows [0, 9) x columns [0, 6) (the file")));  // a reason in between
}

TEST_F(Hdf5Test, ScipyStyleCsrWithUnsortedIndicesAndDuplicates) {
  // 3 x 5: row 0 = {4: 1, 0: 2, 4: 3} (unsorted, a duplicate), row 1 empty, row 2 = {2: 5, 1: 6}.
  const std::string p = path("A.h5");
  {
    RawFile f(p);
    f.csr_group("X", {1, 2, 3, 5, 6}, {4, 0, 4, 2, 1}, {0, 3, 3, 5}, {3, 5});
  }
  const auto block = read<double>(p, {0, 3}, {0, 5});
  EXPECT_EQ(block.csr.indptr(), (std::vector<index_t>{0, 2, 2, 4}));
  EXPECT_EQ(block.csr.indices(), (std::vector<dnmf::col_index_t>{0, 4, 1, 2}));
  EXPECT_EQ(block.csr.values(), (std::vector<double>{2, 4, 6, 5}));
  const auto right = read<double>(p, {0, 3}, {2, 5});
  EXPECT_EQ(right.csr.indices(), (std::vector<dnmf::col_index_t>{2, 0}));
  EXPECT_EQ(right.csr.values(), (std::vector<double>{4, 5}));
  EXPECT_EQ(right.csr.indptr(), (std::vector<index_t>{0, 1, 1, 2}));
}

TEST_F(Hdf5Test, DefaultObject) {
  const DenseMatrix<double> a = dnmf::test::random_dense<double>(3, 4, 1);
  const std::vector<double> values = dnmf::test::row_major_as<double>(a);
  const std::vector<double> vector(5, 1.0);
  // AnnData: /X beside other things.
  const std::string anndata = path("ann.h5");
  {
    RawFile f(anndata);
    f.dataset(f.id(), "obsm", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    f.csr_group("X", {1, 2}, {0, 3}, {0, 1, 1, 2}, {3, 4});
    f.group("obs");
  }
  EXPECT_TRUE(dnmf::io::hdf5_shape(anndata).sparse);
  // The only 2-D dataset at the root (a 1-D one and a group are not matrices).
  const std::string single = path("single.h5");
  {
    RawFile f(single);
    f.dataset(f.id(), "v", {5}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, vector.data());
    f.dataset(f.id(), "A", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    f.group("meta");
  }
  EXPECT_EQ(dnmf::io::hdf5_shape(single).cols, 4);
  EXPECT_EQ(read<double>(single, {0, 3}, {0, 4}).dense.storage(), a.storage());
  // Two candidates: the user must choose.
  const std::string two = path("two.h5");
  {
    RawFile f(two);
    f.dataset(f.id(), "A", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    f.dataset(f.id(), "B", {4, 3}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
  }
  EXPECT_EQ(error_message([&] { dnmf::io::hdf5_shape(two); }),
            two + ": holds several matrices (/A, /B); name one, e.g. " + two + ":/A");
  EXPECT_EQ(dnmf::io::hdf5_shape(two + ":B").rows, 4);
  // No candidate: the message lists what is there.
  const std::string none = path("none.h5");
  {
    RawFile f(none);
    f.dataset(f.id(), "v", {5}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, vector.data());
    f.group("obs");
  }
  EXPECT_THAT(
      error_message([&] { dnmf::io::hdf5_shape(none); }),
      AllOf(StartsWith(none + ": holds no matrix"), HasSubstr("/obs (group)"), HasSubstr("/v (1-D dataset 5)")));
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(none + ":/nope/X"); }),
              AllOf(StartsWith(none + ": has no object '/nope/X'; the file holds "), HasSubstr("/obs (group)")));
  EXPECT_EQ(error_message([&] { dnmf::io::hdf5_shape(none + ":/v"); }),
            none + ":/v: is a 1-D dataset of shape 5; expected a 2-D matrix");
}

TEST_F(Hdf5Test, BadCsrGroups) {
  const std::string p = path("A.h5");
  {
    RawFile f(p);
    f.csr_group("csc", {1, 2}, {0, 1}, {0, 1, 2, 2}, {2, 3}, "csc_matrix");
    f.csr_group("csc_short", {1, 2}, {0, 1}, {0, 1, 2}, {2, 3}, "csc_matrix");
    f.csr_group("csc_row", {1, 2}, {0, 5}, {0, 1, 2, 2}, {2, 3}, "csc_matrix");
    f.csr_group("shape3", {1, 2}, {0, 1}, {0, 1, 2}, {2, 2, 1});
    f.csr_group("noshape", {1, 2}, {0, 1}, {0, 1, 2}, {});
    f.csr_group("short", {1, 2}, {0, 1}, {0, 1, 2}, {3, 2});
    f.csr_group("decreasing", {1, 2}, {0, 1}, {0, 2, 1, 2}, {3, 2});
    f.csr_group("column", {1, 2}, {0, 7}, {0, 1, 2}, {2, 2});
    f.csr_group("negative", {1, -2}, {0, 1}, {0, 1, 2}, {2, 2});
    f.csr_group("dataframe", {1, 2}, {0, 1}, {0, 1, 2}, {2, 2}, "dataframe");
    const hid_t g = f.group("nodata");
    RawFile::integer_attribute(g, "shape", {1, 1});
    // 'data' present but a group, or a soft link to nothing: bad input (exit 3), not a failed read (exit 1, 4).
    const hid_t group_data = f.group("datagroup");
    H5Gclose(H5Gcreate2(group_data, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const hid_t dangling = f.group("dangling");
    H5Lcreate_soft("/nothere", dangling, "data", H5P_DEFAULT, H5P_DEFAULT);
  }
  const auto shape_error = [&](const std::string& object) {
    return error_message([&] { dnmf::io::hdf5_shape(p + ":" + object); });
  };
  EXPECT_TRUE(dnmf::io::hdf5_shape(p + ":csc").sparse);
  EXPECT_EQ(shape_error("csc_short"),
            p + ":/csc_short: 'indptr' has 3 entries; the shape [2, 3] of a CSC matrix needs 4");
  EXPECT_EQ(shape_error("shape3"),
            p + ":/shape3: CSR group's 'shape' attribute is [2, 2, 1]; expected two non-negative integers "
                "[rows, columns], each at most 2^62");
  EXPECT_EQ(shape_error("noshape"),
            p + ":/noshape: CSR group has no integer 'shape' attribute (expected [rows, columns])");
  EXPECT_EQ(shape_error("short"), p + ":/short: 'indptr' has 3 entries; the shape [3, 2] of a CSR matrix needs 4");
  EXPECT_EQ(shape_error("dataframe"),
            p + ":/dataframe: is a group of encoding-type 'dataframe', not a CSR or CSC matrix");
  EXPECT_THAT(shape_error("nodata"), StartsWith(p + ":/nodata: is a group without a 'data' dataset"));
  for (const auto& [object, what] : {std::pair<std::string, std::string>{"datagroup", "not a dataset (a group?)"},
                                     {"dangling", "a link that leads nowhere"}}) {
    EXPECT_THAT(shape_error(object), StartsWith(p + ":/" + object + ": its 'data' is " + what)) << object;
    try {
      dnmf::io::hdf5_shape(p + ":" + object);
    } catch (const dnmf::Error& e) {
      EXPECT_EQ(e.kind(), dnmf::ErrorKind::data) << object;
    }
  }
  // Problems inside the rows a rank reads: named by global row (and column).
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":decreasing", {1, 3}, {0, 2});
            }),
            p + ":/decreasing: 'indptr' decreases at row 1 (from 2 to 1)");
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":column", {1, 2}, {0, 1});
            }),
            p + ":/column: column index 7 of row 1 (entry 1) is out of range 0..1");
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":negative", {0, 2}, {0, 2});
            }),
            p + ":/negative: entry at row 1, column 1 (0-based) is -2; input must be non-negative");
  EXPECT_NO_THROW(read<double>(p + ":negative", {0, 1}, {0, 2}));  // the bad entry is in another rank's rows
  // Unchecked (a masked run's read: it checks only the observed entries), the value comes back as stored.
  EXPECT_EQ(dnmf::io::read_hdf5_block<double>(p + ":negative", {0, 2}, {0, 2}, single_, false).csr.values()[1], -2.0);
  EXPECT_EQ(dnmf::inspect(p + ":negative").stats.negative, 1);
  // A CSC group's lines are columns.
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":csc_row", {0, 2}, {1, 3});
            }),
            p + ":/csc_row: row index 5 of column 1 (entry 1) is out of range 0..1");
}

TYPED_TEST(Hdf5Typed, CscGroupEveryBlockOfA3x2Split) {
  // AnnData writes a scipy CSC matrix as a csc_matrix group: indptr over columns, indices are rows.
  using T = TypeParam;
  const DenseMatrix<T> whole = dnmf::test::random_dense<T>(17, 11, 6, 0.7);
  std::vector<double> data;
  std::vector<std::int64_t> indices;
  std::vector<std::int32_t> indptr{0};
  for (index_t j = 0; j < 11; ++j) {
    for (index_t i = 0; i < 17; ++i) {
      if (whole(i, j) == T(0)) continue;
      data.push_back(double(whole(i, j)));
      indices.push_back(i);
    }
    indptr.push_back(static_cast<std::int32_t>(data.size()));
  }
  const std::string p = this->path("A.h5");
  {
    RawFile f(p);
    f.csr_group("X", data, indices, indptr, {17, 11}, "csc_matrix");
  }
  const dnmf::io::MatrixShape shape = dnmf::io::hdf5_shape(p);
  EXPECT_EQ(shape.rows, 17);
  EXPECT_EQ(shape.cols, 11);
  EXPECT_EQ(shape.stored, static_cast<index_t>(data.size()));
  EXPECT_TRUE(shape.sparse);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      const Range rows = block_range(17, 3, i), cols = block_range(11, 2, j);
      const auto block = this->template read<T>(p, rows, cols);
      ASSERT_TRUE(block.sparse);
      EXPECT_EQ(dense_of(block.csr).storage(), slice(whole, rows, cols).storage()) << i << "," << j;
    }
  }
}

TEST_F(Hdf5Test, CscGroupWithUnsortedRowsAndDuplicates) {
  // 5 x 3 CSC: column 0 = {row 4: 1, row 0: 2, row 4: 3}, column 1 empty, column 2 = {row 2: 5, row 1: 6}.
  const std::string p = path("A.h5");
  {
    RawFile f(p);
    f.csr_group("X", {1, 2, 3, 5, 6}, {4, 0, 4, 2, 1}, {0, 3, 3, 5}, {5, 3}, "csc_matrix");
  }
  const auto block = read<double>(p, {0, 5}, {0, 3});
  EXPECT_EQ(block.csr.indptr(), (std::vector<index_t>{0, 1, 2, 3, 3, 4}));
  EXPECT_EQ(block.csr.indices(), (std::vector<dnmf::col_index_t>{0, 2, 2, 0}));
  EXPECT_EQ(block.csr.values(), (std::vector<double>{2, 6, 5, 4}));
  const auto lower = read<double>(p, {2, 5}, {0, 3});
  EXPECT_EQ(lower.csr.indptr(), (std::vector<index_t>{0, 1, 1, 2}));
  EXPECT_EQ(lower.csr.indices(), (std::vector<dnmf::col_index_t>{2, 0}));
  EXPECT_EQ(lower.csr.values(), (std::vector<double>{5, 4}));
}

TEST_F(Hdf5Test, AnnDataFiles) {
  const DenseMatrix<double> a = dnmf::test::random_dense<double>(3, 4, 1);
  const std::vector<double> values = dnmf::test::row_major_as<double>(a);
  // An .h5ad: X a CSR group, a dense layer, obs and var groups; the default is /X.
  const std::string p = path("cells.h5ad");
  {
    RawFile f(p);
    f.csr_group("X", {1, 2}, {0, 3}, {0, 1, 1, 2}, {3, 4});
    f.group("obs");
    f.group("var");
    const hid_t layers = f.group("layers");
    f.dataset(layers, "counts", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
  }
  EXPECT_EQ(dnmf::io::format_of(p), dnmf::io::FileFormat::hdf5);
  EXPECT_TRUE(dnmf::io::read_shape(p).sparse);
  EXPECT_EQ(dnmf::io::read_shape(p + ":/X").stored, 2);
  EXPECT_EQ(read<double>(p + ":/layers/counts", {0, 3}, {0, 4}).dense.storage(), a.storage());
  EXPECT_EQ(read<double>(p + ":layers/counts", {1, 3}, {2, 4}).dense.storage(), slice(a, {1, 3}, {2, 4}).storage());
  // Without /X the .h5ad is not searched (the only matrix there is a layer): the message names the layers.
  const std::string no_x = path("noX.H5AD");
  {
    RawFile f(no_x);
    const hid_t layers = f.group("layers");
    f.dataset(layers, "counts", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    f.dataset(layers, "spliced", {3, 4}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
  }
  EXPECT_EQ(error_message([&] { dnmf::io::hdf5_shape(no_x); }),
            no_x + ": AnnData file without /X (its matrix; adata.X was None?); name a matrix as " + no_x +
                ":/layers/NAME (layers: /layers/counts, /layers/spliced)");
  // .hdf5 is the same format as .h5, with or without an object.
  const std::string hdf5 = path("A.hdf5");
  dnmf::io::write_h5_dense<double>(hdf5, "/X", a.view());
  EXPECT_EQ(read<double>(hdf5, {0, 3}, {0, 4}).dense.storage(), a.storage());
  EXPECT_EQ(dnmf::io::read_block<double>(hdf5 + ":/X", {0, 3}, {0, 4}, single_).dense.storage(), a.storage());
}

TEST_F(Hdf5Test, BadFilesAndDatasets) {
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(path("missing.h5")); }),
              StartsWith(path("missing.h5") + ": cannot open"));
  const std::string text = path("text.h5");
  std::ofstream(text) << "not hdf5";
  EXPECT_EQ(error_message([&] { dnmf::io::hdf5_shape(text); }), text + ": not an HDF5 file (no HDF5 signature found)");
  EXPECT_THROW(read<double>(text, {0, 1}, {0, 1}), dnmf::CollectiveError);

  const std::string p = path("A.h5");
  DenseMatrix<double> a = dnmf::test::random_dense<double>(6, 5, 9);
  a(4, 2) = std::nan("");
  {
    RawFile f(p);
    const std::vector<double> values = dnmf::test::row_major_as<double>(a);
    f.dataset(f.id(), "A", {6, 5}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    const hid_t strings = H5Tcopy(H5T_C_S1);
    H5Tset_size(strings, 4);
    const std::string cells(2 * 2 * 4, 'x');
    f.dataset(f.id(), "S", {2, 2}, strings, strings, cells.data());
    H5Tclose(strings);
  }
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":A", {3, 6}, {1, 4});
            }),
            p + ":/A: entry at row 4, column 2 (0-based) is NaN; input must be finite and non-negative (NaN "
                "entries of A can be fitted as missing values: --missing nan, "
                "MissingValues::nan_missing in C++, or dnmf.NMF().fit(X, missing='nan'))");
  EXPECT_NO_THROW(read<double>(p + ":A", {0, 4}, {0, 5}));
  EXPECT_TRUE(std::isnan(dnmf::io::read_hdf5_block<double>(p + ":A", {3, 6}, {1, 4}, single_, false).dense(1, 1)));
  EXPECT_EQ(dnmf::inspect(p + ":A").stats.nan, 1);
  EXPECT_EQ(error_message([&] {
              read<double>(p + ":A", {0, 7}, {0, 5});
            }),
            p + ":/A: row range [0, 7) is out of bounds for a 6x5 matrix");
  EXPECT_EQ(error_message([&] { dnmf::io::hdf5_shape(p + ":S"); }),
            p + ":/S: holds string values; expected numbers (floating-point or integer)");

  // Links to nothing: input that cannot be reached (IoError, exit 4), where a plain Error meant "internal".
  const std::string links = path("links.h5");
  {
    RawFile f(links);
    EXPECT_GE(H5Lcreate_soft("/nope", f.id(), "dangling", H5P_DEFAULT, H5P_DEFAULT), 0);
    EXPECT_GE(H5Lcreate_external("missing.h5", "/X", f.id(), "external", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  for (const char* name : {":dangling", ":external"}) {
    try {
      (void)dnmf::io::hdf5_shape(links + name);
      ADD_FAILURE() << name << " was opened";
    } catch (const dnmf::Error& e) {
      EXPECT_EQ(e.kind(), dnmf::ErrorKind::io) << e.what();
      EXPECT_THAT(std::string(e.what()), HasSubstr("cannot open (a link to an object or file that is not there?)"));
    }
  }
}

/// `file`'s bytes with the first run of `pattern` (little-endian 64-bit values) found: its offset, or npos.
std::size_t find_u64s(const std::string& bytes, const std::vector<std::uint64_t>& pattern) {
  std::string needle(pattern.size() * 8, '\0');
  for (std::size_t k = 0; k < pattern.size(); ++k)
    for (int b = 0; b < 8; ++b) needle[k * 8 + static_cast<std::size_t>(b)] = static_cast<char>(pattern[k] >> (8 * b));
  return bytes.find(needle);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A helper session's findings: an object whose header cannot be read was passed over by the default search (A.h5
// fitted a small /other beside an unreadable /counts, exit 0) and, named, called a missing link (exit 4); a
// damaged shape was believed (3.3 GB allocated for a 160 KB dataset); a shape of 2^60 columns overflowed the cell
// count ("dense matrix size out of range"); a uint64 CSR shape of 2^64 - 1 overflowed its row count + 1; and
// "//nothere" was found.
TEST_F(Hdf5Test, DamagedObjectsAndImpossibleShapesAreBadInput) {
  const std::vector<double> values(30 * 20, 1.5), small(25, 2.0);
  const std::string two = path("two.h5");
  {
    RawFile f(two);
    f.dataset(f.id(), "counts", {30, 20}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    f.dataset(f.id(), "small", {5, 5}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, small.data());
  }
  std::string bytes = file_bytes(two);
  const std::size_t dims = find_u64s(bytes, {30, 20});
  ASSERT_NE(dims, std::string::npos);
  bytes[dims - 8] = 0x7f;  // the dataspace message's version byte
  std::ofstream(two, std::ios::binary | std::ios::trunc) << bytes;
  for (const std::string& name : {two, two + ":/counts"}) {
    try {
      const auto shape = dnmf::io::hdf5_shape(name);
      ADD_FAILURE() << name << " was read as " << shape.rows << "x" << shape.cols;
    } catch (const dnmf::Error& e) {
      EXPECT_EQ(e.kind(), dnmf::ErrorKind::data) << e.what();
      EXPECT_THAT(std::string(e.what()), AllOf(HasSubstr(two + ":/counts: cannot open the object"),
                                               HasSubstr("damaged, or written in a newer format")));
    }
  }

  const std::string tall = path("tall.h5");
  {
    RawFile f(tall);
    f.dataset(f.id(), "X", {30, 20}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    const hsize_t huge[2] = {10, hsize_t{1} << 60};
    const hsize_t chunk[2] = {1, 1};
    const hid_t space = H5Screate_simple(2, huge, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    const hid_t wide = H5Dcreate2(f.id(), "wide", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    EXPECT_GE(wide, 0);
    H5Dclose(wide);
    H5Pclose(dcpl);
    H5Sclose(space);
    const hid_t g = f.group("U");
    f.dataset(g, "data", {2}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data());
    const std::vector<std::int64_t> indices = {0, 1};
    const std::vector<std::int32_t> indptr = {0, 1, 2};
    f.dataset(g, "indices", {2}, H5T_STD_I64LE, H5T_NATIVE_INT64, indices.data());
    f.dataset(g, "indptr", {3}, H5T_STD_I32LE, H5T_NATIVE_INT32, indptr.data());
    const std::uint64_t shape[2] = {~std::uint64_t{0}, 25};
    const hsize_t two_values = 2;
    const hid_t attribute_space = H5Screate_simple(1, &two_values, nullptr);
    const hid_t attribute = H5Acreate2(g, "shape", H5T_STD_U64LE, attribute_space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attribute, H5T_NATIVE_UINT64, shape);
    H5Aclose(attribute);
    H5Sclose(attribute_space);
  }
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(tall + ":/wide"); }),
              HasSubstr(":/wide: a dataset of shape 10x1152921504606846976 has more cells than dnmf can index"));
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(tall + ":/U"); }), HasSubstr("each at most 2^62"));
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(tall + "://nothere"); }),
              StartsWith(tall + ": has no object '/nothere'"));
  bytes = file_bytes(tall);
  const std::size_t x_dims = find_u64s(bytes, {30, 20});
  ASSERT_NE(x_dims, std::string::npos);
  bytes.replace(x_dims, 8, std::string("\0\0\x40\0\0\0\0\0", 8));  // 30 rows -> 4194304
  std::ofstream(tall, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_THAT(error_message([&] { dnmf::io::hdf5_shape(tall + ":/X"); }),
              AllOf(HasSubstr(":/X: the shape 4194304x20 needs"), HasSubstr("the file is damaged or truncated")));
}

}  // namespace
