// dnmf internal: what a numerical breakdown's message adds, shared by the unmasked and the masked loops.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <type_traits>

#include "dnmf/options.hpp"

namespace dnmf::solvers {

/// The likely cause of a breakdown, with its remedy: a penalty so large that the objective overflows (KL with
/// --l1-w 1e308), or in float32 the data's range (an entry of 1e19 among entries of 1 overflowed KL's ratios).
template <class T>
std::string breakdown_hint(const Penalties& p) {
  const double largest = std::max({p.l1_w, p.l2_w, p.l1_h, p.l2_h});
  if (largest > 1e100) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", largest);
    return std::string(" (a penalty of ") + text + " makes the objective overflow: use a smaller one)";
  }
  return std::is_same_v<T, float> ? " (float32's range is the usual cause: run in float64, --precision f64)" : "";
}

}  // namespace dnmf::solvers
