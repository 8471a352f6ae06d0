// See dnmf/cross_validation.hpp. Every fold is a masked problem: the base weights (mask, NaN, unstored) with the
// fold's held-out entries set to 0, fitted by the masked solver for each k; the held-out entries are then scored.

#include "dnmf/cross_validation.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "api/context_state.hpp"
#include "api/held_matrix.hpp"
#include "api/holdout_check.hpp"
#include "dist/communicator.hpp"
#include "dnmf/error.hpp"
#include "io/entry_text.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "util/options_json.hpp"
#include "util/random.hpp"
#include "util/thread_count.hpp"

namespace dnmf {
namespace {

/// An observed entry of the base problem.
struct Observed {
  index_t i, j;
  double a, w;
};

/// The base problem's observed entries, row by row (A's row i is Aᵀ's column i: the W half's lists).
template <class T>
std::vector<Observed> observed_entries(const solvers::MaskedProblem<T>& p) {
  std::vector<Observed> out;
  out.reserve(static_cast<std::size_t>(p.observed));
  const solvers::MaskedHalf<T>& h = p.w_half;  // n x m: column i is A's row i
  for (index_t i = 0; i < h.cols; ++i) {
    if (h.dense) {
      for (index_t j = 0; j < h.rows; ++j) {
        const double w = static_cast<double>(h.weights(j, i));
        if (w > 0) out.push_back({i, j, static_cast<double>(h.weighted(j, i)) / w, w});
      }
    } else {
      for (index_t e = h.ptr[to_size(i)]; e < h.ptr[to_size(i) + 1]; ++e) {
        const double w = static_cast<double>(h.weight[to_size(e)]);
        out.push_back({i, h.row[to_size(e)], static_cast<double>(h.weighted_value[to_size(e)]) / w, w});
      }
    }
  }
  return out;
}

/// The fold's mask: the base weights with the held-out entries at 0. Dense when the base problem is, else CSR
/// over the observed entries (a sparse mask's unstored entries are missing, as the base's were).
template <class T>
struct FoldMask {
  DenseMatrix<T> dense;
  std::vector<index_t> indptr;
  std::vector<col_index_t> indices;
  std::vector<T> values;
  MatrixRef<T> ref;
};

template <class T>
FoldMask<T> fold_mask(const solvers::MaskedProblem<T>& p, const std::vector<Observed>& entries,
                      const std::vector<char>& held) {
  FoldMask<T> f;
  if (p.h_half.dense) {
    f.dense = DenseMatrix<T>(p.m, p.n, T(0));
    for (std::size_t e = 0; e < entries.size(); ++e)
      if (held[e] == 0) f.dense(entries[e].i, entries[e].j) = static_cast<T>(entries[e].w);
    f.ref = DenseView<const T>(f.dense.view());
    return f;
  }
  f.indptr.assign(to_size(p.m) + 1, 0);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    ++f.indptr[to_size(entries[e].i) + 1];
    f.indices.push_back(static_cast<col_index_t>(entries[e].j));
    f.values.push_back(held[e] != 0 ? T(0) : static_cast<T>(entries[e].w));
  }
  for (index_t i = 0; i < p.m; ++i) f.indptr[to_size(i) + 1] += f.indptr[to_size(i)];
  f.ref = CsrView<T>{p.m, p.n, f.indptr.data(), f.indices.data(), f.values.data()};
  return f;
}

/// check_holdout_folds with the entries' values: a fold must hide a non-zero entry and keep one.
void check_folds(const std::string& name, const std::vector<Observed>& entries, std::uint64_t seed, int folds,
                 double holdout, const std::function<bool()>& cancel) {
  std::vector<char> nonzero(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) nonzero[e] = entries[e].a != 0 ? 1 : 0;
  api::check_holdout_folds(name, seed, folds, static_cast<index_t>(entries.size()), holdout, &nonzero, cancel);
}

void check_options(const CrossValidationOptions& o, index_t m, index_t n) {
  if (o.ks.empty()) throw UsageError("cross-validation needs at least one k");
  if (o.folds < 1) throw UsageError("--folds must be >= 1, got " + std::to_string(o.folds));
  if (!(o.holdout > 0 && o.holdout < 1)) throw UsageError("--holdout must be in (0, 1)");
  // ks are sorted: the extremes are the ones to name.
  if (o.ks.front() < 1) throw UsageError("k must be >= 1, got " + std::to_string(o.ks.front()));
  if (o.ks.back() > std::min(m, n))
    throw UsageError("k=" + std::to_string(o.ks.back()) + " does not fit a " + std::to_string(m) + "x" +
                     std::to_string(n) + " matrix: need k <= " + std::to_string(std::min(m, n)));
}

}  // namespace

template <class T>
CrossValidationResult cross_validate(const Source& source, const CrossValidationOptions& requested,
                                     const Context& context) {
  const auto start = std::chrono::steady_clock::now();
  if (api::communicator(context).size() > 1)
    throw CollectiveError(UsageError("cross-validation runs on one process (run without mpirun)"));
  if (context.grid != "auto" && context.grid != "1x1")
    throw UsageError("--grid " + context.grid + ": cross-validation runs on one process (grid auto or 1x1)");
  if (context.memory_budget > 0) throw UsageError("cross-validation is not supported with --memory-budget yet");
  CrossValidationOptions options = requested;
  options.factor = api::resolve(requested.factor, context);
  if (options.factor.backend == BackendKind::cuda)
    throw UsageError("cross-validation is not supported with --backend cuda yet");
  if (options.factor.init == InitMethod::given) throw UsageError("cross-validation draws its own starts");
  api::check_not_extrapolated(options.factor);
  const util::ThreadCountScope thread_count(options.factor.threads);
  std::sort(options.ks.begin(), options.ks.end());
  options.ks.erase(std::unique(options.ks.begin(), options.ks.end()), options.ks.end());

  const api::Held<T> a = api::hold<T>(source);
  std::optional<api::Held<T>> mask;
  if (options.factor.missing.mask) mask = api::hold<T>(*options.factor.missing.mask);
  const solvers::StoredMatrix<T> stored_a{&a.ref, source.transposed(), source.name()};
  const solvers::StoredMatrix<T> stored_mask{mask ? &mask->ref : nullptr,
                                             mask && options.factor.missing.mask->transposed(),
                                             mask ? options.factor.missing.mask->name() : std::string()};
  const solvers::MaskedProblem<T> base =
      solvers::build_masked_problem<T>(stored_a, stored_mask, options.factor.missing);
  try {
    check_options(options, base.m, base.n);
  } catch (const Error& e) {
    throw_as(e.kind(), source.name() + ": " + e.what());  // named as factor and nmfk name theirs
  }
  const std::vector<Observed> entries = observed_entries(base);

  // Both ends leave nothing to score or nothing to fit: the fraction's fault, not the data's. So do folds that hide
  // only zeros (no relative error: scored in A's units instead, they were averaged with the other folds' ratios)
  // or keep only zeros.
  check_folds(source.name(), entries, options.factor.seed, options.folds, options.holdout, options.factor.cancel);

  CrossValidationResult result;
  result.precision = std::is_same_v<T, float> ? "f32" : "f64";
  result.rows = base.m;
  result.cols = base.n;
  result.observed = base.observed;
  result.unobserved_rows = base.unobserved_rows;
  result.unobserved_cols = base.unobserved_cols;
  for (const index_t k : options.ks) result.ranks.push_back({k, {}, 0, 0, {}});
  for (int fold = 0; fold < options.folds; ++fold) {
    std::vector<char> held(entries.size(), 0);
    util::for_each_uniform01(options.factor.seed, static_cast<std::uint64_t>(util::Stream::holdout),
                             static_cast<std::uint64_t>(fold) * entries.size(), static_cast<index_t>(entries.size()),
                             [&](index_t e, double u) { held[to_size(e)] = u <= options.holdout ? 1 : 0; });
    index_t count = 0;
    for (const char h : held) count += h;
    result.held_out.push_back(count);  // neither 0 nor all of them: check_holdout_folds above
    const FoldMask<T> fm = fold_mask(base, entries, held);
    MissingValues missing = options.factor.missing;
    missing.mask.reset();  // the fold's mask carries the base weights
    const solvers::MaskedProblem<T> problem =
        solvers::build_masked_problem<T>(stored_a, solvers::StoredMatrix<T>{&fm.ref, false, "<fold mask>"}, missing);
    result.emptied_rows.push_back(problem.unobserved_rows - base.unobserved_rows);
    result.emptied_cols.push_back(problem.unobserved_cols - base.unobserved_cols);
    for (CrossValidationRank& rank : result.ranks) {
      FactorOptions fo = options.factor;
      fo.rank = rank.k;
      solvers::Factors<T> f;
      const FactorResult<T> fit = [&] {
        try {
          return solvers::solve_masked<T>(problem, fo, f);
        } catch (const Cancelled&) {
          throw;
        } catch (const Error& e) {
          throw_as(e.kind(), source.name() + ": fold " + std::to_string(fold) + ", k = " + std::to_string(rank.k) +
                                 ": " + e.what());
        }
      }();
      double num = 0, den = 0;
      for (std::size_t e = 0; e < entries.size(); ++e) {
        if (held[e] == 0) continue;
        const Observed& o = entries[e];
        double q = 0;
        for (index_t l = 0; l < rank.k; ++l) q += static_cast<double>(f.wt(l, o.i)) * static_cast<double>(f.h(l, o.j));
        num += o.w * (o.a - q) * (o.a - q);
        den += o.w * o.a * o.a;
      }
      rank.fold_errors.push_back(std::sqrt(num / den));  // den > 0: a held-out entry is non-zero (checked above)
      rank.fit_errors.push_back(fit.rel_error);
      if (options.progress)
        options.progress({fold, options.folds, rank.k, rank.fold_errors.back(), fit.rel_error, fit.iterations});
    }
  }
  for (CrossValidationRank& rank : result.ranks) {
    const auto f = static_cast<double>(rank.fold_errors.size());
    double sum = 0;
    for (const double e : rank.fold_errors) sum += e;
    rank.mean = sum / f;
    double sq = 0;
    for (const double e : rank.fold_errors) sq += (e - rank.mean) * (e - rank.mean);
    rank.standard_error = f > 1 ? std::sqrt(sq / (f - 1)) / std::sqrt(f) : 0.0;
  }
  // The one-standard-error rule: the simplest model whose held-out error is within one standard error of the
  // best one (held-out error rises only slowly past the true k, so the plain minimum overshoots with noise).
  const auto best = std::min_element(result.ranks.begin(), result.ranks.end(),
                                     [](const auto& x, const auto& y) { return x.mean < y.mean; });
  result.best_k = best->k;
  const double threshold = best->mean + best->standard_error;
  for (const CrossValidationRank& rank : result.ranks)
    if (rank.mean <= threshold) {
      result.selected_k = rank.k;
      break;
    }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string cross_validation_warning(const CrossValidationResult& r) {
  int folds = 0;
  index_t rows = 0, cols = 0;
  for (std::size_t f = 0; f < r.emptied_rows.size(); ++f) {
    if (r.emptied_rows[f] + r.emptied_cols[f] == 0) continue;
    ++folds;
    rows = std::max(rows, r.emptied_rows[f]);
    cols = std::max(cols, r.emptied_cols[f]);
  }
  std::string unobserved;
  if (r.unobserved_rows + r.unobserved_cols > 0)
    unobserved = "cross-validation: " + std::to_string(r.unobserved_rows) + " rows and " +
                 std::to_string(r.unobserved_cols) +
                 " columns have no observed entry at all: their factor rows are zero in every fit, and they take no "
                 "part in the held-out error";
  if (folds == 0) return unobserved;
  return (unobserved.empty() ? std::string() : unobserved + "; ") + "cross-validation: in " + std::to_string(folds) +
         " of " + std::to_string(r.emptied_rows.size()) +
         " folds the hold-out hid every observed entry of some rows or columns (at most " + std::to_string(rows) +
         " rows in one fold, at most " + std::to_string(cols) +
         " columns in one fold); they cannot be fitted, and their hidden entries score as zeros for every k: use a "
         "smaller hold-out fraction";
}

std::string cross_validation_json(const CrossValidationResult& r, const CrossValidationOptions& o) {
  nlohmann::ordered_json j;
  j["rows"] = r.rows;
  j["cols"] = r.cols;
  j["observed"] = r.observed;
  j["folds"] = o.folds;
  j["holdout"] = o.holdout;
  j["held_out_per_fold"] = r.held_out;
  j["unobserved_rows"] = r.unobserved_rows;
  j["unobserved_cols"] = r.unobserved_cols;
  j["emptied_rows_per_fold"] = r.emptied_rows;
  j["emptied_cols_per_fold"] = r.emptied_cols;
  if (const std::string warning = cross_validation_warning(r); !warning.empty()) j["warning"] = warning;
  // Every option that changes the fits, and so the choice, as report.json and nmfk.json record them.
  j["algo"] = to_string(o.factor.algorithm);
  j["init"] = to_string(o.factor.init);
  j["precision"] = r.precision;
  j["backend"] = to_string(o.factor.backend);
  j["penalties"] = o.factor.penalties;
  j["max_iterations"] = o.factor.max_iterations;
  j["tol"] = o.factor.tol;
  j["seed"] = o.factor.seed;
  j["missing"] = {{"mask", o.factor.missing.mask ? o.factor.missing.mask->name() : std::string()},
                  {"nan_missing", o.factor.missing.nan_missing},
                  {"unstored", to_string(o.factor.missing.unstored)}};
  j["rule"] = "smallest k whose mean held-out error is within one standard error of the lowest mean";
  j["best_k"] = r.best_k;
  j["selected_k"] = r.selected_k;
  nlohmann::ordered_json ks = nlohmann::ordered_json::array();
  for (const auto& k : r.ranks)
    ks.push_back({{"k", k.k},
                  {"mean_heldout_error", k.mean},
                  {"standard_error", k.standard_error},
                  {"fold_errors", k.fold_errors},
                  {"fit_errors", k.fit_errors}});
  j["ranks"] = ks;
  j["seconds"] = r.seconds;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace api {

void check_not_extrapolated(const FactorOptions& options) {
  // The fits are masked problems (the fold's hidden entries), and the masked solver has no extrapolation: without
  // this, --extrapolate was accepted on complete data and silently not applied.
  if (options.extrapolate)
    throw UsageError(
        "--extrapolate: the cross-validation's fits hide entries (masked fits), which do not extrapolate; leave "
        "--extrapolate out");
}

template <class T>
void check_holdout_values(const Source& source, const FactorOptions& factor, int folds, double holdout) {
  const api::Held<T> a = api::hold<T>(source);
  std::optional<api::Held<T>> mask;
  if (factor.missing.mask) mask = api::hold<T>(*factor.missing.mask);
  const solvers::StoredMatrix<T> stored_a{&a.ref, source.transposed(), source.name()};
  const solvers::StoredMatrix<T> stored_mask{mask ? &mask->ref : nullptr, mask && factor.missing.mask->transposed(),
                                             mask ? factor.missing.mask->name() : std::string()};
  const solvers::MaskedProblem<T> base = solvers::build_masked_problem<T>(stored_a, stored_mask, factor.missing);
  check_folds(source.name(), observed_entries(base), factor.seed, folds, holdout, factor.cancel);
}

template void check_holdout_values<float>(const Source&, const FactorOptions&, int, double);
template void check_holdout_values<double>(const Source&, const FactorOptions&, int, double);

void check_holdout_folds(const std::string& name, std::uint64_t seed, int folds, index_t observed, double holdout,
                         const std::vector<char>* nonzero, const std::function<bool()>& cancel) {
  const std::string fraction =
      name + ": the hold-out fraction " + io::shortest_repr(holdout) + " (--holdout, --cv-holdout) hides ";
  for (int fold = 0; fold < folds; ++fold) {
    if (cancel && cancel())
      throw Cancelled(name + ": cancelled while checking the hold-out folds (fold " + std::to_string(fold) + " of " +
                      std::to_string(folds) + ")");
    const std::uint64_t first = static_cast<std::uint64_t>(fold) * static_cast<std::uint64_t>(observed);
    bool some_held = false, some_kept = false;
    // Without values, every entry counts as non-zero.
    bool nonzero_held = nonzero == nullptr, nonzero_kept = nonzero == nullptr;
    index_t held_count = 0;
    for (index_t e = 0; e < observed && !(some_held && some_kept && nonzero_held && nonzero_kept); ++e) {
      const bool held = util::uniform01(seed, util::Stream::holdout, first + static_cast<std::uint64_t>(e)) <= holdout;
      const bool value = nonzero == nullptr || (*nonzero)[to_size(e)] != 0;
      held_count += held ? 1 : 0;
      some_held = some_held || held;
      some_kept = some_kept || !held;
      nonzero_held = nonzero_held || (held && value);
      nonzero_kept = nonzero_kept || (!held && value);
    }
    if (!some_held)
      throw UsageError(fraction + "no entry of " + std::to_string(observed) + " observed ones in fold " +
                       std::to_string(fold) + " (seed " + std::to_string(seed) +
                       "); raise the fraction to about 1/observed or more, or pick another --seed");
    if (!some_kept)
      throw UsageError(fraction + "every one of the " + std::to_string(observed) + " observed entries in fold " +
                       std::to_string(fold) + " (seed " + std::to_string(seed) +
                       "), leaving nothing to fit; lower the fraction or pick another --seed");
    // Past here the loop ran to the end, so held_count is the fold's.
    const std::string which = name + ": fold " + std::to_string(fold) + " (seed " + std::to_string(seed) +
                              ", hold-out fraction " + io::shortest_repr(holdout) + ") ";
    if (!nonzero_held)
      throw UsageError(which + "hides " + std::to_string(held_count) +
                       " observed entries, all of them zero: their relative error is undefined; raise the "
                       "fraction (--holdout, --cv-holdout) or pick another --seed");
    if (!nonzero_kept)
      throw UsageError(which +
                       "keeps only zero entries to fit; lower the fraction (--holdout, --cv-holdout) or pick "
                       "another --seed");
  }
}

}  // namespace api

template CrossValidationResult cross_validate<float>(const Source&, const CrossValidationOptions&, const Context&);
template CrossValidationResult cross_validate<double>(const Source&, const CrossValidationOptions&, const Context&);

}  // namespace dnmf
