// The files of an NMFk run: nmfk.json (everything measured, the selection and the rule that decided),
// nmfk.csv (one line per k, what the plot reads), k_<K>/W.npy, H.npy, column_errors.npy, and the plot.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/plot.hpp"
#include "util/options_json.hpp"

namespace dnmf {
namespace {

namespace fs = std::filesystem;

// JSON has no NaN or infinity; such values (never expected) become null.
nlohmann::json finite(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json finite(const std::vector<double>& values) {
  nlohmann::json a = nlohmann::json::array();
  for (double v : values) a.push_back(finite(v));
  return a;
}

nlohmann::json optional_k(const std::optional<index_t>& k) { return k ? nlohmann::json(*k) : nlohmann::json(nullptr); }

template <class T>
nlohmann::ordered_json report(const NmfkResult<T>& r, const NmfkOptions& o, const NmfkRunInfo& run,
                              const NmfkOutputs& files) {
  nlohmann::ordered_json j;
  j["input"] = {{"path", run.input}, {"format", run.format}, {"rows", r.rows}, {"cols", r.cols}};
  if (run.nnz >= 0) j["input"]["nnz"] = run.nnz;
  nlohmann::ordered_json opts;
  opts["k"] = nlohmann::json::array();
  for (const auto& rank : r.ranks) opts["k"].push_back(rank.k);
  opts["perturbations"] = o.perturbations;
  opts["perturbation"] = to_string(o.perturbation);
  opts["epsilon"] = o.epsilon;
  opts["sil_threshold"] = o.sil_threshold;
  opts["err_threshold"] = o.err_threshold ? nlohmann::json(*o.err_threshold) : nlohmann::json(nullptr);
  opts["rule"] = to_string(o.rule);
  opts["wilcoxon_alpha"] = o.wilcoxon_alpha;
  opts["h_silhouettes"] = o.h_silhouettes;
  opts["max_cluster_iterations"] = o.max_cluster_iterations;
  opts["accept_factor"] = finite(o.accept_factor);
  opts["algo"] = to_string(o.factor.algorithm);
  opts["iters"] = o.factor.max_iterations;
  opts["tol"] = o.factor.tol;
  opts["init"] = to_string(o.factor.init);
  opts["extrapolate"] = o.factor.extrapolate;
  opts["fused"] = o.factor.fused;
  opts["seed"] = o.factor.seed;
  opts["precision"] = run.precision;
  opts["backend"] = to_string(o.factor.backend);
  opts["penalties"] = o.factor.penalties;
  opts["cv"] = r.cv.has_value();
  if (r.cv) {
    opts["cv_folds"] = o.cv_folds;
    opts["cv_holdout"] = o.cv_holdout;
  }
  j["options"] = opts;

  const NmfkSelection& s = r.selection;
  nlohmann::ordered_json sel;
  sel["selected_k"] = optional_k(s.selected_k);
  sel["passed"] = s.selected_k.has_value();
  sel["decided_by"] = to_string(s.decided_by);
  sel["silhouette_rule_k"] = optional_k(s.silhouette_k);
  sel["wilcoxon_rule_k"] = optional_k(s.wilcoxon_k);
  sel["cv_rule_k"] = optional_k(s.cv_k);
  sel["best_candidate"] = s.best_candidate;
  sel["message"] = s.message;
  sel["wilcoxon_steps"] = nlohmann::json::array();
  for (const auto& step : s.wilcoxon_steps)
    sel["wilcoxon_steps"].push_back({{"from_k", step.from_k},
                                     {"to_k", step.to_k},
                                     {"statistic", step.statistic},
                                     {"pairs", step.pairs},
                                     {"p_value", finite(step.p_value)},
                                     {"exact", step.exact},
                                     {"significant", step.significant}});
  j["selection"] = sel;

  if (r.cv) {
    const CrossValidationResult& cv = *r.cv;
    j["cross_validation"] = {
        {"rule", "smallest k whose mean held-out error is within one standard error of the lowest mean"},
        {"folds", o.cv_folds},
        {"holdout", o.cv_holdout},
        {"observed", cv.observed},
        {"held_out_per_fold", cv.held_out},
        {"best_k", cv.best_k},
        {"selected_k", cv.selected_k},
        {"seconds", cv.seconds}};
  }

  j["per_k"] = nlohmann::json::array();
  for (std::size_t at = 0; at < r.ranks.size(); ++at) {
    const auto& k = r.ranks[at];
    nlohmann::ordered_json e;
    e["k"] = k.k;
    e["min_silhouette"] = finite(k.min_silhouette);
    e["mean_silhouette"] = finite(k.mean_silhouette);
    e["silhouettes"] = finite(k.silhouettes);
    if (o.h_silhouettes) {
      e["h_min_silhouette"] = finite(k.h_min_silhouette);
      e["h_mean_silhouette"] = finite(k.h_mean_silhouette);
      e["h_silhouettes"] = finite(k.h_silhouettes);
    }
    e["rel_error"] = finite(k.rel_error);
    e["perturbation_errors"] = finite(k.perturbation_errors);
    e["perturbation_iterations"] = k.perturbation_iterations;
    e["rejected_perturbations"] = k.rejected_perturbations;
    e["cluster_iterations"] = k.cluster_iterations;
    e["cluster_converged"] = k.cluster_converged;
    e["accepted"] = k.accepted;
    if (r.cv) {
      const CrossValidationRank& cv = r.cv->ranks[at];
      e["cv_mean_heldout_error"] = finite(cv.mean);
      e["cv_standard_error"] = finite(cv.standard_error);
      e["cv_fold_errors"] = finite(cv.fold_errors);
      e["cv_fit_errors"] = finite(cv.fit_errors);
    }
    e["seconds"] = k.seconds;
    e["files"] = {{"W", "k_" + std::to_string(k.k) + "/W.npy"},
                  {"H", "k_" + std::to_string(k.k) + "/H.npy"},
                  {"column_errors", "k_" + std::to_string(k.k) + "/column_errors.npy"}};
    j["per_k"].push_back(e);
  }
  j["jobs"] = {{"total", r.jobs_total}, {"run", r.jobs_run}, {"from_checkpoints", r.jobs_loaded}};
  j["processes"] = r.processes;
  j["groups"] = r.groups;
  j["group_grid"] = r.group_grid;
  j["seconds"] = r.seconds;
  j["warnings"] = r.warnings;
  j["plot"] = {{"tool", "gnuplot"},
               {"script", "nmfk.gp"},
               {"svg", files.svg.empty() ? nlohmann::json(nullptr) : nlohmann::json("nmfk.svg")},
               {"png", files.png.empty() ? nlohmann::json(nullptr) : nlohmann::json("nmfk.png")},
               {"warning", files.plot_warning}};
  return j;
}

// The cross-validation's columns come last, so that the NMFk columns keep their places.
std::string csv_text(const auto& r, bool h) {
  std::ostringstream c;
  c.precision(10);
  c << "k,min_silhouette,mean_silhouette,rel_error,accepted,seconds";
  if (h) c << ",h_min_silhouette,h_mean_silhouette";
  if (r.cv) c << ",cv_mean_heldout_error,cv_standard_error,cv_selected";
  c << "\n";
  for (std::size_t at = 0; at < r.ranks.size(); ++at) {
    const auto& k = r.ranks[at];
    c << k.k << "," << k.min_silhouette << "," << k.mean_silhouette << "," << k.rel_error << "," << (k.accepted ? 1 : 0)
      << "," << k.seconds;
    if (h) c << "," << k.h_min_silhouette << "," << k.h_mean_silhouette;
    if (r.cv) {
      const CrossValidationRank& cv = r.cv->ranks[at];
      c << "," << cv.mean << "," << cv.standard_error << "," << (cv.k == r.cv->selected_k ? 1 : 0);
    }
    c << "\n";
  }
  return c.str();
}

}  // namespace

template <class T>
NmfkOutputs write_nmfk_outputs(const NmfkResult<T>& r, const NmfkOptions& o, const NmfkRunInfo& run,
                               const std::string& directory, const std::string& shown_directory) {
  const fs::path dir(directory);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError(directory + ": cannot create the output folder: " + ec.message());
  NmfkOutputs files;
  for (const auto& k : r.ranks) {
    const fs::path sub = dir / ("k_" + std::to_string(k.k));
    fs::create_directories(sub, ec);
    if (ec) throw IoError(sub.string() + ": cannot create: " + ec.message());
    io::write_npy<T>((sub / "W.npy").string(), k.W.view());
    io::write_npy<T>((sub / "H.npy").string(), k.H.view());
    const DenseView<const double> errors(k.column_errors.data(), static_cast<index_t>(k.column_errors.size()), 1);
    io::write_npy<double>((sub / "column_errors.npy").string(), errors);
  }
  files.csv = (dir / "nmfk.csv").string();
  const std::string csv = csv_text(r, o.h_silhouettes);
  io::write_file_atomically(files.csv, [&csv](std::ostream& s) { s << csv; });
  const int cv_column = r.cv ? (o.h_silhouettes ? 9 : 7) : 0;  // 1-based, after the columns csv_text wrote
  const rank_search::PlotFiles plot =
      rank_search::draw_plot(directory, r.selection, o.sil_threshold, cv_column,
                             shown_directory.empty() ? directory : shown_directory, o.factor.cancel);
  files.gnuplot_script = plot.script;
  files.svg = plot.svg;
  files.png = plot.png;
  files.plot_warning = plot.warning;
  files.json = (dir / "nmfk.json").string();
  const std::string json =
      report(r, o, run, files).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  io::write_file_atomically(files.json, [&json](std::ostream& s) { s << json; });
  return files;
}

template NmfkOutputs write_nmfk_outputs<float>(const NmfkResult<float>&, const NmfkOptions&, const NmfkRunInfo&,
                                               const std::string&, const std::string&);
template NmfkOutputs write_nmfk_outputs<double>(const NmfkResult<double>&, const NmfkOptions&, const NmfkRunInfo&,
                                                const std::string&, const std::string&);

}  // namespace dnmf
