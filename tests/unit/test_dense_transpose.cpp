// util::transpose_into's blocks against the plain element loop, on shapes around and across its 64 x 16 blocks
// and with leading dimensions larger than the rows.

#include <gtest/gtest.h>

#include <vector>

#include "dnmf/index.hpp"
#include "util/dense_transpose.hpp"

namespace dnmf {
namespace {

TEST(DenseTranspose, BlocksGiveThePlainTransposeOnOddShapesAndStrides) {
  for (const index_t rows : {0, 1, 7, 63, 64, 65, 200}) {
    for (const index_t cols : {0, 1, 15, 16, 17, 33}) {
      const index_t ld_src = rows + 3, ld_dst = cols + 2;
      std::vector<double> src(static_cast<std::size_t>(ld_src * cols + 1));
      for (std::size_t p = 0; p < src.size(); ++p) src[p] = static_cast<double>(p) + 0.5;
      std::vector<double> dst(static_cast<std::size_t>(ld_dst * rows + 1), -1.0);
      util::transpose_into(src.data(), ld_src, rows, cols, dst.data(), ld_dst);
      for (index_t i = 0; i < rows; ++i) {
        for (index_t j = 0; j < ld_dst; ++j) {
          // Inside the transpose each entry is its source; the padding past cols is never written.
          const double expected = j < cols ? src[static_cast<std::size_t>(i + j * ld_src)] : -1.0;
          ASSERT_EQ(dst[static_cast<std::size_t>(j + i * ld_dst)], expected)
              << rows << "x" << cols << " at " << i << "," << j;
        }
      }
    }
  }
}

TEST(DenseTranspose, TransposedMatrixSwapsRowsAndColumns) {
  DenseMatrix<float> x(70, 19);
  for (index_t j = 0; j < x.cols(); ++j)
    for (index_t i = 0; i < x.rows(); ++i) x(i, j) = static_cast<float>(i * 100 + j);
  const DenseMatrix<float> t = util::transposed(x);
  ASSERT_EQ(t.rows(), 19);
  ASSERT_EQ(t.cols(), 70);
  for (index_t j = 0; j < x.cols(); ++j)
    for (index_t i = 0; i < x.rows(); ++i) EXPECT_EQ(t(j, i), x(i, j));
}

}  // namespace
}  // namespace dnmf
