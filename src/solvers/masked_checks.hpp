// The checks of a masked problem's input and their messages, the same whichever solver reads the entries
// (whole matrix, grid block, streamed tiles): a bad weight, a bad observed entry, nothing to fit
// (docs/masked.md, "What is checked"). Places are A's, 0-based.
#pragma once

#include <cmath>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/entry_text.hpp"
#include "io/narrow.hpp"

namespace dnmf::solvers {

/// Whether entry a of A is missing by `--missing nan`: a NaN the file holds, not the marker of a finite value
/// that float32 cannot hold (io/narrow.hpp), which is bad input however NaN entries are taken.
template <class T>
[[nodiscard]] bool missing_as_nan(bool nan_missing, T a) {
  return nan_missing && std::isnan(a) && io::narrow_marker(a) == 0;
}

/// Throws DataError naming `name` and (i, j) unless the weight w is finite and >= 0.
template <class T>
void check_weight(const std::string& name, index_t i, index_t j, T w) {
  if (w >= 0 && std::isfinite(w)) return;
  const int marker = io::narrow_marker(w);
  throw DataError(name + ": weight at row " + std::to_string(i) + ", column " + std::to_string(j) + " (0-based) is " +
                  (marker != 0 ? io::describe_narrowed(marker, "mask")
                               : io::shortest_repr(w) + "; mask weights must be finite and >= 0 (0 = missing)"));
}

/// Throws DataError naming `name` and (i, j) unless the observed entry a is finite and >= 0 (a NaN's message
/// points to --missing nan: describe_bad_entry's hint, once).
template <class T>
void check_observed_entry(const std::string& name, index_t i, index_t j, T a) {
  if (a >= 0 && std::isfinite(a)) return;
  throw DataError(name + ": " + io::describe_bad_entry(i, j, a));
}

/// Throws DataError naming `name` when nothing is observed, every observed entry is zero or the weights' sum Σ w
/// overflows; NumericalError when Σ w a² overflows.
inline void require_observed(index_t observed, double weighted_squared_norm, double weighted_sum, double weight_sum,
                             const std::string& name) {
  if (observed == 0) throw DataError(name + ": no entry is observed (every weight is 0 or every entry missing)");
  // Weights of 1e305 (each finite) summed to inf: the division guard, scaled by the mean weight, became infinite,
  // and MU returned W·H = 0 and HALS a wrong fit with exit 0 and "converged".
  if (!std::isfinite(weight_sum))
    throw DataError(name +
                    ": the mask's weights sum beyond double precision's range (about 1.8e308); divide the weights "
                    "by a large constant first (the fit depends on their ratios, with penalties on their scale)");
  const bool unit_weights = weight_sum == static_cast<double>(observed);
  if (!(weighted_squared_norm > 0) && weighted_sum > 0)  // as solve() says it: entries below about 1e-162
    throw DataError(name +
                    ": the observed entries are too small to factorise: their squares underflow to zero; multiply "
                    "the matrix by a large constant first");
  if (!(weighted_squared_norm > 0))
    throw DataError(name + ": every observed entry is zero: there is nothing to factorise");
  if (!std::isfinite(weighted_squared_norm))
    throw NumericalError(name + ": the weighted sum of the squared entries overflows double precision: rescale the " +
                         (unit_weights ? std::string("matrix, e.g. divide it by its largest entry")
                                       : std::string("matrix or the mask's weights, e.g. divide them by their "
                                                     "largest entry")));
}

}  // namespace dnmf::solvers
