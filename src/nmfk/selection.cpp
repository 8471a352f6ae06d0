#include "nmfk/selection.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nmfk/wilcoxon.hpp"

namespace dnmf::rank_search {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// v with as few digits (3 or more) as show it on the same side of `limit` as it is: a minimum silhouette of
// 0.9999148 against a threshold of 0.99999 read "1.000", the message contradicting itself.
std::string against(double v, double limit) {
  char buffer[64];
  for (int digits = 3; digits < 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, v);
    const double shown = std::strtod(buffer, nullptr);
    if ((shown < limit) == (v < limit) && (shown > limit) == (v > limit)) return buffer;
  }
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string criteria_text(const SelectionCriteria& c) {
  std::string text = "minimum silhouette >= " + format("%g", c.sil_threshold);
  if (c.err_threshold) text += " and relative error <= " + format("%g", *c.err_threshold);
  return text;
}

}  // namespace

bool accepted(const RankFigures& f, const SelectionCriteria& c) {
  if (!(f.min_silhouette >= c.sil_threshold)) return false;
  return !c.err_threshold || f.rel_error <= *c.err_threshold;
}

NmfkSelection select_rank(const std::vector<RankFigures>& input, const SelectionCriteria& criteria) {
  std::vector<RankFigures> ranks(input);
  std::sort(ranks.begin(), ranks.end(), [](const RankFigures& a, const RankFigures& b) { return a.k < b.k; });
  NmfkSelection s;
  s.decided_by = criteria.rule;
  std::vector<const RankFigures*> passing;
  for (const auto& f : ranks)
    if (accepted(f, criteria)) passing.push_back(&f);

  if (passing.empty()) {
    const RankFigures* best = nullptr;
    for (const auto& f : ranks)
      if (best == nullptr || f.min_silhouette >= best->min_silhouette) best = &f;
    if (best == nullptr) {
      s.message = "no k was evaluated";
      return s;
    }
    s.best_candidate = best->k;
    s.message =
        "no k passed (" + criteria_text(criteria) + "); best candidate k=" + std::to_string(best->k) +
        " (minimum silhouette " + against(best->min_silhouette, criteria.sil_threshold) + ", relative error " +
        (criteria.err_threshold ? against(best->rel_error, *criteria.err_threshold) : format("%.3g", best->rel_error)) +
        ")";
    return s;
  }

  s.silhouette_k = passing.back()->k;
  // Rule (b): walk up through the accepted k while each step lowers the per-column errors significantly.
  const RankFigures* current = passing.front();
  for (std::size_t i = 1; i < passing.size(); ++i) {
    const RankFigures* next = passing[i];
    WilcoxonStep step;
    step.from_k = current->k;
    step.to_k = next->k;
    const SignedRankResult r = wilcoxon_signed_rank(current->column_errors, next->column_errors, Alternative::greater);
    step.statistic = r.statistic;
    step.pairs = r.n;
    step.p_value = r.p_value;
    step.exact = r.exact;
    step.significant = r.p_value < criteria.alpha;
    s.wilcoxon_steps.push_back(step);
    if (!step.significant) break;
    current = next;
  }
  s.wilcoxon_k = current->k;
  s.selected_k = criteria.rule == SelectionRule::silhouette ? s.silhouette_k : s.wilcoxon_k;
  s.best_candidate = *s.selected_k;

  const std::string rule_a = "silhouette rule (largest k with " + criteria_text(criteria) + ")";
  const std::string rule_b = "Wilcoxon rule (per-column errors, p < " + format("%g", criteria.alpha) + ")";
  s.message = "selected k=" + std::to_string(*s.selected_k) + " by the " +
              (criteria.rule == SelectionRule::silhouette ? rule_a : rule_b) + "; the " +
              (criteria.rule == SelectionRule::silhouette ? "Wilcoxon" : "silhouette") + " rule gives k=" +
              std::to_string(criteria.rule == SelectionRule::silhouette ? *s.wilcoxon_k : *s.silhouette_k);
  return s;
}

}  // namespace dnmf::rank_search
