// BPP: alternating non-negative least squares, each column x of H (or of Wᵀ) solved exactly,
//
//   x <- argmin_{x >= 0} 0.5 xᵀ (G + l2 I) x - (b - l1 1)ᵀ x      with b = Wᵀa, G = WᵀW,
//
// by block principal pivoting (nnls_bpp, Kim & Park 2011). The penalties only shift G's diagonal and b, so
// they are folded into copies of both before the solve.
#pragma once

#include <algorithm>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nnls.hpp"
#include "solvers/nnls_buffers.hpp"

namespace dnmf::solvers {

/// Solves columns [first, last) of x in place (x's old values pick the first passive sets). Returns the
/// columns that reached the pivoting round cap. `buffers`: NNLS arrays kept by a caller that solves one small
/// problem after another (the masked BPP, one G per column); the answer is the same without them.
template <class T>
int bpp_update(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
               index_t first, index_t last, NnlsBuffers* buffers = nullptr) {
  const auto solve = [&](backend::CView<T> gv, backend::CView<T> bv, backend::View<T> xv) {
    return static_cast<int>(
        (buffers != nullptr ? nnls_bpp<T>(gv, bv, xv, NnlsOptions{}, *buffers) : nnls_bpp<T>(gv, bv, xv))
            .rounds_cap_hits);
  };
  const index_t k = x.rows;
  backend::View<T> xs = x.columns(first, last);
  backend::CView<T> bs = numer.columns(first, last);
  if (rule.l1 == 0 && rule.l2 == 0) return solve(g, bs, xs);
  std::vector<T> gp(to_size(k * k));
  std::vector<T> bp(to_size(k * std::max<index_t>(bs.cols, 0)));
  for (index_t q = 0; q < k; ++q)
    for (index_t p = 0; p < k; ++p)
      gp[to_size(p + q * k)] = static_cast<T>(static_cast<double>(g(p, q)) + (p == q ? rule.l2 : 0.0));
  for (index_t c = 0; c < bs.cols; ++c)
    for (index_t l = 0; l < k; ++l) bp[to_size(l + c * k)] = static_cast<T>(static_cast<double>(bs(l, c)) - rule.l1);
  const backend::CView<T> gv{gp.data(), k, k, std::max<index_t>(k, 1)};
  const backend::CView<T> bv{bp.data(), k, bs.cols, std::max<index_t>(k, 1)};
  return solve(gv, bv, xs);
}

}  // namespace dnmf::solvers
