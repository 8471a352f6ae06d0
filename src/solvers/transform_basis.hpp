// dnmf internal: the basis W and the penalty a caller hands to transform(), checked for both transforms.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::solvers {

/// Wᵀ (k x m) of the caller's W (m x k). The basis is given by the caller, so it is checked like input data:
/// DataError naming the first negative or non-finite entry.
template <class T>
DenseMatrix<T> checked_basis_transpose(DenseView<const T> w) {
  DenseMatrix<T> wt(w.cols, w.rows);
  for (index_t l = 0; l < w.cols; ++l)
    for (index_t i = 0; i < w.rows; ++i) {
      const T v = w(i, l);
      if (!(std::isfinite(static_cast<double>(v)) && v >= T(0)))
        throw DataError("transform: W entry at row " + std::to_string(i) + ", column " + std::to_string(l) +
                        " is negative or not finite");
      wt(l, i) = v;
    }
  return wt;
}

/// Per-component penalties: those on component l's coefficients are l1[l] (Σ_j h_lj) and l2[l] (½ Σ_j h_lj²).
struct ComponentPenalties {
  std::vector<double> l1, l2;
};

/// The problem a transform solves, each component of the basis scaled by a power of two of its own. A basis whose
/// entries were all near 1e-160 (float32: 1e-25) made WᵀW underflow, so that the NNLS took every component for
/// dead and returned H = 0; one near 1e160 (1e20) overflowed it; and a component more than 1/eps smaller than
/// another (1e-8 in float32, 1e-17 in float64) was taken for dead beside it and the others' coefficients were
/// fitted without it. With the column l of W scaled by 2^e_l the problem is the same one in hs_l = 2^-e_l·h_l,
/// whose penalties are 2^e_l·l1 and 2^2e_l·l2. A power of two scales every product and sum exactly (short of
/// under- or overflow, which is what it avoids), so the answer is the one the basis's own scale would give.
template <class T>
struct ScaledBasis {
  DenseMatrix<T> wt;           ///< Wᵀ (k x m), its row l times 2^e_l
  std::vector<int> exponents;  ///< e_l
  ComponentPenalties penalty;  ///< the penalties on hs
};

/// checked_basis_transpose scaled as ScaledBasis says: e_l brings the largest entry of W's column l to [0.5, 1),
/// except that 2^2e_l·l2 stays at most about 2, the scaled WᵀW's own scale. Where l2 outweighs a component's
/// w_lᵀw_l, h_l is about w_lᵀA / l2 and a larger e_l would push hs_l = 2^-e_l·h_l below T's range (a basis of
/// 1e-200 with l2 = 0.3 gave H = 0), or overflow 2^2e_l·l2 (capped, it gave coefficients 1e11 times too large);
/// the underflow of w_lᵀw_l then changes nothing. e_l = 0 for a column of zeros.
template <class T>
ScaledBasis<T> scaled_basis_transpose(DenseView<const T> w, const TransformPenalty& penalty) {
  const index_t k = w.cols;
  ScaledBasis<T> out{checked_basis_transpose(w),
                     std::vector<int>(to_size(k), 0),
                     {std::vector<double>(to_size(k), penalty.l1), std::vector<double>(to_size(k), penalty.l2)}};
  DenseMatrix<T>& wt = out.wt;
  for (index_t l = 0; l < k; ++l) {
    T largest = T(0);
    for (index_t i = 0; i < wt.cols(); ++i) largest = std::max(largest, wt(l, i));
    if (largest == T(0)) continue;
    int largest_exponent = 0;
    (void)std::frexp(static_cast<double>(largest), &largest_exponent);
    int e = -largest_exponent;
    if (penalty.l2 > 0) e = std::min(e, -std::ilogb(penalty.l2) / 2);  // l2 < 2^(ilogb + 1): 2^2e·l2 < 2^2
    if (e == 0) continue;
    out.exponents[to_size(l)] = e;
    for (index_t i = 0; i < wt.cols(); ++i) wt(l, i) = std::ldexp(wt(l, i), e);
    // l1 may pass double's range for a tiny component: every p − l1 is then negative, as it was, and h_l zero.
    out.penalty.l1[to_size(l)] = std::min(std::ldexp(penalty.l1, e), std::numeric_limits<double>::max());
    out.penalty.l2[to_size(l)] = std::ldexp(penalty.l2, 2 * e);
  }
  return out;
}

/// H = diag(2^e_l) · hs in place (the coefficients of the caller's basis). NumericalError when they pass T's range,
/// or when the largest of them falls below its normal numbers while the scaled answer had some (all of them lost).
template <class T>
void unscale_coefficients(DenseMatrix<T>& h, const std::vector<int>& exponents) {
  const char* type = std::is_same_v<T, float> ? "float32" : "float64";
  T largest = T(0), largest_scaled = T(0);
  for (index_t j = 0; j < h.cols(); ++j)
    for (index_t l = 0; l < h.rows(); ++l) {
      T& v = h(l, j);
      largest_scaled = std::max(largest_scaled, v);
      v = std::ldexp(v, exponents[to_size(l)]);
      if (!std::isfinite(v))
        throw NumericalError(std::string("transform: the coefficients of this basis exceed ") + type +
                             "'s range (component " + std::to_string(l) +
                             "'s entries are far smaller than the data's); rescale W or A");
      largest = std::max(largest, v);
    }
  if (largest_scaled > T(0) && largest < std::numeric_limits<T>::min())
    throw NumericalError(std::string("transform: the coefficients fall below ") + type +
                         "'s normal range (the data are far smaller than the basis, or the L2 penalty far larger); "
                         "rescale W or A, or lower the penalty");
}

/// Refuses data whose squares leave double's range, as factor() refuses them: the reported error (and, below
/// 1e-150, the products) would be meaningless. `squared_norm` and `sum`: Σ a² and Σ a (or Σ w a² and Σ a) over
/// `count` entries; `weighted`: a mask's weights other than 1 scale the squared norm (then the weights are named
/// where it overflows, and the entries' own mean, not the weighted squares, says whether they are too small:
/// ordinary data with weights of 1e-305 solve as well as with weights of 1).
inline void check_transform_data_scale(double squared_norm, double sum, double count, const std::string& name,
                                       bool weighted) {
  if (!std::isfinite(squared_norm))
    throw NumericalError(
        "transform: " + name +
        (weighted ? ": the weighted squares w·a² of its observed entries (the mask's weights times the squared "
                    "entries) overflow double precision; divide the matrix or the weights by a large constant first"
                  : ": the squares of its entries overflow double precision (entries near 1e154 or above); divide "
                    "the matrix by a large constant first"));
  if (!(sum > 0 && count > 0)) return;
  const double mean = sum / count, rms = std::sqrt(squared_norm / count);
  // Squares of entries near 1e-250 are zero: then the mean says what the data are.
  const bool by_mean = weighted || squared_norm == 0;
  if ((by_mean ? mean : rms) >= 1e-150) return;
  char text[48];
  std::snprintf(text, sizeof text, by_mean ? "mean %.3g" : "root mean square %.3g", by_mean ? mean : rms);
  throw DataError("transform: " + name + ": its entries are too small (" + text +
                  "): their squares fall below double's smallest normal number (2.2e-308) and lose digits; multiply "
                  "the matrix by a large constant first");
}

/// UsageError unless both penalty terms are finite and >= 0.
inline void check_transform_penalty(const TransformPenalty& p) {
  if (!(std::isfinite(p.l1) && p.l1 >= 0 && std::isfinite(p.l2) && p.l2 >= 0))
    throw UsageError("transform: the penalties must be finite and >= 0 (l1 " + std::to_string(p.l1) + ", l2 " +
                     std::to_string(p.l2) + ")");
}

}  // namespace dnmf::solvers
