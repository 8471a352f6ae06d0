#include "nmfk/regression.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nnls.hpp"

namespace dnmf::rank_search {
namespace {

// Σ_i a_ij² over this block's rows, per local column.
template <class T>
std::vector<double> column_squares(const MatrixBlock<T>& block) {
  if (!block.sparse) {
    const DenseMatrix<T>& a = block.dense;
    std::vector<double> out(to_size(a.cols()), 0.0);
    for (index_t j = 0; j < a.cols(); ++j)
      for (index_t i = 0; i < a.rows(); ++i)
        out[to_size(j)] += static_cast<double>(a(i, j)) * static_cast<double>(a(i, j));
    return out;
  }
  const CsrMatrix<T>& a = block.csr;
  std::vector<double> out(to_size(a.cols()), 0.0);
  for (std::size_t q = 0; q < a.values().size(); ++q) {
    const double v = static_cast<double>(a.values()[q]);
    out[to_size(a.indices()[q])] += v * v;
  }
  return out;
}

}  // namespace

template <class T>
std::optional<RegressionRecord> regress(GroupContext<T>& group, const DenseMatrix<double>& W, BackendKind backend) {
  const auto start = std::chrono::steady_clock::now();
  const dist::Layout& layout = group.layout;
  const dist::Grid& grid = *group.grid;
  const index_t k = W.cols();
  const index_t local_rows = layout.a_rows.size(), local_cols = layout.a_cols.size();
  auto host = backend::make_kernels<T>(backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);

  // Wᵀ A_ij with this rank's rows of W, then ||a_j||² of the block's part of each column as row k.
  DenseMatrix<T> wt(k, local_rows);
  for (index_t i = 0; i < local_rows; ++i)
    for (index_t l = 0; l < k; ++l) wt(l, i) = static_cast<T>(W(layout.a_rows.first + i, l));
  DenseMatrix<T> product(k, local_cols);
  host->multiply(group.block.ref(), backend::Side::H, wt.view(), product.view(), T(0));
  const std::vector<double> squares = column_squares(group.block);
  DenseMatrix<double> local(k + 1, local_cols);
  for (index_t j = 0; j < local_cols; ++j) {
    for (index_t l = 0; l < k; ++l) local(l, j) = static_cast<double>(product(l, j));
    local(k, j) = squares[to_size(j)];
  }
  // Summed over the grid column; each rank receives the columns of H it owns.
  std::vector<std::size_t> counts;
  for (index_t s : layout.h_piece_sizes) counts.push_back(to_size(s * (k + 1)));
  const index_t owned = layout.h_cols.size();
  DenseMatrix<double> mine(k + 1, owned);
  grid.col_comm().reduce_scatter_sum(local.data(), mine.data(), counts, dist::Scalar::f64);

  // WᵀW from the whole W, which every rank holds.
  DenseMatrix<double> wt_full(k, W.rows());
  for (index_t i = 0; i < W.rows(); ++i)
    for (index_t l = 0; l < k; ++l) wt_full(l, i) = W(i, l);
  DenseMatrix<double> gram(k, k);
  backend::make_kernels<double>(BackendKind::cpu)->gram(wt_full.view(), gram.view(), 0.0);
  DenseMatrix<double> b(k, owned), x(k, owned);
  for (index_t j = 0; j < owned; ++j)
    for (index_t l = 0; l < k; ++l) b(l, j) = mine(l, j);
  nnls_bpp<double>(gram.view(), b.view(), x.view());

  // Per owned column: h_j, its squared residual and ||a_j||², laid out (k + 2) x owned for the gather.
  // A sparse block's residual comes from the identity ||a||² − 2 xᵀb + xᵀGx; a dense block's is summed below.
  DenseMatrix<double> out(k + 2, owned);
  for (index_t j = 0; j < owned; ++j) {
    for (index_t l = 0; l < k; ++l) out(l, j) = x(l, j);
    out(k + 1, j) = mine(k, j);
    if (!group.block.sparse) continue;
    double cross = 0, quad = 0;
    for (index_t l = 0; l < k; ++l) {
      cross += x(l, j) * b(l, j);
      double gx = 0;
      for (index_t q = 0; q < k; ++q) gx += gram(l, q) * x(q, j);
      quad += x(l, j) * gx;
    }
    out(k, j) = std::max(0.0, mine(k, j) - 2 * cross + quad);
  }
  // A dense block's squared residuals summed directly: the identity cancels to about eps·||a||², so a
  // near-exact fit read as a relative error of ~1e-8 whatever its true size (9e-13), and an --err-threshold below
  // that could not be met. One more product over the block (the regression runs once per k, beside an ensemble
  // of whole fits); a sparse block keeps the identity, whose direct form would visit all m·n places.
  if (!group.block.sparse) {
    std::vector<std::size_t> x_counts;
    for (index_t s : layout.h_piece_sizes) x_counts.push_back(to_size(s * k));
    DenseMatrix<double> x_block(k, local_cols);
    grid.col_comm().allgather(x.data(), x_block.data(), x_counts, dist::Scalar::f64);
    const DenseMatrix<T>& a = group.block.dense;
    std::vector<double> residual(to_size(local_cols), 0.0);
    std::vector<double> model(to_size(local_rows));
    for (index_t j = 0; j < local_cols; ++j) {
      std::fill(model.begin(), model.end(), 0.0);
      for (index_t l = 0; l < k; ++l) {
        const double xl = x_block(l, j);
        if (xl == 0) continue;
        for (index_t i = 0; i < local_rows; ++i) model[to_size(i)] += W(layout.a_rows.first + i, l) * xl;
      }
      double sum = 0;
      for (index_t i = 0; i < local_rows; ++i) {
        const double d = static_cast<double>(a(i, j)) - model[to_size(i)];
        sum += d * d;
      }
      residual[to_size(j)] = sum;
    }
    std::vector<std::size_t> one_counts;
    for (index_t s : layout.h_piece_sizes) one_counts.push_back(to_size(s));
    std::vector<double> owned_residual(to_size(owned));
    grid.col_comm().reduce_scatter_sum(residual.data(), owned_residual.data(), one_counts, dist::Scalar::f64);
    for (index_t j = 0; j < owned; ++j) out(k, j) = owned_residual[to_size(j)];
  }

  // To the group's root, placed by the owned column ranges of every rank.
  dist::Communicator& comm = *group.comm;
  const dist::GridShape shape = grid.shape();
  std::vector<std::size_t> gather_counts;
  std::vector<dist::Range> ranges;
  for (int r = 0; r < comm.size(); ++r) {
    ranges.push_back(dist::make_layout(shape, r / shape.cols, r % shape.cols, layout.m, layout.n).h_cols);
    gather_counts.push_back(to_size(ranges.back().size() * (k + 2)));
  }
  const bool root = comm.rank() == 0;
  DenseMatrix<double> all(root ? k + 2 : 0, root ? layout.n : 0);
  comm.gather(out.data(), root ? all.data() : nullptr, gather_counts, dist::Scalar::f64, 0);
  if (!root) return std::nullopt;
  RegressionRecord rec;
  rec.k = k;
  rec.H = DenseMatrix<double>(k, layout.n);
  rec.column_errors.assign(to_size(layout.n), 0.0);
  double residual = 0, norm = 0;
  index_t offset = 0;
  for (const dist::Range& range : ranges)
    for (index_t j = range.first; j < range.last; ++j, ++offset) {
      for (index_t l = 0; l < k; ++l) rec.H(l, j) = all(l, offset);
      const double e2 = all(k, offset), a2 = all(k + 1, offset);
      rec.column_errors[to_size(j)] = a2 > 0 ? std::sqrt(e2 / a2) : 0.0;
      residual += e2;
      norm += a2;
    }
  rec.rel_error = norm > 0 ? std::sqrt(residual / norm) : 0.0;
  rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rec;
}

template std::optional<RegressionRecord> regress<float>(GroupContext<float>&, const DenseMatrix<double>&, BackendKind);
template std::optional<RegressionRecord> regress<double>(GroupContext<double>&, const DenseMatrix<double>&,
                                                         BackendKind);

}  // namespace dnmf::rank_search
