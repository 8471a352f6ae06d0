#include "solvers/truncated_svd.hpp"

#include <algorithm>
#include <cmath>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "util/random.hpp"

extern "C" void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                       double* work, const int* lwork, int* info);

namespace dnmf::solvers {
namespace {

// Orthonormalises the rows of an r x d column-major block (modified Gram-Schmidt, twice for stability).
// A row that is (numerically) dependent on earlier ones is zeroed rather than normalised.
void orthonormalise_rows(std::vector<double>& x, index_t r, index_t d) {
  auto at = [&](index_t row, index_t col) -> double& { return x[to_size(row + col * r)]; };
  for (int sweep = 0; sweep < 2; ++sweep)
    for (index_t p = 0; p < r; ++p) {
      for (index_t q = 0; q < p; ++q) {
        double proj = 0;
        for (index_t c = 0; c < d; ++c) proj += at(p, c) * at(q, c);
        for (index_t c = 0; c < d; ++c) at(p, c) -= proj * at(q, c);
      }
      double norm = 0;
      for (index_t c = 0; c < d; ++c) norm += at(p, c) * at(p, c);
      norm = std::sqrt(norm);
      const double inv = norm > 1e-300 ? 1.0 / norm : 0.0;
      for (index_t c = 0; c < d; ++c) at(p, c) *= inv;
    }
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
                           int power_iterations) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  const index_t r = std::min<index_t>(rank + 10, std::min(m, n));
  using backend::Side;
  // Sketch: rows of Ωᵀ (r x n) uniform in [-1, 1); Yᵀ = Ωᵀ·Aᵀ spans (nearly) A's leading column space.
  std::vector<double> omega(to_size(r * n));
  for (std::size_t i = 0; i < omega.size(); ++i)
    omega[i] = 2.0 * util::uniform01(seed, util::Stream::svd_sketch, i) - 1.0;
  std::vector<double> qt = multiply_rows(kernels, a, Side::W, omega, r, n, m);
  orthonormalise_rows(qt, r, m);
  for (int it = 0; it < power_iterations; ++it) {
    std::vector<double> zt = multiply_rows(kernels, a, Side::H, qt, r, m, n);
    orthonormalise_rows(zt, r, n);
    qt = multiply_rows(kernels, a, Side::W, zt, r, n, m);
    orthonormalise_rows(qt, r, m);
  }
  // B = Qᵀ A (r x n); the eigenvectors of B Bᵀ rotate Q onto the left singular vectors.
  const std::vector<double> b = multiply_rows(kernels, a, Side::H, qt, r, m, n);
  std::vector<double> c(to_size(r * r), 0.0);
  for (index_t p = 0; p < r; ++p)
    for (index_t q = 0; q < r; ++q) {
      double s = 0;
      for (index_t j = 0; j < n; ++j) s += b[to_size(p + j * r)] * b[to_size(q + j * r)];
      c[to_size(p + q * r)] = s;
    }
  std::vector<double> eig(to_size(r));
  const int ri = static_cast<int>(r);
  int lwork = std::max(1, 3 * ri);
  std::vector<double> work(to_size(lwork));
  int info = 0;
  dsyev_("V", "U", &ri, c.data(), &ri, eig.data(), work.data(), &lwork, &info);
  if (info != 0) throw Error("NNDSVD: the eigenvalue solver failed (LAPACK dsyev info " + std::to_string(info) + ")");

  TruncatedSvd svd;
  svd.rank = std::min(rank, r);
  svd.sigma.assign(to_size(svd.rank), 0.0);
  svd.u.assign(to_size(m * svd.rank), 0.0);
  svd.v.assign(to_size(n * svd.rank), 0.0);
  for (index_t t = 0; t < svd.rank; ++t) {
    const index_t e = r - 1 - t;  // dsyev sorts ascending
    const double sigma = std::sqrt(std::max(eig[to_size(e)], 0.0));
    svd.sigma[to_size(t)] = sigma;
    const double* ev = c.data() + e * r;
    for (index_t i = 0; i < m; ++i) {
      double s = 0;
      for (index_t p = 0; p < r; ++p) s += qt[to_size(p + i * r)] * ev[p];
      svd.u[to_size(i + t * m)] = s;
    }
    if (sigma > 0)
      for (index_t j = 0; j < n; ++j) {
        double s = 0;
        for (index_t p = 0; p < r; ++p) s += b[to_size(p + j * r)] * ev[p];
        svd.v[to_size(j + t * n)] = s / sigma;
      }
  }
  return svd;
}

template TruncatedSvd truncated_svd<float>(backend::Kernels<float>&, const MatrixRef<float>&, index_t, std::uint64_t,
                                           int);
template TruncatedSvd truncated_svd<double>(backend::Kernels<double>&, const MatrixRef<double>&, index_t, std::uint64_t,
                                            int);

}  // namespace dnmf::solvers
