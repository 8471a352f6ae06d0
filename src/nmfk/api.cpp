// The small parts of the public NMFk API: names, the k range, in-memory blocks, the one-process entry.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/source.hpp"
#include "nmfk/provider.hpp"

namespace dnmf {
namespace {

long long parse_count(const std::string& field, const std::string& text) {
  if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos || field.size() > 12)
    throw UsageError("--k: expected FIRST:LAST[:STEP] or K with whole numbers, got '" + text + "'");
  return std::stoll(field);
}

}  // namespace

Perturbation parse_perturbation(const std::string& name) {
  if (name == "uniform") return Perturbation::uniform;
  if (name == "poisson") return Perturbation::poisson;
  throw UsageError("perturbation '" + name + "' is not one of: uniform, poisson");
}

SelectionRule parse_selection_rule(const std::string& name) {
  if (name == "silhouette") return SelectionRule::silhouette;
  if (name == "wilcoxon") return SelectionRule::wilcoxon;
  throw UsageError("selection rule '" + name + "' is not one of: silhouette, wilcoxon");
}

std::string to_string(Perturbation p) { return p == Perturbation::uniform ? "uniform" : "poisson"; }
std::string to_string(SelectionRule r) { return r == SelectionRule::silhouette ? "silhouette" : "wilcoxon"; }

std::vector<index_t> parse_k_range(const std::string& text) {
  std::vector<std::string> fields;
  std::size_t begin = 0;
  while (true) {
    const std::size_t colon = text.find(':', begin);
    fields.push_back(text.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin));
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  if (fields.size() > 3) throw UsageError("--k: expected FIRST:LAST[:STEP] or K, got '" + text + "'");
  const long long first = parse_count(fields[0], text);
  const long long last = fields.size() > 1 ? parse_count(fields[1], text) : first;
  const long long step = fields.size() > 2 ? parse_count(fields[2], text) : 1;
  if (first < 1) throw UsageError("--k: k must be >= 1, got '" + text + "'");
  if (last < first) throw UsageError("--k: the range '" + text + "' is empty (LAST < FIRST)");
  if (step < 1) throw UsageError("--k: the step must be >= 1, got '" + text + "'");
  if ((last - first) / step >= 10000) throw UsageError("--k: the range '" + text + "' has too many values");
  std::vector<index_t> ks;
  for (long long k = first; k <= last; k += step) ks.push_back(static_cast<index_t>(k));
  return ks;
}

template <class T>
NmfkResult<T> nmfk(const MatrixRef<T>& a, const NmfkOptions& options) {
  if (options.factor.missing.any())
    throw UsageError(
        "nmfk input: missing values (a mask, NaN as missing, unstored as missing) are not supported by "
        "nmfk yet");
  // The cross-validation lives in the api layer above this one, behind the Source entry point.
  if (options.cv)
    throw UsageError("nmfk input: cv needs the Source entry point (dnmf::nmfk(Source::dense(...), options))");
  detail::check_view("nmfk input", a);  // a view's structure is the caller's, as factorize() checks it
  std::visit([](const auto& view) { io::check_nonnegative<T>(view, "nmfk input"); }, a);
  dist::SingleCommunicator self;
  const BlockProvider<T> provider = [&a](const BlockRequest& r) { return slice_block<T>(a, r); };
  return nmfk<T>(rows_of(a), cols_of(a), provider, options, self);
}

template NmfkResult<float> nmfk<float>(const MatrixRef<float>&, const NmfkOptions&);
template NmfkResult<double> nmfk<double>(const MatrixRef<double>&, const NmfkOptions&);

}  // namespace dnmf
