// See keyword_messages.hpp.

#include "keyword_messages.hpp"

#include <regex>
#include <utility>

namespace dnmf::python {
namespace {

/// How a flag's value is written after its keyword.
enum class Value {
  none,    ///< the keyword alone, whatever follows
  text,    ///< a quoted word: init='nndsvd'
  number,  ///< as given: n_threads=8
  flag,    ///< a switch: extrapolate=True
};

struct Keyword {
  const char* flag;
  const char* keyword;
  Value value;
};

// Only the values a flag takes count as its value (`use --mask or missing='nan'`: "or" is not the mask).
constexpr Keyword kKeywords[] = {
    {"precision", "precision", Value::text},
    {"missing", "missing", Value::text},
    {"unstored", "unstored", Value::text},
    {"init", "init", Value::text},
    {"algo", "algorithm", Value::text},
    {"backend", "backend", Value::text},
    {"grid", "grid", Value::text},
    {"perturbation", "perturbation", Value::text},
    {"threads", "n_threads", Value::number},
    {"groups", "groups", Value::number},
    {"perturbations", "perturbations", Value::number},
    {"seed", "seed", Value::number},
    {"epsilon", "epsilon", Value::number},
    {"sil-threshold", "sil_threshold", Value::number},
    {"err-threshold", "err_threshold", Value::number},
    {"accept-factor", "accept_factor", Value::number},
    {"cv-folds", "cv_folds", Value::number},
    {"folds", "cv_folds", Value::number},
    {"cv-holdout", "cv_holdout", Value::number},
    {"holdout", "cv_holdout", Value::number},
    {"memory-budget", "memory_budget", Value::none},
    {"mask", "mask", Value::none},
    {"k", "k_range", Value::none},
    {"restart", "restart", Value::flag},
    {"extrapolate", "extrapolate", Value::flag},
    {"tf32", "tf32", Value::flag},
    {"cv", "cv", Value::flag},
};

const Keyword* keyword_of(const std::string& flag) {
  for (const Keyword& k : kKeywords)
    if (flag == k.flag) return &k;
  return nullptr;
}

bool is_value(const Keyword& k, const std::string& word) {
  static const std::regex text("[a-z][a-z0-9]*|[0-9]+x[0-9]+");
  static const std::regex number("[-+]?[0-9.]+(e[-+]?[0-9]+)?");
  switch (k.value) {
    case Value::text:
      return std::regex_match(word, text);
    case Value::number:
      return std::regex_match(word, number);
    default:
      return false;
  }
}

}  // namespace

std::string with_python_keywords(std::string message) {
  // Both hold-out flags name the one keyword; the output folder's flags are not of the --name form.
  static const std::pair<std::string, std::string> whole[] = {{"(--holdout, --cv-holdout)", "(cv_holdout)"},
                                                              {"(e.g. -o out)", "(e.g. output_dir='out')"},
                                                              {"-o/--output:", "output_dir:"}};
  for (const auto& [from, to] : whole)
    for (auto at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  static const std::regex flag("--([a-z][a-z0-9-]*)( ([^ ,;:()]+))?");
  std::string out;
  auto last = message.cbegin();
  for (std::sregex_iterator it(message.begin(), message.end(), flag), end; it != end; ++it) {
    const std::smatch& m = *it;
    const Keyword* k = keyword_of(m[1].str());
    if (k == nullptr) continue;  // no keyword: left as the CLI's flag
    out.append(last, m[0].first);
    const bool valued = m[3].matched && is_value(*k, m[3].str());
    out += k->keyword;
    if (k->value == Value::flag) out += "=True";
    if (valued) out += k->value == Value::text ? "='" + m[3].str() + "'" : "=" + m[3].str();
    last = valued ? m[0].second : m[1].second;
  }
  out.append(last, message.cend());
  return out;
}

}  // namespace dnmf::python
