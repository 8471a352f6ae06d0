#include "solvers/init.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/entry_scan.hpp"
#include "solvers/truncated_svd.hpp"
#include "util/dense_transpose.hpp"
#include "util/random.hpp"

namespace dnmf::solvers {
namespace {

// Entry (l, i) of W and (l, j) of H are keyed by their global index, so any split of the factors over ranks
// draws the same numbers. Wᵀ's storage (k x rows) holds W's rows in order, entry (l, i) at l + (i - first)·k:
// one run of counters from first·k, and so for H's columns.
template <class T>
Factors<T> random_factors(dist::Range w_rows, dist::Range h_cols, index_t k, std::uint64_t seed, double mean,
                          bool swap_streams) {
  // Scaled so that W·H has about A's mean: each entry of the product sums k terms of mean scale² / 4.
  const double scale = 2.0 * std::sqrt(std::max(mean, 1e-300) / static_cast<double>(k));
  Factors<T> f{DenseMatrix<T>(k, w_rows.size()), DenseMatrix<T>(k, h_cols.size())};
  const util::Stream w_stream = swap_streams ? util::Stream::init_h : util::Stream::init_w;
  const util::Stream h_stream = swap_streams ? util::Stream::init_w : util::Stream::init_h;
  T* wt = f.wt.data();
  T* h = f.h.data();
  util::for_each_uniform01(seed, static_cast<std::uint64_t>(w_stream), static_cast<std::uint64_t>(w_rows.first * k),
                           k * w_rows.size(), [&](index_t q, double u) { wt[q] = static_cast<T>(scale * u); });
  util::for_each_uniform01(seed, static_cast<std::uint64_t>(h_stream), static_cast<std::uint64_t>(h_cols.first * k),
                           k * h_cols.size(), [&](index_t q, double u) { h[q] = static_cast<T>(scale * u); });
  return f;
}

double norm2(const double* x, index_t len) {
  double s = 0;
  for (index_t i = 0; i < len; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

// Boutsidis & Gallopoulos (2008): each singular pair contributes its dominant non-negative part.
template <class T>
Factors<T> nndsvd_factors(backend::Kernels<T>& kernels, const MatrixRef<T>& a, index_t k, std::uint64_t seed,
                          double fill, bool transposed) {
  const index_t m = rows_of(a);
  const index_t n = cols_of(a);
  // The triplets of the caller's matrix, whose transpose `a` may be (a C-order array): its U then belongs to a's
  // columns and its V to a's rows. The rule below treats U and V alike, so swapped they give a's factors.
  TruncatedSvd svd = truncated_svd(kernels, a, k, seed, 4, transposed);
  if (transposed) std::swap(svd.u, svd.v);
  Factors<T> f{DenseMatrix<T>(k, m), DenseMatrix<T>(k, n)};
  std::vector<double> up(to_size(m)), un(to_size(m));
  std::vector<double> vp(to_size(n)), vn(to_size(n));
  // A singular vector's entries at an all-zero row or column of A are zero but come out of the sketch as rounding
  // noise (±1e-33) whose sign decided whether NNDSVDa filled them: the start of 3·A (or of 1.0000001·A) was 36% from
  // 3 times that of A on a matrix with zero rows. Entries this far below the vector's largest are zero.
  const auto split = [](const double* x, index_t count, std::vector<double>& pos, std::vector<double>& neg) {
    double largest = 0;
    for (index_t i = 0; i < count; ++i) largest = std::max(largest, std::abs(x[i]));
    const double noise = 64 * std::numeric_limits<double>::epsilon() * largest;
    for (index_t i = 0; i < count; ++i) {
      const double value = std::abs(x[i]) > noise ? x[i] : 0.0;
      pos[to_size(i)] = value > 0 ? value : 0.0;  // never -0.0 (std::max(-0.0, 0.0) is -0.0)
      neg[to_size(i)] = value < 0 ? -value : 0.0;
    }
  };
  for (index_t l = 0; l < svd.rank; ++l) {
    split(svd.u.data() + l * m, m, up, un);
    split(svd.v.data() + l * n, n, vp, vn);
    const double nup = norm2(up.data(), m), nun = norm2(un.data(), m);
    const double nvp = norm2(vp.data(), n), nvn = norm2(vn.data(), n);
    const bool positive = nup * nvp >= nun * nvn;
    const double mass = positive ? nup * nvp : nun * nvn;
    const double nu = positive ? nup : nun;
    const double nv = positive ? nvp : nvn;
    const double s = std::sqrt(svd.sigma[to_size(l)] * mass);
    const auto& uu = positive ? up : un;
    const auto& vv = positive ? vp : vn;
    for (index_t i = 0; i < m; ++i) f.wt(l, i) = static_cast<T>(nu > 0 ? s * uu[to_size(i)] / nu : 0.0);
    for (index_t j = 0; j < n; ++j) f.h(l, j) = static_cast<T>(nv > 0 ? s * vv[to_size(j)] / nv : 0.0);
  }
  if (fill > 0) {
    // The zeros get sqrt(mean of A), the scale of the factors' entries (they grow with the square root of A's
    // scale). scikit-learn fills with the mean itself, which only matches the factors for data of about unit
    // scale: c·A then started elsewhere than A (at c = 1e-6, 50 iterations of a 40 x 30 rank-3 fit ended 1.4x
    // (MU) and 2x (HALS) above c times A's error), and at 1e104 the start overflowed. Both fills agree at a mean
    // of 1; with this one the fit of c·A is c times that of A.
    fill = std::sqrt(fill);
    for (auto& x : f.wt.storage())
      if (x == T(0)) x = static_cast<T>(fill);
    for (auto& x : f.h.storage())
      if (x == T(0)) x = static_cast<T>(fill);
  }
  return f;
}

// The powers of two that bring a given start to A's scale, where it is far from it: the mean of W·H more than 2^20
// from A's mean, or W's and H's mean entries more than 2^40 apart. The iterations' guards against division by zero
// follow A's scale: from W = H = 1e-10 times it HALS returned an all-zero model, from 1e-150 MU did (its WᵀW·H
// underflowed), from 1e10 HALS stopped at a worse fit; and an unbalanced pair (W·2^-64, H·2^64 in float32)
// overflowed the Gram matrices. Multiplying W by 2^w and H by 2^h is exact and keeps the start's shape; MU (both
// losses) and BPP reach the same products from (aW, bH) as from (W, H) once each factor has been updated (MU's
// ratios and BPP's exact solves undo the scale), while HALS's first sweep starts from the scaled H and ends near,
// not at, the same fit. The mean of W·H is 1ᵀW·H1/(mn): W's column sums dotted with H's row
// sums, in units where neither overflows.
template <class T>
InitialScale initial_scale(const DenseMatrix<T>& w, const DenseMatrix<T>& h, double a_mean) {
  constexpr double kProductTolerated = 20, kBalanceTolerated = 40;  // binary orders of magnitude
  const index_t m = w.rows(), k = w.cols(), n = h.cols();
  std::vector<double> cw(to_size(k)), rh(to_size(k));
  double unit = 1;  // sums of the entries times unit
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::fill(rh.begin(), rh.end(), 0.0);  // cw is written whole below
    for (index_t l = 0; l < k; ++l) {
      const T* column = w.data() + l * m;
      double sum = 0;
#pragma omp simd reduction(+ : sum)  // one chain of additions per column took 0.4 ms for 20000 x 16
      for (index_t i = 0; i < m; ++i) sum += static_cast<double>(column[i]) * unit;
      cw[to_size(l)] = sum;
    }
    for (index_t j = 0; j < n; ++j)
      for (index_t l = 0; l < k; ++l) rh[to_size(l)] += static_cast<double>(h(l, j)) * unit;
    const auto finite = [](double v) { return std::isfinite(v); };
    if (std::all_of(cw.begin(), cw.end(), finite) && std::all_of(rh.begin(), rh.end(), finite)) break;
    unit = std::ldexp(1.0, -600);  // entries near double's largest: their sums overflowed
  }
  const double cw_max = *std::max_element(cw.begin(), cw.end());
  const double rh_max = *std::max_element(rh.begin(), rh.end());
  double dot = 0;
  for (index_t l = 0; l < k; ++l) dot += (cw[to_size(l)] / cw_max) * (rh[to_size(l)] / rh_max);
  if (!(dot > 0))
    throw DataError(
        "initial W and H share no component: every column of W with a non-zero entry meets a row of H that is all "
        "zeros, so W·H = 0, a start every algorithm stays at");
  const double log_unit = std::log2(unit);
  const double log_product = std::log2(dot) + std::log2(cw_max) + std::log2(rh_max) - 2 * log_unit -
                             std::log2(static_cast<double>(m)) - std::log2(static_cast<double>(n));
  const double log_w = std::log2(std::accumulate(cw.begin(), cw.end(), 0.0)) - log_unit -
                       std::log2(static_cast<double>(m) * static_cast<double>(k));
  const double log_h = std::log2(std::accumulate(rh.begin(), rh.end(), 0.0)) - log_unit -
                       std::log2(static_cast<double>(k) * static_cast<double>(n));
  const double product_off = std::log2(a_mean) - log_product;  // wanted: w + h
  const double balance_off = log_h - log_w;                    // wanted: w - h
  if (!std::isfinite(product_off) || !std::isfinite(balance_off)) return {};
  if (std::abs(product_off) <= kProductTolerated && std::abs(balance_off) <= kBalanceTolerated) return {};
  return {static_cast<int>(std::lround((product_off + balance_off) / 2)),
          static_cast<int>(std::lround((product_off - balance_off) / 2))};
}

template <class T>
void scale_by(DenseMatrix<T>& x, int exponent) {
  if (exponent == 0) return;
  for (T& v : x.storage()) v = static_cast<T>(std::ldexp(static_cast<double>(v), exponent));
}

}  // namespace

template <class T>
void check_initial_factor(const DenseMatrix<T>* x, index_t rows, index_t cols, const char* name) {
  // The caller's mistakes (a missing or misshapen factor: usage) and its data (bad entries: data), as for A.
  if (x == nullptr) throw UsageError(std::string("init 'given' needs ") + name);
  if (x->rows() != rows || x->cols() != cols)
    throw UsageError(std::string("initial ") + name + " is " + std::to_string(x->rows()) + "x" +
                     std::to_string(x->cols()) + ", expected " + std::to_string(rows) + "x" + std::to_string(cols));
  // One vectorised pass in the common good case; a bad factor is scanned again for the entry to name.
  const T* v = x->data();
  const index_t count = rows * cols;
  const io::EntryScan scan = io::scan_entries(v, count);
  const bool good = scan.all_acceptable;
  // W·H = 0 is where every algorithm stays (MU multiplies zeros, ALS solves for a zero Gram matrix): the run
  // returned an all-zero model with no word, where scikit-learn refuses such a start.
  if (good && count > 0 && !scan.any_nonzero)
    throw DataError(std::string("initial ") + name + " is all zeros: every algorithm keeps W·H = 0 from such a start");
  if (good) return;
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i)
      if (!io::acceptable_entry((*x)(i, j))) {
        char value[32];
        std::snprintf(value, sizeof value, "%.17g", static_cast<double>((*x)(i, j)));
        throw DataError(std::string("initial ") + name + ": entry at row " + std::to_string(i) + ", column " +
                        std::to_string(j) + " is " + value + ": negative or not finite");
      }
}

void agree_on_initial_scale(dist::Communicator& world, const InitialScale& scale) {
  if (world.size() == 1) return;
  const auto w = static_cast<double>(scale.w_exponent), h = static_cast<double>(scale.h_exponent);
  double sums[4] = {w, w * w, h, h * h};
  world.allreduce_sum(sums, 4);
  const auto p = static_cast<double>(world.size());
  // Equal on every rank exactly when p·Σx² = (Σx)² (integers: the sums are exact).
  if (p * sums[1] != sums[0] * sums[0] || p * sums[3] != sums[2] * sums[2])
    throw CollectiveError(
        "the processes were given different initial W or H (they need different scales): every process must pass "
        "the same whole W and H");
}

template <class T>
Factors<T> initialise(backend::Kernels<T>& host_kernels, const MatrixRef<T>* whole, const dist::Layout& layout,
                      const FactorOptions& options, const backend::MatrixStats& stats, const DenseMatrix<T>* w0,
                      const DenseMatrix<T>* h0, InitialScale* scale, bool transposed) {
  *scale = {};
  const index_t m = layout.m;
  const index_t n = layout.n;
  const index_t k = options.rank;
  const double mean = stats.sum / (static_cast<double>(m) * static_cast<double>(n));
  switch (options.init) {
    case InitMethod::random:
      return random_factors<T>(layout.w_rows, layout.h_cols, k, options.seed, mean, transposed);
    case InitMethod::nndsvd:
    case InitMethod::nndsvda:
      if (whole == nullptr)
        throw UsageError("--init " + to_string(options.init) +
                         " needs the whole matrix in memory on one process; use --init random on a grid or when "
                         "streaming");
      return nndsvd_factors(host_kernels, *whole, k, options.seed, options.init == InitMethod::nndsvda ? mean : 0.0,
                            transposed);
    case InitMethod::given: {
      check_initial_factor(w0, m, k, "W");
      check_initial_factor(h0, k, n, "H");
      Factors<T> f{DenseMatrix<T>(k, layout.w_rows.size()), DenseMatrix<T>(k, layout.h_cols.size())};
      util::transpose_into(w0->data() + layout.w_rows.first, std::max<index_t>(m, 1), layout.w_rows.size(), k,
                           f.wt.data(), std::max<index_t>(k, 1));
      std::copy_n(h0->data() + layout.h_cols.first * k, layout.h_cols.size() * k, f.h.data());
      // Every rank reads the whole W0 and H0 and the global statistics: the same scale everywhere (callers on a
      // grid check that the ranks agree, in case they were given different starts).
      *scale = initial_scale(*w0, *h0, mean);
      scale_by(f.wt, scale->w_exponent);
      scale_by(f.h, scale->h_exponent);
      return f;
    }
  }
  throw Error("unknown init method");
}

template void check_initial_factor<float>(const DenseMatrix<float>*, index_t, index_t, const char*);
template void check_initial_factor<double>(const DenseMatrix<double>*, index_t, index_t, const char*);
template Factors<float> initialise<float>(backend::Kernels<float>&, const MatrixRef<float>*, const dist::Layout&,
                                          const FactorOptions&, const backend::MatrixStats&, const DenseMatrix<float>*,
                                          const DenseMatrix<float>*, InitialScale*, bool);
template Factors<double> initialise<double>(backend::Kernels<double>&, const MatrixRef<double>*, const dist::Layout&,
                                            const FactorOptions&, const backend::MatrixStats&,
                                            const DenseMatrix<double>*, const DenseMatrix<double>*, InitialScale*,
                                            bool);

}  // namespace dnmf::solvers
