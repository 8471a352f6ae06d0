// dnmf internal: the basis W and the penalty a caller hands to transform(), checked for both transforms.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

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

/// The problem a transform solves, its basis scaled by a power of two: a basis whose entries are all near 1e-160
/// (float32: 1e-25) made WᵀW underflow, so that the NNLS took every component for dead and returned H = 0, and
/// one near 1e160 (1e20) overflowed it. With Ws = 2^e·W the problem is the same one in hs = 2^-e·h, whose
/// penalties are 2^e·l1 and 2^2e·l2. A power of two scales every product and sum exactly (short of under- or
/// overflow, which is what it avoids), so the answer is the one the basis's own scale would give.
template <class T>
struct ScaledBasis {
  DenseMatrix<T> wt;         ///< 2^e · Wᵀ (k x m)
  int exponent = 0;          ///< e
  TransformPenalty penalty;  ///< the penalties on hs
};

/// checked_basis_transpose scaled as ScaledBasis says: e brings W's largest entry to [0.5, 1), except that 2^2e·l2
/// stays at most about 2, the scaled WᵀW's own scale. Where l2 outweighs WᵀW, h is about WᵀA / l2 and a larger e
/// would push hs = 2^-e·h below T's range (a basis of 1e-200 with l2 = 0.3 gave H = 0), or overflow 2^2e·l2
/// (capped, it gave coefficients 1e11 times too large); WᵀW's underflow then changes nothing. e = 0 for a basis
/// of zeros.
template <class T>
ScaledBasis<T> scaled_basis_transpose(DenseView<const T> w, const TransformPenalty& penalty) {
  ScaledBasis<T> out{checked_basis_transpose(w), 0, penalty};
  T largest = T(0);
  for (const T v : out.wt.storage()) largest = std::max(largest, v);
  if (largest == T(0)) return out;
  int largest_exponent = 0;
  (void)std::frexp(static_cast<double>(largest), &largest_exponent);
  int e = -largest_exponent;
  if (penalty.l2 > 0) e = std::min(e, -std::ilogb(penalty.l2) / 2);  // l2 < 2^(ilogb + 1): 2^2e·l2 < 2^2
  if (e == 0) return out;
  out.exponent = e;
  for (T& v : out.wt.storage()) v = std::ldexp(v, e);
  // l1 may pass double's range for a tiny basis: every p − l1 is then negative, as it was, and h zero.
  out.penalty.l1 = std::min(std::ldexp(penalty.l1, e), std::numeric_limits<double>::max());
  out.penalty.l2 = std::ldexp(penalty.l2, 2 * e);
  return out;
}

/// H = 2^e · hs in place (the coefficients of the caller's basis). NumericalError when they pass T's range, or
/// when all of them fall below its normal numbers (a huge basis for tiny data), where they would keep few digits.
template <class T>
void unscale_coefficients(DenseMatrix<T>& h, int exponent) {
  if (exponent == 0) return;
  const char* type = std::is_same_v<T, float> ? "float32" : "float64";
  T largest = T(0);
  for (T& v : h.storage()) {
    v = std::ldexp(v, exponent);
    if (!std::isfinite(v))
      throw NumericalError(std::string("transform: the coefficients of this basis exceed ") + type +
                           "'s range (its entries are far smaller than the data's); rescale W or A");
    largest = std::max(largest, v);
  }
  if (largest > T(0) && largest < std::numeric_limits<T>::min())
    throw NumericalError(std::string("transform: the coefficients of this basis fall below ") + type +
                         "'s normal range (its entries are far larger than the data's); rescale W or A");
}

/// UsageError unless both penalty terms are finite and >= 0.
inline void check_transform_penalty(const TransformPenalty& p) {
  if (!(std::isfinite(p.l1) && p.l1 >= 0 && std::isfinite(p.l2) && p.l2 >= 0))
    throw UsageError("transform: the penalties must be finite and >= 0 (l1 " + std::to_string(p.l1) + ", l2 " +
                     std::to_string(p.l2) + ")");
}

}  // namespace dnmf::solvers
