// Integrity of dnmf's own files (issue 16, item 2): CRC-32C against a bitwise reference, .dcsr checksums and
// header-versus-array checks (changed row count, flipped column-count byte, flipped data bytes, version-1
// files), per-chunk verification of partial reads, NMFk job files (bit flips, values outside their domain)
// and the content hash that tells a row-permuted matrix with equal shape, sum and sum of squares apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "io/dcsr.hpp"
#include "io/narrow.hpp"
#include "nmfk/checkpoint.hpp"
#include "nmfk/content_hash.hpp"
#include "stream/dcsr_source.hpp"
#include "stream/tile_assembly.hpp"
#include "support/error_message.hpp"
#include "support/random_matrices.hpp"
#include "support/temp_dir_test.hpp"
#include "util/crc32c.hpp"

namespace dnmf {
namespace {

using test::error_message;
using testing::HasSubstr;

// CRC-32C one bit at a time, straight from the definition (reflected polynomial 0x82F63B78).
std::uint32_t reference_crc(const std::vector<unsigned char>& bytes) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, KnownValuesAndAgreementWithReference) {
  const std::string check = "123456789";
  EXPECT_EQ(util::crc32c(check.data(), check.size()), 0xE3069283u);  // the standard check value
  EXPECT_EQ(util::crc32c_portable(check.data(), check.size()), 0xE3069283u);
  const std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(util::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(util::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(util::crc32c(nullptr, 0), 0u);
  std::mt19937 rng(7);
  for (std::size_t size : {1u, 3u, 7u, 8u, 9u, 15u, 16u, 63u, 64u, 1000u, 4099u}) {
    std::vector<unsigned char> bytes(size);
    for (auto& b : bytes) b = static_cast<unsigned char>(rng());
    const std::uint32_t want = reference_crc(bytes);
    EXPECT_EQ(util::crc32c(bytes.data(), size), want) << size;
    EXPECT_EQ(util::crc32c_portable(bytes.data(), size), want) << size;
    // Continued in two pieces, at every odd split.
    for (std::size_t cut = 1; cut < size; cut += 5) {
      EXPECT_EQ(util::crc32c(bytes.data() + cut, size - cut, util::crc32c(bytes.data(), cut)), want);
      EXPECT_EQ(util::crc32c_portable(bytes.data() + cut, size - cut, util::crc32c_portable(bytes.data(), cut)), want);
    }
  }
}

class Integrity : public test::TempDirTest {
 protected:
  void flip(const std::string& file, std::uint64_t offset, unsigned char mask) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(static_cast<unsigned char>(c) ^ mask));
  }
  template <class U>
  void poke(const std::string& file, std::uint64_t offset, U value) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(reinterpret_cast<const char*>(&value), sizeof value);
  }
  std::string read_error(const std::string& file) {
    return error_message([&] { (void)io::read_dcsr<double>(file); });
  }
  // Writes `a` as a version-1 file (no checksums): the current format with the table cut off and the version
  // word changed. Returns the header as written, whose offsets the old format shares.
  io::DcsrHeader write_version_one(const std::string& file, const CsrMatrix<double>& a) {
    io::write_dcsr<double>(file, a.view());
    const io::DcsrHeader h = io::read_dcsr_header(file);
    std::filesystem::resize_file(file, h.values_offset + 8 * static_cast<std::uint64_t>(h.nnz));
    poke<std::uint32_t>(file, 8, 1);
    return h;
  }
};

CsrMatrix<double> small_matrix() { return test::to_csr(test::random_dense<double>(30, 12, 3, 0.6)); }

TEST_F(Integrity, DcsrRoundTripCarriesChecksums) {
  const auto a = small_matrix();
  io::write_dcsr<double>(path("a.dcsr"), a.view());
  const io::DcsrHeader h = io::read_dcsr_header(path("a.dcsr"));
  EXPECT_EQ(h.version, 2u);
  ASSERT_EQ(h.chunks.size(), 1u);
  EXPECT_EQ(h.chunks[0].row_end, 30);
  const auto back = io::read_dcsr<double>(path("a.dcsr"));
  EXPECT_EQ(back.indptr(), a.indptr());
  EXPECT_EQ(back.indices(), a.indices());
  EXPECT_EQ(back.values(), a.values());
}

TEST_F(Integrity, DcsrChangedRowCountIsDetected) {
  io::write_dcsr<double>(path("a.dcsr"), small_matrix().view());
  poke<std::int64_t>(path("a.dcsr"), 16, 20);  // rows 30 -> 20: would factorise only the first rows
  const std::string message = read_error(path("a.dcsr"));
  EXPECT_THAT(message, HasSubstr("a.dcsr: .dcsr header checksum mismatch")) << message;
  EXPECT_THAT(message, HasSubstr("the header is damaged"));
}

TEST_F(Integrity, DcsrFlippedColumnCountByteIsDetected) {
  io::write_dcsr<double>(path("a.dcsr"), small_matrix().view());
  flip(path("a.dcsr"), 24, 0x10);  // cols 12 -> 28: would widen H
  EXPECT_THAT(read_error(path("a.dcsr")), HasSubstr(".dcsr header checksum mismatch"));
  EXPECT_THAT(error_message([&] { (void)io::read_dcsr_shape(path("a.dcsr")); }), HasSubstr("header checksum mismatch"));
}

TEST_F(Integrity, DcsrFlippedDataBytesAreDetected) {
  const auto a = small_matrix();
  io::write_dcsr<double>(path("a.dcsr"), a.view());
  const io::DcsrHeader h = io::read_dcsr_header(path("a.dcsr"));
  const std::string clean = path("a.dcsr");
  struct Case {
    std::uint64_t offset;
    const char* what;
  };
  // The lowest mantissa bit of a value: still a valid, non-negative entry, so only the checksum can tell.
  for (const Case c : {Case{h.values_offset + std::uint64_t{8} * 5, "values"},
                       Case{h.indices_offset + std::uint64_t{4} * 2, "column indices"},
                       Case{h.indptr_offset + std::uint64_t{8} * 7, "row pointers"}}) {
    std::filesystem::copy_file(clean, path("b.dcsr"), std::filesystem::copy_options::overwrite_existing);
    flip(path("b.dcsr"), c.offset, 0x01);
    const std::string message = read_error(path("b.dcsr"));
    EXPECT_THAT(message, HasSubstr(std::string("b.dcsr: checksum mismatch in the ") + c.what + " of rows [0, 30)"))
        << message;
    EXPECT_THAT(message, HasSubstr("the file is damaged"));
  }
  // A flipped byte in the checksum table itself.
  std::filesystem::copy_file(clean, path("c.dcsr"), std::filesystem::copy_options::overwrite_existing);
  flip(path("c.dcsr"), std::filesystem::file_size(clean) - 5, 0x40);
  EXPECT_THAT(read_error(path("c.dcsr")), HasSubstr("checksum table mismatch"));
  // Bytes appended or cut off.
  std::filesystem::copy_file(clean, path("d.dcsr"), std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(path("d.dcsr"), std::filesystem::file_size(clean) + 24);
  EXPECT_THAT(read_error(path("d.dcsr")), HasSubstr("does not fit the file"));
}

// A .dcsr of many chunks: a damaged chunk fails the reads that use it, and only those.
TEST_F(Integrity, DcsrVerifiesEachChunkAsItIsRead) {
  const index_t m = 150000, n = 3;
  std::vector<index_t> indptr{0};
  std::vector<col_index_t> indices;
  std::vector<double> values;
  for (index_t i = 0; i < m; ++i) {
    indices.push_back(static_cast<col_index_t>(i % n));
    values.push_back(1.0 + static_cast<double>(i % 7));
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  io::write_dcsr<double>(path("big.dcsr"), CsrMatrix<double>(m, n, indptr, indices, values).view());
  io::DcsrHeader h = io::read_dcsr_header(path("big.dcsr"));
  ASSERT_EQ(h.chunks.size(), 3u);  // 65536 rows a chunk
  EXPECT_EQ(h.chunks[0].row_end, 65536);
  flip(path("big.dcsr"), h.values_offset + std::uint64_t{8} * 140000, 0x01);  // in the third chunk
  const auto first = io::read_dcsr_block<double>(path("big.dcsr"), {1000, 70000}, {0, n});
  EXPECT_EQ(first.csr.nnz(), 69000);
  const std::string message = error_message([&] {
    (void)io::read_dcsr_block<double>(path("big.dcsr"), {139000, 139001}, {0, n});
  });
  EXPECT_THAT(message, HasSubstr("checksum mismatch in the values of rows [131072, 150000)")) << message;
  // Streamed: the tiles before the damaged chunk pass, the first one reaching into it fails.
  stream::DcsrSource<double> source(path("big.dcsr"), {0, m}, {0, n});
  const auto tiles = source.partition(1 << 18);
  ASSERT_GT(tiles.size(), 3u);
  std::string streamed;
  stream::Tile<double> tile = test::slot_for<double>(tiles, true);
  for (const auto& extent : tiles) {
    try {
      source.read(extent, tile, true);
    } catch (const Error& e) {
      streamed = e.what();
      EXPECT_GT(extent.range.last, 131072);  // the first tile reaching into the damaged chunk, no earlier one
      EXPECT_EQ(e.kind(), ErrorKind::data);
      break;
    }
  }
  EXPECT_THAT(streamed, HasSubstr("checksum mismatch in the values of rows [131072, 150000)"));
}

// Version 1 (no checksums) is still read, with the header checked against the arrays.
TEST_F(Integrity, DcsrVersionOneIsCheckedAgainstItsArrays) {
  const auto a = small_matrix();
  (void)write_version_one(path("a.dcsr"), a);
  const io::DcsrHeader old = io::read_dcsr_header(path("a.dcsr"));
  EXPECT_EQ(old.version, 1u);
  EXPECT_TRUE(old.chunks.empty());
  EXPECT_EQ(io::read_dcsr<double>(path("a.dcsr")).values(), a.values());
  std::filesystem::copy_file(path("a.dcsr"), path("b.dcsr"));
  poke<std::int64_t>(path("b.dcsr"), 16, 20);  // fewer rows: indptr[20] != nnz
  EXPECT_THAT(read_error(path("b.dcsr")), HasSubstr("b.dcsr: .dcsr row pointers run from 0 to"));
  EXPECT_THAT(read_error(path("b.dcsr")), HasSubstr("the header says 0 to nnz = " + std::to_string(a.nnz())));
  std::filesystem::copy_file(path("a.dcsr"), path("c.dcsr"));
  poke<std::int64_t>(path("c.dcsr"), 32, a.nnz() - 1);  // nnz one smaller: the arrays no longer end the file
  EXPECT_THAT(read_error(path("c.dcsr")), HasSubstr("corrupt header"));
}

TEST_F(Integrity, DcsrBlockReadRefusesRowPointersWhoseSpanOverflows) {
  // Found by fuzz.dcsr: a version-1 file whose inner row pointers are -2^62 - 5 and 2^62 + 5. Their difference
  // does not fit in int64, so the block read must compare before it subtracts (UBSan caught the subtraction).
  const io::DcsrHeader h = write_version_one(path("a.dcsr"), small_matrix());
  const std::int64_t huge = (std::int64_t{1} << 62) + 5;
  poke<std::int64_t>(path("a.dcsr"), h.indptr_offset + 8, -huge);
  poke<std::int64_t>(path("a.dcsr"), h.indptr_offset + 16, huge);
  const std::string message = error_message([&] { (void)io::read_dcsr_block<double>(path("a.dcsr"), {1, 2}, {0, 1}); });
  EXPECT_THAT(message, HasSubstr("a.dcsr: row pointers of rows [1, 2) are not increasing inside [0, nnz]"));
}

// --- NMFk job files ---

rank_search::JobRecord job_record(index_t m, index_t n, index_t k) {
  rank_search::JobRecord r;
  r.k = k;
  r.p = 1;
  r.rel_error = 0.125;
  r.seconds = 2.5;
  r.iterations = 40;
  r.W = test::random_dense<double>(m, k, 5);
  r.H = test::random_dense<double>(k, n, 6);
  return r;
}

TEST_F(Integrity, CheckpointBitFlipsAreDetectedAndTheJobRunsAgain) {
  const rank_search::CheckpointStore store(path("ck"));
  std::filesystem::create_directories(path("ck"));
  const auto r = job_record(9, 7, 3);
  store.save(r);
  std::string problem;
  const auto loaded = store.load(3, 1, 9, 7, &problem);
  ASSERT_TRUE(loaded.has_value()) << problem;
  EXPECT_EQ(loaded->rel_error, 0.125);
  EXPECT_EQ(loaded->W.storage(), r.W.storage());
  const std::string file = store.job_path(3, 1);
  const std::uint64_t header = 8 + 4 + 4 + 5 * 8;  // magic, version, checksum, k p m n iterations
  struct Case {
    std::uint64_t offset;
    unsigned char mask;
  };
  for (const Case c : {Case{header + 2, 0x01},  // rel_error's low mantissa: 0.125 -> 0.1250...01
                       Case{header + 16 + std::uint64_t{8} * 4 + 3, 0x04}}) {  // an entry of W
    store.save(r);
    flip(file, c.offset, c.mask);
    problem.clear();
    EXPECT_FALSE(store.load(3, 1, 9, 7, &problem).has_value());
    EXPECT_THAT(problem, HasSubstr("k3_p1.job: checksum mismatch (the file is damaged); the job runs again"));
    EXPECT_FALSE(std::filesystem::exists(file));  // removed, so the rerun writes a fresh one
  }
}

TEST_F(Integrity, CheckpointValuesOutsideTheirDomainAreRefused) {
  const rank_search::CheckpointStore store(path("ck"));
  std::filesystem::create_directories(path("ck"));
  // Written through save(), so the checksum is valid: only the domain check can refuse them.
  auto r = job_record(6, 5, 2);
  r.W(4, 1) = std::nan("");
  store.save(r);
  std::string problem;
  EXPECT_FALSE(store.load(2, 1, 6, 5, &problem).has_value());
  EXPECT_THAT(problem, HasSubstr("W(4, 1) = nan is not a finite number >= 0; the job runs again"));
  r = job_record(6, 5, 2);
  r.H(1, 3) = -1;
  store.save(r);
  EXPECT_FALSE(store.load(2, 1, 6, 5, &problem).has_value());
  EXPECT_THAT(problem, HasSubstr("H(1, 3) = -1"));
  r = job_record(6, 5, 2);
  r.rel_error = std::numeric_limits<double>::infinity();
  store.save(r);
  EXPECT_FALSE(store.load(2, 1, 6, 5, &problem).has_value());
  EXPECT_THAT(problem, HasSubstr("relative error inf is not a finite number >= 0"));
}

TEST_F(Integrity, CheckpointWithoutChecksumRunsAgain) {
  const rank_search::CheckpointStore store(path("ck"));
  std::filesystem::create_directories(path("ck"));
  store.save(job_record(4, 4, 2));
  poke<std::uint32_t>(store.job_path(2, 1), 8, 1);  // an old version-1 file
  std::string problem;
  EXPECT_FALSE(store.load(2, 1, 4, 4, &problem).has_value());
  EXPECT_THAT(problem, HasSubstr("job file version 1 has no checksum (expected 3); the job runs again"));
}

// --- float32 range (issue 16, item 5) ---

TEST(NarrowEntry, ValuesFloatCannotHoldAreMarkedAndExplained) {
  EXPECT_EQ(io::narrow_entry<float>(3.0e38), 3.0e38f);
  EXPECT_EQ(io::narrow_entry<float>(1e-45), std::numeric_limits<float>::denorm_min());  // subnormal, not zero
  EXPECT_EQ(io::narrow_entry<float>(0.0), 0.0f);
  EXPECT_EQ(io::narrow_entry<double>(1e300), 1e300);
  for (double big : {1e39, 3.5e38, 1e300}) {
    const float f = io::narrow_entry<float>(big);
    EXPECT_TRUE(std::isnan(f)) << big;
    EXPECT_EQ(io::narrow_marker(f), 1) << big;
    EXPECT_FALSE(io::acceptable_entry(f));
  }
  // Negative values beyond float's range are negative, in any precision: said so (the remedy --precision f64 of a
  // range message led to "is negative"), and -1e-300 does not become -0.0, which passed as a zero.
  for (double negative : {-1e300, -1e39, -1e-300, -1e-50}) {
    const float f = io::narrow_entry<float>(negative);
    EXPECT_EQ(io::narrow_marker(f), 3) << negative;
    EXPECT_FALSE(io::acceptable_entry(f)) << negative;
    EXPECT_EQ(io::describe_bad_entry(1, 2, f),
              "entry at row 1, column 2 (0-based) is negative (beyond float32's "
              "range, so not shown); input must be non-negative");
  }
  EXPECT_EQ(io::narrow_entry<float>(-0.5), -0.5f);  // within range: kept, and its check names the value
  EXPECT_TRUE(std::isinf(io::narrow_entry<float>(std::numeric_limits<double>::infinity())));  // inf stays inf
  EXPECT_EQ(io::narrow_marker(io::narrow_entry<float>(1e-50)), 2);
  EXPECT_EQ(io::narrow_marker(std::nanf("")), 0);  // an ordinary NaN carries no marker
  EXPECT_EQ(io::describe_bad_entry(2, 5, io::narrow_entry<float>(1e39)),
            "entry at row 2, column 5 (0-based) is finite but too large for single precision (float32 holds at most "
            "3.4028235e+38); use --precision f64, or rescale the matrix");
  EXPECT_THAT(io::describe_bad_entry(0, 1, io::narrow_entry<float>(1e-50)),
              HasSubstr("is non-zero but too small for single precision: it underflows to zero in float32"));
  EXPECT_EQ(io::describe_bad_entry(0, 0, std::nanf("")),
            "entry at row 0, column 0 (0-based) is NaN; input must be finite and non-negative (NaN entries of A can be "
            "fitted as missing values: --missing nan, MissingValues::nan_missing in C++, or dnmf.NMF().fit(X, "
            "missing='nan'))");
}

// --- content hash ---

std::uint64_t whole_hash(const DenseMatrix<double>& a) {
  io::LocalBlock<double> b;
  b.dense = a;
  return rank_search::block_content_hash(b, 0, 0);
}

TEST(ContentHash, PermutedRowsWithEqualStatisticsDiffer) {
  // Small integers: every sum below is exact whatever the order of its terms.
  DenseMatrix<double> a(8, 6);
  for (index_t j = 0; j < 6; ++j)
    for (index_t i = 0; i < 8; ++i) a(i, j) = static_cast<double>((i * 7 + j * 3) % 5);
  a(3, 2) = 3;
  DenseMatrix<double> swapped = a;
  for (index_t j = 0; j < a.cols(); ++j) std::swap(swapped(0, j), swapped(1, j));
  ASSERT_NE(a.storage(), swapped.storage());
  double sum[2] = {0, 0}, squares[2] = {0, 0};
  for (double v : a.storage()) {
    sum[0] += v;
    squares[0] += v * v;
  }
  for (double v : swapped.storage()) {
    sum[1] += v;
    squares[1] += v * v;
  }
  ASSERT_EQ(sum[0], sum[1]);  // the old fingerprint could not tell them apart
  ASSERT_EQ(squares[0], squares[1]);
  EXPECT_NE(whole_hash(a), whole_hash(swapped));
  // One value changed by one unit in the last place changes it too.
  DenseMatrix<double> nudged = a;
  nudged(3, 2) = std::nextafter(nudged(3, 2), 2.0);
  EXPECT_NE(whole_hash(a), whole_hash(nudged));
}

TEST(ContentHash, IndependentOfBlocksAndStorage) {
  const auto a = test::random_dense<double>(17, 13, 12, 0.5);
  const std::uint64_t whole = whole_hash(a);
  // Independent reference: the sum of entry hashes over the non-zeros, written out here.
  std::uint64_t reference = 0;
  for (index_t i = 0; i < 17; ++i)
    for (index_t j = 0; j < 13; ++j)
      if (a(i, j) != 0) reference += rank_search::entry_hash(i, j, a(i, j));
  EXPECT_EQ(whole, reference);
  // The blocks of a 3 x 2 grid, each as CSR, summed (as the ranks' shares are).
  std::uint64_t blocks = 0;
  for (int bi = 0; bi < 3; ++bi)
    for (int bj = 0; bj < 2; ++bj) {
      const dist::Range rows = dist::block_range(17, 3, bi), cols = dist::block_range(13, 2, bj);
      const auto block = io::slice_block<double, double>(MatrixRef<double>{a.view()}, rows, cols);
      io::LocalBlock<double> sparse;
      sparse.sparse = true;
      DenseMatrix<double> dense = block.dense;
      sparse.csr = test::to_csr(dense);
      blocks += rank_search::block_content_hash(sparse, rows.first, cols.first);
    }
  EXPECT_EQ(blocks, whole);
  dist::SingleCommunicator single;
  EXPECT_EQ(rank_search::sum_content_hash(whole, single), whole);
  EXPECT_EQ(rank_search::content_hash_text(0xABCull), "0000000000000abc");
}

}  // namespace
}  // namespace dnmf
