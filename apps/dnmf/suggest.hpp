// dnmf CLI: "did you mean" for a mistyped subcommand.
#pragma once

#include <string>
#include <vector>

namespace dnmf::cli {

/// The candidate nearest to `word` by edit distance, or "" when none is close enough to be a likely typo.
[[nodiscard]] std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace dnmf::cli
