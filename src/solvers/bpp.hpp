// BPP: alternating non-negative least squares, each column x of H (or of Wᵀ) solved exactly,
//
//   x <- argmin_{x >= 0} 0.5 xᵀ (G + l2 I) x - (b - l1 1)ᵀ x      with b = Wᵀa, G = WᵀW,
//
// by block principal pivoting (nnls_bpp, Kim & Park 2011). The penalties only shift G's diagonal and b, so
// they are folded into copies of both before the solve.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nnls.hpp"
#include "solvers/nnls_buffers.hpp"

namespace dnmf::solvers {

/// v as T, held within T's finite range: a penalty float cannot hold (--l2-w 3.5e38, --l1-w 1e300) made G + l2 I or
/// b - l1 infinite, and the solver blamed the matrix. At the largest float it has its effect (x = 0).
template <class T>
T saturated(double v) {
  constexpr double top = static_cast<double>(std::numeric_limits<T>::max());
  return static_cast<T>(std::clamp(v, -top, top));
}

/// What a caller that solves one small problem after another (the masked BPP, one G per column) keeps between
/// bpp_update calls, so that a call allocates nothing once these have grown: the NNLS arrays and the penalised
/// G and B.
template <class T>
struct BppScratch {
  NnlsBuffers nnls;
  std::vector<T> g, b;
};

/// Solves columns [first, last) of x in place (x's old values pick the first passive sets). Returns the
/// columns that reached the pivoting round cap. With `scratch` the answer is the same; only the arrays differ.
template <class T>
int bpp_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
               index_t first, index_t last, BppScratch<T>* scratch = nullptr) {
  const auto solve = [&](backend::CView<T> gv, backend::CView<T> bv, backend::View<T> xv) {
    return static_cast<int>(
        (scratch != nullptr ? nnls_bpp<T>(gv, bv, xv, NnlsOptions{}, scratch->nnls) : nnls_bpp<T>(gv, bv, xv))
            .rounds_cap_hits);
  };
  const index_t k = x.rows;
  backend::View<T> xs = x.columns(first, last);
  backend::CView<T> bs = numer.columns(first, last);
  if (rule.l1 == 0 && rule.l2 == 0) return solve(g, bs, xs);
  std::vector<T> own_g, own_b;
  std::vector<T>& gp = scratch != nullptr ? scratch->g : own_g;
  std::vector<T>& bp = scratch != nullptr ? scratch->b : own_b;
  gp.resize(to_size(k * k));
  bp.resize(to_size(k * std::max<index_t>(bs.cols, 0)));
  for (index_t q = 0; q < k; ++q)
    for (index_t p = 0; p < k; ++p)
      gp[to_size(p + q * k)] = saturated<T>(static_cast<double>(g(p, q)) + (p == q ? rule.l2 : 0.0));
  for (index_t c = 0; c < bs.cols; ++c)
    for (index_t l = 0; l < k; ++l) bp[to_size(l + c * k)] = saturated<T>(static_cast<double>(bs(l, c)) - rule.l1);
  const backend::CView<T> gv{gp.data(), k, k, std::max<index_t>(k, 1)};
  const backend::CView<T> bv{bp.data(), k, bs.cols, std::max<index_t>(k, 1)};
  return solve(gv, bv, xs);
}

}  // namespace dnmf::solvers
