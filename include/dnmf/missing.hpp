// dnmf: missing values. A weight (mask) matrix beside A, NaN entries of a dense A, or the unstored entries of a
// sparse A taken as missing: only the observed entries are fitted (weighted NMF, docs/masked.md).
#pragma once

#include <optional>
#include <string>

#include "dnmf/source.hpp"

namespace dnmf {

/// What the unstored entries of a sparse A are.
enum class Unstored {
  zero,     ///< observed zeros (the default: today's meaning of a sparse matrix)
  missing,  ///< not observed (recommender data): only the stored entries are fitted
};

/// Which entries of A are observed, and with which weight. Weight 0 is missing; a positive weight multiplies the
/// entry's squared error (Frobenius) or divergence (KL). Without any of these, every entry has weight 1.
struct MissingValues {
  /// Weights of A's shape (dense or sparse; a sparse mask's unstored entries are 0, i.e. missing). Entries must
  /// be finite and >= 0.
  std::optional<Source> mask;
  /// NaN entries of A are missing (otherwise a NaN is an error, as without this option).
  bool nan_missing = false;
  /// Sparse A only: whether unstored entries are observed zeros or missing.
  Unstored unstored = Unstored::zero;

  /// True when anything is asked for: the masked solver runs.
  [[nodiscard]] bool any() const { return mask.has_value() || nan_missing || unstored == Unstored::missing; }
};

/// Parses "zero" or "missing" (throws dnmf::UsageError naming the text otherwise).
Unstored parse_unstored(const std::string& text);
/// "zero" or "missing".
std::string to_string(Unstored u);

}  // namespace dnmf
