// The two rules that pick k from the per-k figures (DESIGN §6): (a) the largest accepted k, accepted meaning
// minimum silhouette ≥ threshold (and relative error ≤ threshold when one is given); (b) starting from the
// smallest accepted k, step to the next accepted k while its per-column errors are significantly lower
// (one-sided Wilcoxon signed-rank test, p < alpha), as in the NMFk literature.
#pragma once

#include <optional>
#include <vector>

#include "dnmf/nmfk.hpp"

namespace dnmf::rank_search {

/// The figures of one k the rules look at.
struct RankFigures {
  index_t k = 0;
  double min_silhouette = 0;
  double rel_error = 0;
  std::vector<double> column_errors;
};

/// What the thresholds and the deciding rule are.
struct SelectionCriteria {
  double sil_threshold = 0.75;
  std::optional<double> err_threshold;
  SelectionRule rule = SelectionRule::silhouette;
  double alpha = 0.05;
};

/// Whether k passes rule (a)'s thresholds.
bool accepted(const RankFigures& figures, const SelectionCriteria& criteria);

/// Applies both rules to `ranks` (any order). Never throws for an empty or all-rejected list: selected_k is
/// then empty and best_candidate names the k with the highest minimum silhouette (larger k on ties).
NmfkSelection select_rank(const std::vector<RankFigures>& ranks, const SelectionCriteria& criteria);

}  // namespace dnmf::rank_search
