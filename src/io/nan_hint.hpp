// The hint a NaN entry's message carries (describe_bad_entry): where NaN can be taken as missing. Commands that
// cannot take missing values (nmfk) put their own advice in its place.
#pragma once

#include <string_view>

namespace dnmf::io {

inline constexpr std::string_view kNanMissingHint =
    "(NaN entries of A can be fitted as missing values: --missing nan, MissingValues::nan_missing in C++, or "
    "dnmf.NMF().fit(X, missing='nan'))";

}  // namespace dnmf::io
