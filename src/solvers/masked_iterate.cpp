// See masked_iterate.hpp. Per column j of the half being updated, with y_i the other factor's columns:
//   Frobenius (mu, hals, bpp): G_j = Σ_i w_ij y_i y_iᵀ, b_j = Σ_i w_ij a_ij y_i, then the algorithm's column rule;
//   KL: s_j = Σ_i w_ij y_i replaces the row sums and b_j = Σ_i w_ij a_ij / (y_iᵀx_j) y_i the ratio product.
// b_j of a dense half is one product Yᵀ(W∘A); G_j is YᵀY corrected by the few entries whose weight is not 1.
// Dense MU forms the second half's product inside the first half's pass over W∘A (fused_half).

#include "solvers/masked_iterate.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/serial_blas.hpp"
#include "backend/cpu/skinny_products.hpp"
#include "backend/update_rules.hpp"
#include "dnmf/error.hpp"
#include "solvers/bpp.hpp"
#include "solvers/listed_products.hpp"
#include "solvers/listed_sweep.hpp"
#include "solvers/thread_governor.hpp"
#include "solvers/update_rule.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::solvers {
namespace {

/// What one half-step leaves for the figures.
using HalfSums = MaskedSums;

/// out += c · y (k entries).
template <class T>
void add_scaled(double* out, double c, const T* y, index_t k) {
  for (index_t l = 0; l < k; ++l) out[l] += c * static_cast<double>(y[l]);
}

using backend::cpu::SerialBlas;

/// Columns per block of the dense numerator Yᵀ(W∘A): fixed, so its sums never depend on the thread count.
constexpr index_t kNumerBlock = 128;

/// Columns of the KL ratio blocks: Q = YᵀX_block and the ratios live in a rows x kKlBlock buffer per thread.
constexpr index_t kKlBlock = 32;

/// Everything a half-step shares between its columns: the other factor, its Gram matrix F = YᵀY (correction
/// lists only) and column sums (KL). A dense column's numerator (a column of Yᵀ(W∘A)) is handed to its rule.
template <class T>
struct HalfShared {
  const MaskedHalf<T>& h;
  const DenseMatrix<T>& yt;
  const backend::UpdateRule& rule;
  index_t k;
  bool figures;    ///< the half's sums are wanted (the second half of an iteration)
  bool corrected;  ///< G_j = F + Σ listed; else G_j = Σ listed
  /// float32's tol test: F summed in double, and the cross term x·b_j at the old and the new x in every half
  /// (frobenius_fall says why)
  bool track = false;
  std::vector<double> full;  ///< F (k x k), corrected only
  std::vector<double> sums;  ///< Σ_i y_i (KL)
};

/// One thread's scratch, sized once per half-step.
template <class T>
struct ColumnScratch {
  std::vector<double> b, gx, u, s, z, g, gp;
  std::vector<T> bt, st, gt, x_old;
  std::vector<const double*> rows;  ///< the listed rows as doubles (listed_gram)
  ListedColumns listed;             ///< hals's transposed lists
  BppScratch<T> bpp;                ///< bpp's solver arrays and penalised G_j, b_j
  explicit ColumnScratch(index_t k)
      : b(to_size(k)),
        gx(to_size(k)),
        u(to_size(k)),
        s(to_size(k)),
        g(to_size(k * k)),
        bt(to_size(k)),
        st(to_size(k)),
        gt(to_size(k * k)),
        x_old(to_size(k)) {}
};

/// One thread's state in a half-step's column loop: its scratch, with its BLAS calls (bpp's Gram products) serial.
template <class T>
struct ColumnThread {
  const SerialBlas serial;
  ColumnScratch<T> sc;
};

/// u = F x (k x k times k), or zero when G_j is summed from zero.
template <class T>
void full_times(const HalfShared<T>& sh, const T* x, double* u) {
  const index_t k = sh.k;
  std::fill(u, u + k, 0.0);
  if (sh.corrected) gram_times(sh.full.data(), k, x, k, u);
}

/// b_j of a dense half: its column of the numerator Yᵀ(W∘A) (a sparse half's b_j is summed with its lists).
template <class T>
void numerator_column(const T* numer_j, index_t k, double* b) {
  for (index_t l = 0; l < k; ++l) b[l] = static_cast<double>(numer_j[l]);
}

/// MU: G_j x by the lists (2k flops per listed entry, never forming G_j), then the rule of mu_frobenius.hpp.
/// On the way, out's cross_before and quad_before get xᵀb_j and xᵀG_jx at the old x: the figures of the state
/// before this half-step, for nearly nothing (the list's dots are those G_j x needs).
template <class T>
void mu_column(const HalfShared<T>& sh, index_t j, const T* numer_j, T* x, ColumnScratch<T>& sc, HalfSums& out) {
  const index_t k = sh.k;
  const MaskedHalf<T>& h = sh.h;
  const backend::UpdateRule& rule = sh.rule;
  full_times(sh, x, sc.gx.data());
  const double full_quad = lane_dot(x, sc.gx.data(), k);
  const index_t p0 = h.gram_ptr[to_size(j)], p1 = h.gram_ptr[to_size(j) + 1];
  double listed_quad = 0;
  if (h.dense) {
    numerator_column(numer_j, k, sc.b.data());
    listed_quad = listed_products(sh.yt.data(), k, h.gram_row.data(), h.gram_coef.data(), p0, p1, x, sc.gx.data());
  } else {
    // A sparse half's lists are its entries (masked_problem.cpp): b_j and G_j x in one pass, each y_i read once.
    std::fill(sc.b.begin(), sc.b.end(), 0.0);
    listed_quad = listed_products(sh.yt.data(), k, h.row.data(), h.gram_coef.data(), p0, p1, x, sc.gx.data(),
                                  h.weighted_value.data(), sc.b.data());
  }
  out.quad_before += full_quad + listed_quad;
  out.cross_before += lane_dot(x, sc.b.data(), k);
  for (index_t l = 0; l < k; ++l) {
    const double xl = static_cast<double>(x[l]);
    const double denom = rule.l1 + rule.l2 * xl + rule.eps + sc.gx[to_size(l)];
    x[l] = static_cast<T>(xl * sc.b[to_size(l)] / denom);
  }
  if (sh.track && !sh.figures) out.cross += lane_dot(x, sc.b.data(), k);
  if (!sh.figures) return;
  // xᵀG_jx = xᵀFx + Σ c (y_iᵀx)²: dots only.
  full_times(sh, x, sc.u.data());
  out.quad += lane_dot(x, sc.u.data(), k) +
              listed_products(sh.yt.data(), k, h.gram_row.data(), h.gram_coef.data(), p0, p1, x, nullptr);
  out.cross += lane_dot(x, sc.b.data(), k);
}

/// G_j into sc.g (k x k, double) and b_j into sc.b: F (or zero) plus Σ c y_i y_iᵀ over the column's listed rows,
/// by listed_gram. It takes rows of a multiple of 4 doubles: a double Y with such k is read where it is, other
/// rows are first copied into double rows padded with zeros (their Gram then has k..kp zero rows and columns).
template <class T>
void column_gram(const HalfShared<T>& sh, index_t j, const T* numer_j, ColumnScratch<T>& sc) {
  const index_t k = sh.k, kp = (k + 3) / 4 * 4;
  const MaskedHalf<T>& h = sh.h;
  const index_t p0 = h.gram_ptr[to_size(j)], s = h.gram_ptr[to_size(j) + 1] - p0;
  if (sh.corrected) {
    std::copy(sh.full.begin(), sh.full.end(), sc.g.begin());
  } else {
    std::fill(sc.g.begin(), sc.g.end(), 0.0);
  }
  if (h.dense) {
    numerator_column(numer_j, k, sc.b.data());
  } else {
    // A sparse half's lists are its entries (masked_problem.cpp): b_j is summed over them.
    std::fill(sc.b.begin(), sc.b.end(), 0.0);
    listed_sum(sh.yt.data(), k, h.gram_row.data(), h.weighted_value.data(), p0, p0 + s, sc.b.data());
  }
  const bool in_place = std::is_same_v<T, double> && kp == k;
  sc.rows.resize(to_size(s));
  if (!in_place) sc.z.assign(to_size(s * kp), 0.0);
  // Plain pointers: through the vectors, each store of a row pointer made the compiler reload Y's data pointer.
  const T* const yt = sh.yt.data();
  const index_t* const listed = h.gram_row.data() + p0;
  const double** const rows = sc.rows.data();
  for (index_t q = 0; q < s; ++q) {
    const T* y = yt + listed[q] * k;
    if constexpr (std::is_same_v<T, double>) {
      if (in_place) {
        rows[q] = y;
        continue;
      }
    }
    double* z = sc.z.data() + q * kp;
    for (index_t l = 0; l < k; ++l) z[l] = static_cast<double>(y[l]);
    rows[q] = z;
  }
  const double* coef = h.gram_coef.data() + p0;
  if (in_place) {
    listed_gram(sc.rows.data(), coef, s, k, sc.g.data());
    return;
  }
  sc.gp.assign(to_size(kp * kp), 0.0);
  listed_gram(sc.rows.data(), coef, s, kp, sc.gp.data());
  for (index_t q = 0; q < k; ++q)
    for (index_t l = 0; l < k; ++l) sc.g[to_size(l + q * k)] += sc.gp[to_size(l + q * kp)];
}

/// HALS: hals.hpp's sweep by listed_hals_sweep, which never forms G_j: 3 to 4 flops per listed row and component
/// against about 1.25·k for forming G_j (docs/masked.md, "Cost").
template <class T>
void hals_column(const HalfShared<T>& sh, index_t j, const T* numer_j, T* x, ColumnScratch<T>& sc, HalfSums& out) {
  const index_t k = sh.k;
  const MaskedHalf<T>& h = sh.h;
  const index_t p0 = h.gram_ptr[to_size(j)], count = h.gram_ptr[to_size(j) + 1] - p0;
  if (h.dense) {
    numerator_column(numer_j, k, sc.b.data());
  } else {
    std::fill(sc.b.begin(), sc.b.end(), 0.0);
  }
  // A sparse half's lists are its entries (masked_problem.cpp): b_j is summed with them.
  const T* weighted = h.dense ? nullptr : h.weighted_value.data() + p0;
  const SweepRule rule{sh.rule.l1, sh.rule.l2, sh.rule.eps, cancelled_fraction(sh.h.rows)};
  const ListedRows list{h.gram_row.data() + p0, h.common_coef ? nullptr : h.gram_coef.data() + p0,
                        h.common_coef.value_or(0.0), count};
  if (sh.track) std::copy(x, x + k, sc.x_old.begin());
  const double listed_quad = listed_hals_sweep(sh.yt.data(), k, list, sh.corrected ? sh.full.data() : nullptr, weighted,
                                               rule, sc.b.data(), sc.u.data(), x, sc.listed, sh.figures);
  if (sh.track) {  // after the sweep: a sparse half's b_j is complete only then
    out.cross_before += lane_dot(sc.x_old.data(), sc.b.data(), k);
    if (!sh.figures) out.cross += lane_dot(x, sc.b.data(), k);
  }
  if (!sh.figures) return;
  out.quad += lane_dot(x, sc.u.data(), k) + listed_quad;  // xᵀG_jx = xᵀFx + Σ c (y_iᵀx)²
  out.cross += lane_dot(x, sc.b.data(), k);
}

/// BPP needs G_j itself (column_gram), then bpp.hpp's exact NNLS in the thread's reused NNLS buffers.
template <class T>
void bpp_column(const HalfShared<T>& sh, index_t j, const T* numer_j, T* x, ColumnScratch<T>& sc, HalfSums& out) {
  const index_t k = sh.k;
  column_gram(sh, j, numer_j, sc);
  const T* g = nullptr;
  const T* b = nullptr;
  if constexpr (std::is_same_v<T, double>) {  // G_j and b_j are solved where column_gram formed them
    g = sc.g.data();
    b = sc.b.data();
  } else {
    std::transform(sc.g.begin(), sc.g.end(), sc.gt.begin(), [](double v) { return static_cast<T>(v); });
    std::transform(sc.b.begin(), sc.b.end(), sc.bt.begin(), [](double v) { return static_cast<T>(v); });
    g = sc.gt.data();
    b = sc.bt.data();
  }
  const backend::View<T> xv(x, k, 1, k);
  const backend::CView<T> bv(b, k, 1, k);
  const backend::CView<T> gv(g, k, k, k);
  if (sh.track) out.cross_before += lane_dot(x, sc.b.data(), k);
  out.cap_hits += bpp_update<T>(sh.rule, xv, bv, gv, 0, 1, &sc.bpp);
  if (sh.track && !sh.figures) out.cross += lane_dot(x, sc.b.data(), k);
  if (!sh.figures) return;
  for (index_t q = 0; q < k; ++q) {
    const double xq = static_cast<double>(x[q]);
    out.cross += xq * sc.b[to_size(q)];
    out.quad += xq * lane_dot(sc.g.data() + q * k, x, k);
  }
}

/// KL's s_j = Σ_i w_ij y_i: the full column sums corrected by the list, or the list summed from zero.
template <class T>
void kl_weight_sums(const HalfShared<T>& sh, index_t j, double* s) {
  const index_t k = sh.k;
  const MaskedHalf<T>& h = sh.h;
  if (sh.corrected) {
    std::copy(sh.sums.begin(), sh.sums.end(), s);
  } else {
    std::fill(s, s + k, 0.0);
  }
  for (index_t p = h.gram_ptr[to_size(j)]; p < h.gram_ptr[to_size(j) + 1]; ++p)
    add_scaled(s, h.gram_coef[to_size(p)], sh.yt.data() + h.gram_row[to_size(p)] * k, k);
}

/// The KL rule (mu_kl.hpp) for column j once b (the ratio product) is in sc.b and, unless form_sums, s_j in sc.s.
template <class T>
void kl_finish(const HalfShared<T>& sh, index_t j, T* x, ColumnScratch<T>& sc, HalfSums& out, bool form_sums) {
  const index_t k = sh.k;
  if (form_sums) kl_weight_sums(sh, j, sc.s.data());
  for (index_t l = 0; l < k; ++l) {
    if (sh.figures) out.kl_model += sc.s[to_size(l)] * static_cast<double>(x[l]);
    sc.bt[to_size(l)] = static_cast<T>(sc.b[to_size(l)]);
    sc.st[to_size(l)] = static_cast<T>(sc.s[to_size(l)]);
  }
  const backend::View<T> xv(x, k, 1, k);
  const backend::CView<T> bv(sc.bt.data(), k, 1, k);
  out.cap_hits += backend::update_columns<T>(sh.rule, xv, bv, bv, sc.st.data(), 0, 1);
}

/// One observed entry's share of the KL figures (at the old x) and its ratio w a / q (0 where w a = 0).
inline double kl_entry(double wa, double w, double q, bool figures, HalfSums& out) {
  if (figures) {
    const double a = wa / w;
    out.kl_squared += w * (a - q) * (a - q);
    out.kl_log += backend::kl_log_term(wa, w, q);
    out.kl_formed_model += w * q;
    out.kl_formed += 1;
  }
  return backend::kl_ratio(wa, q);
}

/// KL on a sparse column: one pass over its entries, q = y_iᵀx and the ratio product together.
template <class T>
void kl_sparse_column(const HalfShared<T>& sh, index_t j, T* x, ColumnScratch<T>& sc, HalfSums& out) {
  const index_t k = sh.k;
  const MaskedHalf<T>& h = sh.h;
  std::fill(sc.b.begin(), sc.b.end(), 0.0);
  std::fill(sc.s.begin(), sc.s.end(), 0.0);
  // The lists are the entries (masked_problem.cpp): s_j = Σ w y_i in the same pass.
  for (index_t p = h.ptr[to_size(j)]; p < h.ptr[to_size(j) + 1]; ++p) {
    const T* y = sh.yt.data() + h.row[to_size(p)] * k;
    const double w = static_cast<double>(h.weight[to_size(p)]);
    const double r = kl_entry(static_cast<double>(h.weighted_value[to_size(p)]), w, lane_dot(y, x, k), sh.figures, out);
    for (index_t l = 0; l < k; ++l) {
      const double yl = static_cast<double>(y[l]);
      sc.b[to_size(l)] += r * yl;
      sc.s[to_size(l)] += w * yl;
    }
  }
  kl_finish(sh, j, x, sc, out, false);
}

/// KL on dense columns [j0, j1): the model block Q = YᵀX and the ratio product Y R as two BLAS products.
template <class T>
void kl_dense_block(const HalfShared<T>& sh, index_t j0, index_t j1, DenseMatrix<T>& x, std::vector<T>& q,
                    std::vector<T>& ratio_product, ColumnScratch<T>& sc, std::vector<HalfSums>& per_column) {
  const index_t k = sh.k, rows = sh.h.rows, nb = j1 - j0;
  const int ik = static_cast<int>(k), ir = static_cast<int>(rows), inb = static_cast<int>(nb);
  backend::blas::gemm(true, false, ir, inb, ik, T(1), sh.yt.data(), ik, x.data() + j0 * k, ik, T(0), q.data(), ir);
  for (index_t j = j0; j < j1; ++j) {
    T* qj = q.data() + (j - j0) * rows;
    HalfSums& out = per_column[to_size(j)];
    for (index_t i = 0; i < rows; ++i) {
      const double w = static_cast<double>(sh.h.weights(i, j));
      qj[i] = w > 0 ? static_cast<T>(kl_entry(static_cast<double>(sh.h.weighted(i, j)), w, static_cast<double>(qj[i]),
                                              sh.figures, out))
                    : T(0);
    }
  }
  backend::blas::gemm(false, false, ik, inb, ir, T(1), sh.yt.data(), ik, q.data(), ir, T(0), ratio_product.data(), ik);
  for (index_t j = j0; j < j1; ++j) {
    T* xj = x.data() + j * k;
    if (sh.h.unobserved[to_size(j)] != 0) {
      std::fill(xj, xj + k, T(0));
      continue;
    }
    for (index_t l = 0; l < k; ++l) sc.b[to_size(l)] = static_cast<double>(ratio_product[to_size((j - j0) * k + l)]);
    kl_finish(sh, j, xj, sc, per_column[to_size(j)], true);
  }
}

/// What a half-step's columns share: F = YᵀY where G_j corrects it (Frobenius) or the column sums of Y (KL).
template <class T>
HalfShared<T> share_half(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, const backend::UpdateRule& rule,
                         bool figures, bool track = false) {
  const index_t k = yt.rows();
  HalfShared<T> sh{h, yt, rule, k, figures, !h.direct_gram, track, {}, {}};
  if (rule.algorithm == Algorithm::kl) {
    sh.sums.assign(to_size(k), 0.0);
    if (sh.corrected)
      for (index_t i = 0; i < h.rows; ++i) add_scaled(sh.sums.data(), 1.0, yt.data() + i * k, k);
  } else if (sh.corrected && std::is_same_v<T, float>) {
    // Summed in double: the float F's rounding (about ε·√m·‖F‖ per entry) put ε·Σwa² of noise into each quadratic
    // term, and G_j = F − (the missing rows' share) kept it as an absolute error: a column with fewer observed
    // entries than k has a singular G_j, whose null space that noise filled, and BPP's exact solves then raised
    // the error (8e-4 to 5e-2). It was summed in double only for the tol test, so --tol 0 changed the iterates.
    sh.full.assign(to_size(k * k), 0.0);
    backend::CpuKernels<T>{}.gram_f64(backend::CView<T>(yt.data(), k, h.rows, std::max<index_t>(k, 1)), sh.full.data());
  } else if (sh.corrected) {
    const int ik = static_cast<int>(k);
    DenseMatrix<T> full(k, k);
    const SerialBlas serial;
    backend::blas::gemm(false, true, ik, ik, static_cast<int>(h.rows), T(1), yt.data(), ik, yt.data(), ik, T(0),
                        full.data(), ik);
    sh.full.assign(full.storage().begin(), full.storage().end());
  }
  return sh;
}

/// The dense numerator Yᵀ(W∘A) (k x h.cols) into numer (dense_weighted_numerator).
template <class T>
void dense_numerator(const HalfShared<T>& sh, DenseMatrix<T>& numer) {
  if (numer.rows() != sh.k || numer.cols() != sh.h.cols) numer = DenseMatrix<T>(sh.k, sh.h.cols);
  dense_weighted_numerator(sh.h, sh.yt.data(), sh.k, numer.data(), sh.k);
}

/// Column j's rule (every algorithm but dense KL, which works in blocks): numer_j is its numerator for a dense
/// half (nullptr for a sparse one, whose rules sum it from the lists). An unobserved column is held at zero.
template <class T>
void column_rule(const HalfShared<T>& sh, index_t j, const T* numer_j, T* xj, ColumnScratch<T>& sc, HalfSums& out) {
  if (sh.h.unobserved[to_size(j)] != 0) {
    std::fill(xj, xj + sh.k, T(0));
    return;
  }
  switch (sh.rule.algorithm) {
    case Algorithm::mu:
      mu_column(sh, j, numer_j, xj, sc, out);
      break;
    case Algorithm::hals:
      hals_column(sh, j, numer_j, xj, sc, out);
      break;
    case Algorithm::bpp:
      bpp_column(sh, j, numer_j, xj, sc, out);
      break;
    case Algorithm::kl:
      kl_sparse_column(sh, j, xj, sc, out);
      break;
  }
}

/// Σ of the columns' sums in column order: independent of the schedule.
inline HalfSums column_total(const std::vector<HalfSums>& per_column) {
  HalfSums total;
  for (const HalfSums& c : per_column) total += c;
  return total;
}

/// A half's change of the cross term c = Σ_j x_jᵀb_j, from its own numerator at the old and the new x: b_j's float
/// rounding, the same in both, cancels. float32's tol test reads the objective's fall as these changes and the
/// change of the quadratic term q (from F summed in double, exact to double's rounding): the difference of two
/// float figures carries their numerators' rounding, as large as the change per iteration below about 1% error.
double cross_change(const HalfSums& s) { return s.cross - s.cross_before; }

/// One half-step: every column of x (k x h.cols) against yt (k x h.rows). `figures`: fill the sums the
/// iteration's error and objective come from (only the second half's are read). Columns are independent and
/// each column's sums are kept apart and added in column order, so the result does not depend on the threads.
/// numer_ready: numer already holds a dense Frobenius half's numerator (the other half's fused pass formed it).
/// track: HalfShared::track.
template <class T>
HalfSums update_half(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, DenseMatrix<T>& x, DenseMatrix<T>& numer,
                     const backend::UpdateRule& rule, bool figures, bool numer_ready = false, bool track = false) {
  const index_t k = yt.rows();
  const bool kl = rule.algorithm == Algorithm::kl;
  const HalfShared<T> sh = share_half(h, yt, rule, figures, track);
  if (!kl && h.dense && !numer_ready) dense_numerator(sh, numer);
  std::vector<HalfSums> per_column(to_size(h.cols));
  if (kl && h.dense) {
    const index_t blocks = (h.cols + kKlBlock - 1) / kKlBlock;
    struct KlThread {
      const SerialBlas serial;
      ColumnScratch<T> sc;
      std::vector<T> q, ratio_product;
    };
    const auto kl_thread = [&] {
      return KlThread{
          {}, ColumnScratch<T>(k), std::vector<T>(to_size(h.rows * kKlBlock)), std::vector<T>(to_size(k * kKlBlock))};
    };
    util::for_each_index_dynamic_with(blocks, true, kl_thread, [&](index_t blk, KlThread& t) {
      kl_dense_block(sh, blk * kKlBlock, std::min(h.cols, (blk + 1) * kKlBlock), x, t.q, t.ratio_product, t.sc,
                     per_column);
    });
  } else {
    // A breakdown in a column's rule (BPP's NNLS refuses an infinite right-hand side) reaches the caller.
    util::for_each_index_dynamic_with(
        h.cols, true,
        [k] {
          return ColumnThread<T>{{}, ColumnScratch<T>(k)};
        },
        [&](index_t j, ColumnThread<T>& t) {
          column_rule(sh, j, h.dense ? numer.data() + j * k : nullptr, x.data() + j * k, t.sc, per_column[to_size(j)]);
        },
        kColumnsPerHandout);
  }
  return column_total(per_column);
}

/// A dense Frobenius half-step fused with the other half's numerator, as the unmasked iteration's single pass
/// (CpuKernels::dense_fused_pass): tile by tile of W∘A's columns, their numerator, their column rules, then
/// other_numer += X_tile·(W∘A)_tileᵀ while the tile is in cache. W∘A is read once per iteration instead of twice.
/// other_numer is the other half's numerator: k x h.rows (the other half's columns are this one's rows).
template <class T>
HalfSums fused_half(const MaskedHalf<T>& h, const DenseMatrix<T>& yt, DenseMatrix<T>& x, DenseMatrix<T>& other_numer,
                    const backend::UpdateRule& rule, std::vector<ColumnScratch<T>>& slot_scratch, bool track) {
  const index_t k = yt.rows();
  const HalfShared<T> sh = share_half(h, yt, rule, false, track);
  if (other_numer.rows() != k || other_numer.cols() != h.rows) other_numer = DenseMatrix<T>(k, h.rows);
  std::vector<HalfSums> per_column(to_size(h.cols));
  backend::CpuKernels<T> kernels;
  // Half the unmasked pass's tile: between a tile's numerator and its other-side product, the column rules gather
  // the listed rows of Y and read the lists, and with the full tile that pushed the tile out of L2 (2000 x 1500,
  // k = 16, 10% missing, one thread: the other-side product took 2.1x its unmasked time, the iteration 10-25% more
  // CPU time than with half tiles; a quarter was no faster).
  kernels.set_tile_bytes(backend::CpuKernels<T>::default_tile_bytes() / 2);
  kernels.dense_fused_pass(h.weighted.view(), yt.view(), x.view(), other_numer.view(), false,
                           [&](index_t slot, index_t first, index_t last, backend::CView<T> numer) {
                             ColumnScratch<T>& sc = slot_scratch[to_size(slot)];
                             for (index_t j = first; j < last; ++j)
                               column_rule(sh, j, numer.data + (j - first) * numer.ld, x.data() + j * k, sc,
                                           per_column[to_size(j)]);
                           });
  return column_total(per_column);
}

/// The work of one iteration for the thread governor, counted as the unmasked iteration counts it (products over
/// the stored entries, Gram matrices), so problems of one size start from the same thread choice.
template <class T>
double iteration_flops(const MaskedProblem<T>& p, index_t k) {
  const auto kd = static_cast<double>(k);
  const double entries =
      p.h_half.dense ? static_cast<double>(p.m) * static_cast<double>(p.n) : static_cast<double>(p.observed);
  return 4.0 * entries * kd + 2.0 * static_cast<double>(p.m + p.n) * kd * kd;
}

/// MU's loop: iteration t's figures are the sums its successor's first half forms at its old x (mu_column's
/// cross_before and quad_before), so the second half needs no pass of its own over the lists for them (a sixth of
/// a sparse `--unstored missing` iteration). They are the same figures at the same state (W_t, H_t), summed in
/// another order. Iteration t is recorded once the first half of t + 1 has run: when its figures stop the run,
/// the first half's factor goes back to its state at t (kept when the stopping rule can end the run early), so
/// the result is iteration t's, as with figures recorded at once. The last iteration forms its own figures.
template <class T, class FirstHalf, class SecondHalf>
FactorResult<T> run_deferred_figures_loop(const MaskedProblem<T>& p, const FactorOptions& options,
                                          ThreadGovernor& governor, Factors<T>& f, const FirstHalf& first_half,
                                          const SecondHalf& second_half, bool track) {
  const Penalties& pen = options.penalties;
  FactorResult<T> result = masked_result<T>(p.observed, p.unobserved_rows, p.unobserved_cols);
  MaskedRecorder<T> recorder(options, p.weighted_squared_norm, result);
  DenseMatrix<T>& first_x = options.w_first ? f.wt : f.h;
  DenseMatrix<T> kept;
  bool pending = false;
  double pending_w = 0, pending_h = 0;  // iteration t's penalties, of W_t and H_t
  // Tracking (float32's tol test): iteration t's fall of the objective's Frobenius part is its halves' cross
  // changes and the change of q between the first halves' figures of t and t + 1 (cross_change says why).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double pending_cross = nan, pending_quad = nan;  // iteration t's cross change, and q at its start
  for (int it = 1; it <= options.max_iterations; ++it) {
    governor.begin(it);
    const bool may_stop = pending && options.tol > 0;
    if (may_stop) kept = first_x;
    const HalfSums first = first_half();
    if (pending) {
      const double squared = p.weighted_squared_norm - 2 * first.cross_before + first.quad_before;
      const double fall = track ? pending_cross - 0.5 * (first.quad_before - pending_quad) : nan;
      if (recorder.record(it - 1, squared, 0.5 * std::max(squared, 0.0) + pending_w + pending_h, fall)) {
        if (may_stop) first_x = std::move(kept);
        break;
      }
    }
    const bool last_iteration = it == options.max_iterations;
    const HalfSums last = second_half(last_iteration);
    governor.end(it);
    const double cross = track ? cross_change(first) + cross_change(last) : nan;
    if (last_iteration) {
      const double squared = p.weighted_squared_norm - 2 * last.cross + last.quad;
      recorder.record(it, squared, frobenius_objective(squared, f, pen),
                      track ? cross - 0.5 * (last.quad - first.quad_before) : nan);
    } else {
      pending = true;
      pending_w = penalty(f.wt, pen.l1_w, pen.l2_w);
      pending_h = penalty(f.h, pen.l1_h, pen.l2_h);
      pending_cross = cross;
      pending_quad = first.quad_before;
    }
  }
  recorder.finish();
  return result;
}

}  // namespace

template <class T>
void dense_weighted_numerator(const MaskedHalf<T>& h, const T* yt, index_t k, T* out, index_t ld) {
  const int ik = static_cast<int>(k);
  const index_t blocks = (h.cols + kNumerBlock - 1) / kNumerBlock;
#pragma omp parallel
  {
    const SerialBlas serial;
#pragma omp for schedule(dynamic, 1)
    for (index_t blk = 0; blk < blocks; ++blk) {
      const index_t first = blk * kNumerBlock, width = std::min(h.cols, first + kNumerBlock) - first;
      const T* block = h.weighted.data() + first * h.rows;
      if (backend::cpu::skinny_pays<T>(k))  // the unmasked iteration's kernel for this shape (issue 14)
        backend::cpu::skinny_ya(k, h.rows, width, yt, k, block, h.rows, T(0), out + first * ld, ld);
      else
        backend::blas::gemm(false, false, ik, static_cast<int>(width), static_cast<int>(h.rows), T(1), yt, ik, block,
                            static_cast<int>(h.rows), T(0), out + first * ld, static_cast<int>(ld));
    }
  }
}

template <class T>
double masked_relative_error(const MaskedProblem<T>& p, const DenseMatrix<T>& wt, const DenseMatrix<T>& h,
                             double* kl_objective) {
  const MaskedHalf<T>& half = p.h_half;
  const index_t k = wt.rows();
  // Per column, summed in order: independent of the schedule.
  std::vector<double> per_column(to_size(half.cols), 0.0), kl_column(kl_objective ? to_size(half.cols) : 0, 0.0);
  // A team only where the cells' dots outweigh its start: a small masked transform woke the second thread here for
  // a few microseconds of work (0.83 s against 0.007 s over 201 calls on a busy machine).
  const double cells = half.dense ? static_cast<double>(half.rows) * static_cast<double>(half.cols)
                                  : static_cast<double>(half.ptr.empty() ? 0 : half.ptr.back());
  util::for_each_index(half.cols, cells * static_cast<double>(k + 1) >= util::kMinParallelMultiplyAdds, [&](index_t j) {
    const T* hj = h.data() + j * k;
    double& num = per_column[to_size(j)];
    const auto add = [&](index_t i, double wa, double w) {
      const double q = lane_dot(wt.data() + i * k, hj, k);
      const double r = wa / w - q;
      num += w * r * r;
      // w·(a·log(a / q) − a + q), as the iterations' KL figures sum it.
      if (kl_objective != nullptr) kl_column[to_size(j)] += backend::kl_log_term(wa, w, q) - wa + w * q;
    };
    if (half.dense) {
      for (index_t i = 0; i < half.rows; ++i) {
        const double w = static_cast<double>(half.weights(i, j));
        if (w > 0) add(i, static_cast<double>(half.weighted(i, j)), w);
      }
    } else {
      for (index_t e = half.ptr[to_size(j)]; e < half.ptr[to_size(j) + 1]; ++e)
        add(half.row[to_size(e)], static_cast<double>(half.weighted_value[to_size(e)]),
            static_cast<double>(half.weight[to_size(e)]));
    }
  });
  double num = 0;
  for (const double v : per_column) num += v;
  if (kl_objective != nullptr) {
    *kl_objective = 0;
    for (const double v : kl_column) *kl_objective += v;
  }
  // Observed entries all zero (new data given to transform): relative to nothing, as the unmasked transform says.
  return p.weighted_squared_norm > 0 ? std::sqrt(num / p.weighted_squared_norm) : 0.0;
}

template <class T>
void finish_masked(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f, FactorResult<T>& result) {
  if (options.normalize) normalise(f);
  // KL's iteration figures are of the pair before the last H update: its objective is taken at the returned one.
  const bool kl = options.algorithm == Algorithm::kl;  // also after no iteration: the divergence at the start
  double kl_objective = 0;
  set_final_figures(result, masked_relative_error(p, f.wt, f.h, kl ? &kl_objective : nullptr), p.weighted_squared_norm,
                    returned_penalty_terms(f, options));
  if (kl) result.objective = kl_objective + frobenius_objective(0.0, f, options.penalties);
}

template <class T>
void zero_unobserved(const MaskedProblem<T>& p, Factors<T>& f) {
  zero_flagged_columns(f.h, p.h_half.unobserved);
  zero_flagged_columns(f.wt, p.w_half.unobserved);
}

template <class T>
FactorResult<T> iterate_masked(const MaskedProblem<T>& p, const FactorOptions& options, Factors<T>& f) {
  const double eps = weighted_division_guard(options.algorithm, std::is_same_v<T, float>, p.weighted_squared_norm,
                                             p.weight_sum, static_cast<double>(p.observed));
  const auto& pen = options.penalties;
  const backend::UpdateRule rule_h = update_rule(options.algorithm, eps, pen.l1_h, pen.l2_h);
  const backend::UpdateRule rule_w = update_rule(options.algorithm, eps, pen.l1_w, pen.l2_w);
  const bool kl = options.algorithm == Algorithm::kl;
  zero_unobserved(p, f);
  ThreadGovernor governor(omp_get_max_threads(), true, iteration_flops(p, f.h.rows()));
  DenseMatrix<T> numer_h, numer_w;  // allocated once: a fresh one per half-step costs page faults every time
  // Dense MU: the first half's pass also forms the second half's numerator (fused_half). HALS and BPP gather
  // far more of Y per column (the sweep's transposed lists, G_j) and ran 13% and 4% slower fused (2000 x 1500,
  // k = 16, 10% missing; docs/benchmarks.md): the streamed tiles push Y out of L2.
  const bool fused = options.algorithm == Algorithm::mu && p.h_half.dense && p.w_half.dense;
  std::vector<ColumnScratch<T>> slot_scratch;
  if (fused)
    for (index_t s = 0; s < backend::CpuKernels<T>::max_fused_slots; ++s) slot_scratch.emplace_back(f.h.rows());
  // float32's tol test reads the objective's fall formed where the float figures' rounding cancels (cross_change).
  const bool track = std::is_same_v<T, float> && !kl && options.tol > 0;
  const auto first_half = [&]() -> HalfSums {
    // The halves in the order asked for (FactorOptions::w_first).
    if (fused)
      return options.w_first ? fused_half(p.w_half, f.h, f.wt, numer_h, rule_w, slot_scratch, track)
                             : fused_half(p.h_half, f.wt, f.h, numer_w, rule_h, slot_scratch, track);
    return options.w_first ? update_half(p.w_half, f.h, f.wt, numer_w, rule_w, false, false, track)
                           : update_half(p.h_half, f.wt, f.h, numer_h, rule_h, false, false, track);
  };
  const auto second_half = [&](bool figures) -> HalfSums {
    return options.w_first ? update_half(p.h_half, f.wt, f.h, numer_h, rule_h, figures, fused, track)
                           : update_half(p.w_half, f.h, f.wt, numer_w, rule_w, figures, fused, track);
  };
  double previous_quad = std::numeric_limits<double>::quiet_NaN();  // q at the iteration's start (tracking)
  const auto step = [&](int it) {
    governor.begin(it);
    const HalfSums first = first_half();
    const HalfSums last = second_half(true);  // the figures come from the second half
    governor.end(it);
    MaskedStep s;
    s.cap_hits = first.cap_hits + last.cap_hits;
    if (track) s.frobenius_fall = cross_change(first) + cross_change(last) - 0.5 * (last.quad - previous_quad);
    previous_quad = last.quad;
    if (kl) {
      // At the state where the second half formed its ratios, (W_{t-1}, H_t) in H-first order, as the unmasked
      // iteration reports.
      s.squared = last.kl_squared;
      const double model = last.kl_formed == static_cast<double>(p.observed) ? last.kl_formed_model : last.kl_model;
      s.objective = last.kl_log - p.weighted_sum + model + frobenius_objective(0.0, f, pen);
    } else {
      s.squared = p.weighted_squared_norm - 2 * last.cross + last.quad;
      s.objective = frobenius_objective(s.squared, f, pen);
    }
    return s;
  };
  FactorResult<T> result = options.algorithm == Algorithm::mu
                               ? run_deferred_figures_loop(p, options, governor, f, first_half, second_half, track)
                               : run_masked_loop<T>(p, options, step);
  finish_masked(p, options, f, result);
  return result;
}

template FactorResult<float> iterate_masked<float>(const MaskedProblem<float>&, const FactorOptions&, Factors<float>&);
template FactorResult<double> iterate_masked<double>(const MaskedProblem<double>&, const FactorOptions&,
                                                     Factors<double>&);
template void finish_masked<float>(const MaskedProblem<float>&, const FactorOptions&, Factors<float>&,
                                   FactorResult<float>&);
template void finish_masked<double>(const MaskedProblem<double>&, const FactorOptions&, Factors<double>&,
                                    FactorResult<double>&);
template void dense_weighted_numerator<float>(const MaskedHalf<float>&, const float*, index_t, float*, index_t);
template void dense_weighted_numerator<double>(const MaskedHalf<double>&, const double*, index_t, double*, index_t);
template void zero_unobserved<float>(const MaskedProblem<float>&, Factors<float>&);
template void zero_unobserved<double>(const MaskedProblem<double>&, Factors<double>&);
template double masked_relative_error<float>(const MaskedProblem<float>&, const DenseMatrix<float>&,
                                             const DenseMatrix<float>&, double*);
template double masked_relative_error<double>(const MaskedProblem<double>&, const DenseMatrix<double>&,
                                              const DenseMatrix<double>&, double*);

}  // namespace dnmf::solvers
