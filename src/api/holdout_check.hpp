// The hold-out folds' one failure that depends on nothing but the seed, the fraction and the number of observed
// entries: a fold that hides none or all of them. nmfk --cv checks it before its sweep, which may take hours.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dnmf/index.hpp"
#include "dnmf/options.hpp"
#include "dnmf/source.hpp"

namespace dnmf::api {

/// Throws UsageError naming `name` when a fold of `folds` drawn with `seed` would hide none, or every one, of
/// `observed` entries at the fraction `holdout` (the draw cross_validate makes: entry e of fold f is held out
/// when uniform01(seed, Stream::holdout, f * observed + e) <= holdout). Stops at the first entry of each kind,
/// so it costs about 1 / holdout draws per fold. With `nonzero` (one flag per observed entry: its value is not
/// zero), a fold must also hide a non-zero entry (a held-out error relative to all-zero entries is 0 / 0) and keep
/// one (only zeros leave nothing to fit); it then stops at the first non-zero entry of each kind. `cancel`
/// (FactorOptions::cancel) is asked before each fold: millions of folds are accepted, and Ctrl-C must stop them
/// (dnmf::Cancelled).
void check_holdout_folds(const std::string& name, std::uint64_t seed, int folds, index_t observed, double holdout,
                         const std::vector<char>* nonzero = nullptr, const std::function<bool()>& cancel = {});

/// check_holdout_folds on the observed entries of `source` (read whole, on this process) with their values, as
/// cross_validate draws its folds: nmfk --cv calls it before its sweep, so that a fold hiding only zeros is
/// refused before hours of NMFk jobs rather than after them.
template <class T>
void check_holdout_values(const Source& source, const FactorOptions& factor, int folds, double holdout);

/// UsageError when `options` ask for extrapolation, which the cross-validation's masked fits cannot do.
void check_not_extrapolated(const FactorOptions& options);

}  // namespace dnmf::api
