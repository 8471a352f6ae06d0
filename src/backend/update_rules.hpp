// Host implementations of the per-column update rules (MU, KL, HALS, BPP), shared by the reference and
// cpu backends. Each column of X depends only on the same column of the numerator (DESIGN §3), which is
// what lets the fused pass update a tile as soon as its numerator is known.
#pragma once

#include <algorithm>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/nnls.hpp"

namespace dnmf::backend {

/// Floor for the KL model value m = (WH)_ij so that a / m stays finite where W H has an exact zero.
inline constexpr double kl_model_floor = 1e-30;

/// One entry of A ⊘ (WH): zero where A is zero (0·log 0 = 0 and no contribution to the gradient).
inline double kl_ratio(double a, double m) { return a == 0 ? 0.0 : a / std::max(m, kl_model_floor); }

/// Updates columns [first, last) of x in place. Returns the NNLS round-cap hits (bpp), else 0.
template <class T>
int update_columns(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums, index_t first,
                   index_t last) {
  const index_t k = x.rows;
  switch (rule.algorithm) {
    case Algorithm::mu: {
      std::vector<double> denom(static_cast<std::size_t>(k));
      for (index_t c = first; c < last; ++c) {
        // Denominators from the old column first: MU is a simultaneous (Jacobi) update. Accumulated as
        // axpys over G's columns so the inner loop runs over contiguous memory and vectorises.
        for (index_t l = 0; l < k; ++l)
          denom[static_cast<std::size_t>(l)] = rule.l1 + rule.l2 * static_cast<double>(x(l, c)) + rule.eps;
        for (index_t p = 0; p < k; ++p) {
          const double xp = static_cast<double>(x(p, c));
          const T* gp = g.data + p * g.ld;
          for (index_t l = 0; l < k; ++l) denom[static_cast<std::size_t>(l)] += static_cast<double>(gp[l]) * xp;
        }
        for (index_t l = 0; l < k; ++l)
          x(l, c) = static_cast<T>(static_cast<double>(x(l, c)) * static_cast<double>(numer(l, c)) /
                                   denom[static_cast<std::size_t>(l)]);
      }
      return 0;
    }
    case Algorithm::kl: {
      for (index_t c = first; c < last; ++c)
        for (index_t l = 0; l < k; ++l) {
          const double denom =
              static_cast<double>(y_row_sums[l]) + rule.l1 + rule.l2 * static_cast<double>(x(l, c)) + rule.eps;
          x(l, c) = static_cast<T>(static_cast<double>(x(l, c)) * static_cast<double>(numer(l, c)) / denom);
        }
      return 0;
    }
    case Algorithm::hals: {
      for (index_t c = first; c < last; ++c)
        // Gauss-Seidel over the k coordinates: each uses the ones already updated in this column.
        for (index_t l = 0; l < k; ++l) {
          const double diag = static_cast<double>(g(l, l)) + rule.l2;
          if (!(diag > rule.eps)) continue;  // a dead component: its numerator is zero as well
          double grad = static_cast<double>(numer(l, c)) - rule.l1 - rule.l2 * static_cast<double>(x(l, c));
          // G is symmetric: row l is column l, which is contiguous.
          const T* gl = g.data + l * g.ld;
          const T* xc = x.data + c * x.ld;
          for (index_t p = 0; p < k; ++p) grad -= static_cast<double>(gl[p]) * static_cast<double>(xc[p]);
          x(l, c) = static_cast<T>(std::max(0.0, static_cast<double>(x(l, c)) + grad / diag));
        }
      return 0;
    }
    case Algorithm::bpp: {
      View<T> xs = x.columns(first, last);
      CView<T> bs = numer.columns(first, last);
      if (rule.l1 == 0 && rule.l2 == 0) return static_cast<int>(nnls_bpp<T>(g, bs, xs).rounds_cap_hits);
      std::vector<T> gp(static_cast<std::size_t>(k * k));
      std::vector<T> bp(static_cast<std::size_t>(k * std::max<index_t>(bs.cols, 0)));
      for (index_t q = 0; q < k; ++q)
        for (index_t p = 0; p < k; ++p)
          gp[static_cast<std::size_t>(p + q * k)] =
              static_cast<T>(static_cast<double>(g(p, q)) + (p == q ? rule.l2 : 0.0));
      for (index_t c = 0; c < bs.cols; ++c)
        for (index_t l = 0; l < k; ++l)
          bp[static_cast<std::size_t>(l + c * k)] = static_cast<T>(static_cast<double>(bs(l, c)) - rule.l1);
      const CView<T> gv{gp.data(), k, k, std::max<index_t>(k, 1)};
      const CView<T> bv{bp.data(), k, bs.cols, std::max<index_t>(k, 1)};
      return static_cast<int>(nnls_bpp<T>(gv, bv, xs).rounds_cap_hits);
    }
  }
  return 0;
}

}  // namespace dnmf::backend
