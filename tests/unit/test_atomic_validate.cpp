// Tests for write_file_atomically, check_nonnegative and format_of.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "support/error_message.hpp"
#include "support/temp_dir_test.hpp"

namespace {

namespace fs = std::filesystem;
using dnmf::Error;
using testing::HasSubstr;

/// A fresh directory per test, removed afterwards.
class AtomicFileTest : public dnmf::test::TempDirTest {
 protected:
  [[nodiscard]] std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    return names;
  }
  static std::string contents(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

using dnmf::test::error_message;

TEST_F(AtomicFileTest, WritesContentAndLeavesNoTemporary) {
  dnmf::io::write_file_atomically(path("out.txt"), [](std::ostream& out) { out << "hello " << 42; });
  EXPECT_EQ(contents(path("out.txt")), "hello 42");
  EXPECT_THAT(entries(), testing::ElementsAre("out.txt"));
}

TEST_F(AtomicFileTest, LargeWritesBypassingTheBufferArriveIntact) {
  std::string big(3'000'001, 'x');
  for (std::size_t k = 0; k < big.size(); k += 997) big[k] = char('a' + k % 26);
  dnmf::io::write_file_atomically(path("big.bin"), [&](std::ostream& out) {
    out << "head";
    out.write(big.data(), static_cast<std::streamsize>(big.size()));
    out << "tail";
  });
  EXPECT_EQ(contents(path("big.bin")), "head" + big + "tail");
}

TEST_F(AtomicFileTest, ReplacesAnExistingFile) {
  std::ofstream(path("out.txt")) << "old";
  dnmf::io::write_file_atomically(path("out.txt"), [](std::ostream& out) { out << "new"; });
  EXPECT_EQ(contents(path("out.txt")), "new");
}

TEST_F(AtomicFileTest, ThrowingWriterLeavesNoFileAndNoTemporary) {
  EXPECT_THROW(dnmf::io::write_file_atomically(path("out.txt"),
                                               [](std::ostream& out) {
                                                 out << "partial";
                                                 throw std::runtime_error("writer failed");
                                               }),
               std::runtime_error);
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, ThrowingWriterLeavesExistingFileUntouched) {
  std::ofstream(path("out.txt")) << "precious";
  EXPECT_ANY_THROW(dnmf::io::write_file_atomically(path("out.txt"), [](std::ostream& out) {
    out << std::string(5'000'000, 'z');  // more than the buffer, so bytes reach the temporary
    throw std::runtime_error("writer failed");
  }));
  EXPECT_EQ(contents(path("out.txt")), "precious");
  EXPECT_THAT(entries(), testing::ElementsAre("out.txt"));
}

TEST_F(AtomicFileTest, FailedStreamIsAnErrorAndLeavesNoFile) {
  const std::string message = error_message([&] {
    dnmf::io::write_file_atomically(path("out.txt"), [](std::ostream& out) { out.setstate(std::ios::failbit); });
  });
  EXPECT_THAT(message, HasSubstr(path("out.txt") + ": cannot write"));
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, MissingDirectoryNamesPathAndReason) {
  const std::string target = path("no/such/dir/W.npy");
  const std::string message =
      error_message([&] { dnmf::io::write_file_atomically(target, [](std::ostream& out) { out << "x"; }); });
  EXPECT_THAT(message, HasSubstr(target + ": cannot write: No such file or directory"));
  EXPECT_THAT(message, HasSubstr("no/such/dir"));
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_TRUE(entries().empty());
}

// Every name fits but the whole path, with the temporary's suffix, is past the kernel's 4095 bytes: the message
// blamed the 5-byte name for being too long.
TEST_F(AtomicFileTest, PathTooLongAsAWholeIsNamedAsSuch) {
  std::string deep = fs::absolute(fs::path(path("x"))).parent_path().string();
  while (deep.size() < 4080) {
    deep += "/" + std::string(std::min<std::size_t>(200, 4080 - deep.size()), 'd');
    fs::create_directory(deep);
  }
  const std::string target = deep + "/W.npy";
  const std::string message =
      error_message([&] { dnmf::io::write_file_atomically(target, [](std::ostream& out) { out << "x"; }); });
  EXPECT_THAT(message, HasSubstr(": the path is " + std::to_string(target.size()) + " bytes"));
  EXPECT_THAT(message, HasSubstr("a path may have 4095: choose a shorter folder or name"));
  EXPECT_EQ(message.find("the name is"), std::string::npos) << message;
}

// A legal name whose temporary (the name plus '.tmp.<pid>.<n>') is past the 255 bytes a name may have.
TEST_F(AtomicFileTest, NameTooLongForItsTemporaryIsNamedAsSuch) {
  const std::string target = path(std::string(250, 'x') + ".npy");
  const std::string message =
      error_message([&] { dnmf::io::write_file_atomically(target, [](std::ostream& out) { out << "x"; }); });
  EXPECT_THAT(message, HasSubstr(": the name is 254 bytes, and the temporary file written beside it"));
  EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFileTest, DestinationThatIsADirectoryIsAnError) {
  fs::create_directory(path("taken"));
  const std::string message =
      error_message([&] { dnmf::io::write_file_atomically(path("taken"), [](std::ostream& out) { out << "x"; }); });
  EXPECT_THAT(message, HasSubstr(path("taken") + ": cannot write"));
  EXPECT_THAT(entries(), testing::ElementsAre("taken"));
}

// ---------------------------------------------------------------------------------------------

template <class T>
class NonNegativeTest : public testing::Test {};
using Precisions = testing::Types<float, double>;
TYPED_TEST_SUITE(NonNegativeTest, Precisions);

TYPED_TEST(NonNegativeTest, AcceptsNonNegativeIncludingNegativeZero) {
  using T = TypeParam;
  std::vector<T> data = {0, T(1.5), T(-0.0), std::numeric_limits<T>::max(), std::numeric_limits<T>::denorm_min(), 3};
  EXPECT_NO_THROW(dnmf::io::check_nonnegative<T>(dnmf::DenseView<const T>(data.data(), 2, 3), "A.npy"));
}

TYPED_TEST(NonNegativeTest, DenseNegativeNamesSourceRowAndColumn) {
  using T = TypeParam;
  dnmf::DenseMatrix<T> a(15, 9, T(1));
  a(12, 7) = T(-0.5);
  a(3, 8) = T(-2);  // later in column-major order: the first one found is reported
  const std::string message = error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.npy"); });
  EXPECT_EQ(message, "A.npy: entry at row 12, column 7 (0-based) is -0.5; input must be non-negative");
}

TYPED_TEST(NonNegativeTest, DenseNaNAndInfinity) {
  using T = TypeParam;
  dnmf::DenseMatrix<T> a(4, 3, T(1));
  a(2, 1) = std::numeric_limits<T>::quiet_NaN();
  EXPECT_THAT(error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.npy"); }),
              HasSubstr("A.npy: entry at row 2, column 1 (0-based) is NaN"));
  a(2, 1) = 1;
  a(0, 2) = std::numeric_limits<T>::infinity();
  EXPECT_THAT(error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.npy"); }),
              HasSubstr("A.npy: entry at row 0, column 2 (0-based) is inf"));
  a(0, 2) = -std::numeric_limits<T>::infinity();
  EXPECT_THAT(error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.npy"); }), HasSubstr("is -inf"));
}

TYPED_TEST(NonNegativeTest, DenseViewIgnoresPaddingBetweenColumns) {
  using T = TypeParam;
  // ld 3 with 2 rows: every third element is padding and holds garbage.
  std::vector<T> data = {1, 2, -9, 3, 4, -9, 5, 6, -9};
  EXPECT_NO_THROW(dnmf::io::check_nonnegative<T>(dnmf::DenseView<const T>(data.data(), 2, 3, 3), "A"));
  data[4] = T(-1);  // (1, 1)
  EXPECT_THAT(
      error_message([&] { dnmf::io::check_nonnegative<T>(dnmf::DenseView<const T>(data.data(), 2, 3, 3), "A"); }),
      HasSubstr("row 1, column 1"));
}

TYPED_TEST(NonNegativeTest, CsrReportsRowAndColumnIndex) {
  using T = TypeParam;
  // 3x10: row 0 {2: 1}, row 1 {4: 2, 9: -3}, row 2 {0: 5}
  const dnmf::CsrMatrix<T> a(3, 10, {0, 1, 3, 4}, {2, 4, 9, 0}, {1, 2, -3, 5});
  EXPECT_EQ(error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.mtx"); }),
            "A.mtx: entry at row 1, column 9 (0-based) is -3; input must be non-negative");
  // A row range excludes the bad row.
  EXPECT_NO_THROW(dnmf::io::check_nonnegative<T>(a.view().row_range(2, 3), "A.mtx"));
}

TYPED_TEST(NonNegativeTest, CsrNaN) {
  using T = TypeParam;
  const dnmf::CsrMatrix<T> a(2, 3, {0, 1, 2}, {0, 2}, {1, std::numeric_limits<T>::quiet_NaN()});
  EXPECT_THAT(error_message([&] { dnmf::io::check_nonnegative<T>(a.view(), "A.mtx"); }),
              HasSubstr("A.mtx: entry at row 1, column 2 (0-based) is NaN"));
}

// ---------------------------------------------------------------------------------------------

TEST(FormatOf, RecognisesExtensionsCaseInsensitively) {
  using dnmf::io::FileFormat;
  EXPECT_EQ(dnmf::io::format_of("A.npy"), FileFormat::npy);
  EXPECT_EQ(dnmf::io::format_of("data/A.NPY"), FileFormat::npy);
  EXPECT_EQ(dnmf::io::format_of("A.mtx"), FileFormat::matrix_market);
  EXPECT_EQ(dnmf::io::format_of("/x.y/A.Mtx"), FileFormat::matrix_market);
}

TEST(FormatOf, UnknownExtensionIsAnError) {
  EXPECT_EQ(error_message([] { dnmf::io::format_of("x.csv"); }),
            "x.csv: unknown input format (expected .npy, .npz, .mtx, .h5/.hdf5/.h5ad or .dcsr)");
  EXPECT_THAT(error_message([] { dnmf::io::format_of("dir.npy/matrix"); }), HasSubstr("unknown input format"));
  EXPECT_THAT(error_message([] { dnmf::io::format_of("A.mtx.gz"); }), HasSubstr("A.mtx.gz: compressed input"));
  // "-" (a pipe's usual name) was "unknown input format", as if it had a wrong extension.
  EXPECT_THAT(error_message([] { dnmf::io::format_of("-"); }),
              HasSubstr("-: reading a matrix from standard input is not supported; give its file"));
}

}  // namespace
