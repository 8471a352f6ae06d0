// The words of a bad entry's message (describe_bad_entry), shared with the messages that describe other values
// the same way (a mask's weights) and with the commands that replace a part of them (nmfk's NaN advice).
#pragma once

#include <string>
#include <string_view>

#include "dnmf/index.hpp"

namespace dnmf::io {

/// The advice a NaN entry's message carries: where NaN can be taken as missing. Commands that cannot take
/// missing values (nmfk) put their own in its place.
inline constexpr std::string_view kNanMissingHint =
    "(NaN entries of A can be fitted as missing values: --missing nan, MissingValues::nan_missing in C++, or "
    "dnmf.NMF().fit(X, missing='nan'))";

/// `value` in its shortest round-trip form (-0.5, -1e-09, nan).
template <class T>
[[nodiscard]] std::string shortest_repr(T value);

/// What a float32 narrowing marker (io/narrow.hpp: 1 overflow, 2 underflow, 3 negative) means and what to do,
/// ending in "or rescale the <rescaled>" (a negative value: that the matrix, or a "mask"'s weights, must not be).
[[nodiscard]] std::string describe_narrowed(int marker, const char* rescaled);

}  // namespace dnmf::io
