#include "solvers/truncated_svd.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/serial_blas.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "util/dense_transpose.hpp"
#include "util/random.hpp"

extern "C" void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                       double* work, const int* lwork, int* info);
extern "C" void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
                        const int* lwork, int* info);
extern "C" void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
                        double* work, const int* lwork, int* info);

namespace dnmf::solvers {
namespace {

// Orthonormalises the rows of an r x d column-major block: a Householder QR of its transpose (LAPACK dgeqrf and
// dorgqr, blocked BLAS-3), whose Q spans the rows' span. Rows that depend on earlier ones get directions
// orthogonal to those instead (their singular values come out near zero, as they should). Modified Gram-Schmidt
// on the rows, as before, walked the whole block once per pair of rows with a stride of r: 9 calls on a
// 20000-row sketch took a third of a second. Serial BLAS, so the answer does not depend on the thread count.
void orthonormalise_rows(std::vector<double>& x, index_t r, index_t d) {
  if (r == 0 || d == 0) return;
  const int ri = static_cast<int>(r), di = static_cast<int>(d);
  std::vector<double> y(to_size(d * r));  // xᵀ: d x r
  util::transpose_into(x.data(), r, r, d, y.data(), d);
  const backend::cpu::SerialBlas serial;
  std::vector<double> tau(to_size(r));
  int info = 0, lwork = -1;
  double query = 0;
  dgeqrf_(&di, &ri, y.data(), &di, tau.data(), &query, &lwork, &info);
  double query2 = 0;
  dorgqr_(&di, &ri, &ri, y.data(), &di, tau.data(), &query2, &lwork, &info);
  lwork = std::max({1, static_cast<int>(query), static_cast<int>(query2)});
  std::vector<double> work(to_size(lwork));
  dgeqrf_(&di, &ri, y.data(), &di, tau.data(), work.data(), &lwork, &info);
  if (info != 0) throw Error("NNDSVD: the QR factorisation failed (LAPACK dgeqrf info " + std::to_string(info) + ")");
  dorgqr_(&di, &ri, &ri, y.data(), &di, tau.data(), work.data(), &lwork, &info);
  if (info != 0) throw Error("NNDSVD: forming Q failed (LAPACK dorgqr info " + std::to_string(info) + ")");
  util::transpose_into(y.data(), d, d, r, x.data(), r);
}

template <class T>
std::vector<T> to_precision(const std::vector<double>& x) {
  return {x.begin(), x.end()};
}

template <class T>
std::vector<double> multiply_rows(backend::Kernels<T>& kernels, const MatrixRef<T>& a, backend::Side side,
                                  const std::vector<double>& y, index_t r, index_t y_cols, index_t out_cols) {
  const std::vector<T> yt = to_precision<T>(y);
  std::vector<T> out(to_size(r * out_cols));
  kernels.multiply(a, side, backend::CView<T>{yt.data(), r, y_cols, r}, backend::View<T>{out.data(), r, out_cols, r},
                   T(0));
  return {out.begin(), out.end()};
}

}  // namespace

template <class T>
TruncatedSvd truncated_svd(backend::Kernels<T>& kernels, const MatrixRef<T>& a, index_t rank, std::uint64_t seed,
                           int power_iterations, bool transposed) {
  // m x n: the matrix whose triplets are wanted (a's transpose when `transposed`). The products below are
  // Ωᵀ-style rows times its transpose (to_rows: r x n times n x m) and times itself (to_cols: r x m times m x n);
  // on its transpose the two swap sides.
  using backend::Side;
  const index_t m = transposed ? cols_of(a) : rows_of(a);
  const index_t n = transposed ? rows_of(a) : cols_of(a);
  const Side to_rows = transposed ? Side::H : Side::W;
  const Side to_cols = transposed ? Side::W : Side::H;
  const index_t r = std::min<index_t>(rank + 10, std::min(m, n));
  // Sketch: rows of Ωᵀ (r x n) uniform in [-1, 1); Yᵀ = Ωᵀ·Aᵀ spans (nearly) A's leading column space.
  std::vector<double> omega(to_size(r * n));
  util::for_each_uniform01(seed, static_cast<std::uint64_t>(util::Stream::svd_sketch), 0, r * n,
                           [&](index_t i, double u) { omega[to_size(i)] = 2.0 * u - 1.0; });
  std::vector<double> qt = multiply_rows(kernels, a, to_rows, omega, r, n, m);
  orthonormalise_rows(qt, r, m);
  for (int it = 0; it < power_iterations; ++it) {
    std::vector<double> zt = multiply_rows(kernels, a, to_cols, qt, r, m, n);
    orthonormalise_rows(zt, r, n);
    qt = multiply_rows(kernels, a, to_rows, zt, r, n, m);
    orthonormalise_rows(qt, r, m);
  }
  // B = Qᵀ A (r x n); the eigenvectors of B Bᵀ rotate Q onto the left singular vectors.
  const std::vector<double> b = multiply_rows(kernels, a, to_cols, qt, r, m, n);
  // Column by column of B (each in cache), every entry of C summed over j in order.
  std::vector<double> c(to_size(r * r), 0.0);
  for (index_t j = 0; j < n; ++j) {
    const double* bj = b.data() + j * r;
    for (index_t q = 0; q < r; ++q) {
      double* cq = c.data() + q * r;
      const double bq = bj[q];
      for (index_t p = 0; p < r; ++p) cq[p] += bj[p] * bq;
    }
  }
  std::vector<double> eig(to_size(r));
  const int ri = static_cast<int>(r);
  int lwork = std::max(1, 3 * ri);
  std::vector<double> work(to_size(lwork));
  int info = 0;
  {
    // Serial, as orthonormalise_rows: an OpenMP OpenBLAS split the solve by the thread count, and the start (so
    // the whole fit) differed between 1 and 2 threads by 1e-12.
    const backend::cpu::SerialBlas serial;
    dsyev_("V", "U", &ri, c.data(), &ri, eig.data(), work.data(), &lwork, &info);
  }
  if (info != 0) throw Error("NNDSVD: the eigenvalue solver failed (LAPACK dsyev info " + std::to_string(info) + ")");

  TruncatedSvd svd;
  svd.rank = std::min(rank, r);
  svd.sigma.assign(to_size(svd.rank), 0.0);
  svd.u.assign(to_size(m * svd.rank), 0.0);
  svd.v.assign(to_size(n * svd.rank), 0.0);
  for (index_t t = 0; t < svd.rank; ++t) {
    const index_t e = r - 1 - t;  // dsyev sorts ascending
    svd.sigma[to_size(t)] = std::sqrt(std::max(eig[to_size(e)], 0.0));
  }
  // U = Qᵀᵀ·E and V = Bᵀ·E / sigma, row by row of U and V, so that each column of Qᵀ and B is read once.
  const auto rotate = [&](const std::vector<double>& rows, index_t count, bool by_sigma, std::vector<double>& out) {
    for (index_t i = 0; i < count; ++i) {
      const double* col = rows.data() + i * r;
      for (index_t t = 0; t < svd.rank; ++t) {
        const double sigma = svd.sigma[to_size(t)];
        if (by_sigma && !(sigma > 0)) continue;
        const double* ev = c.data() + (r - 1 - t) * r;
        double s = 0;
        for (index_t p = 0; p < r; ++p) s += col[p] * ev[p];
        out[to_size(i + t * count)] = by_sigma ? s / sigma : s;
      }
    }
  };
  rotate(qt, m, false, svd.u);
  rotate(b, n, true, svd.v);
  return svd;
}

template TruncatedSvd truncated_svd<float>(backend::Kernels<float>&, const MatrixRef<float>&, index_t, std::uint64_t,
                                           int, bool);
template TruncatedSvd truncated_svd<double>(backend::Kernels<double>&, const MatrixRef<double>&, index_t, std::uint64_t,
                                            int, bool);

}  // namespace dnmf::solvers
