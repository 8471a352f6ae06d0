// dnmf: NMFk, automatic selection of the rank k (DESIGN §6). For every k of a range, P factorisations of
// perturbed copies of A are clustered; k is accepted when the clusters are stable (cosine silhouettes) and
// the centroids still explain A (relative error of a regression of H on A with W fixed at the centroids).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/context.hpp"
#include "dnmf/cross_validation.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/options.hpp"
#include "dnmf/source.hpp"

namespace dnmf {

/// How a perturbed copy A_p of A is drawn.
enum class Perturbation {
  uniform,  ///< a·(1 + ε(2U − 1)), U uniform in (0, 1], keyed by (seed, p, global index)
  poisson,  ///< a Poisson draw with mean a (resampling of count data); zeros stay zero
};

/// Which selection rule decides the reported k (both are always computed and reported).
enum class SelectionRule {
  silhouette,  ///< the largest accepted k (minimum silhouette ≥ threshold, error ≤ threshold when given)
  wilcoxon,    ///< walk up the accepted k while the per-column errors drop significantly (signed-rank test)
};

/// Parses "uniform" or "poisson" (dnmf::Error otherwise).
Perturbation parse_perturbation(const std::string& name);
/// Parses "silhouette" or "wilcoxon" (dnmf::Error otherwise).
SelectionRule parse_selection_rule(const std::string& name);
std::string to_string(Perturbation p);
std::string to_string(SelectionRule r);

/// The k values "first:last[:step]" (inclusive, step ≥ 1) or a single "k"; throws dnmf::Error naming the text.
std::vector<index_t> parse_k_range(const std::string& text);

/// One job finished (or was found in the checkpoints): what the progress callback is told.
struct NmfkProgress {
  index_t k = 0;
  int perturbation = 0;  ///< 0-based
  int group = 0;         ///< the process group that ran it
  bool from_checkpoint = false;
  double rel_error = 0;  ///< of the factorisation of the perturbed matrix
  int iterations = 0;
  double seconds = 0;  ///< the job's own time
  int jobs_done = 0;   ///< jobs of this group finished so far (checkpointed ones counted at the start)
  int jobs_total = 0;  ///< jobs of this group
};

/// Options of nmfk(). `factor` carries the solver options of `dnmf factor` (its rank is ignored, its seed
/// is the NMFk seed from which every perturbation and initialisation is derived).
struct NmfkOptions {
  std::vector<index_t> ks;  ///< the k values to try (any order, duplicates ignored), each 1 ≤ k ≤ min(m, n)
  int perturbations = 20;   ///< P ≥ 2: the silhouettes compare the factors of different perturbations
  double epsilon = 0.03;    ///< uniform perturbation amplitude, 0 ≤ ε < 1
  Perturbation perturbation = Perturbation::uniform;
  double sil_threshold = 0.75;          ///< minimum silhouette a k needs to be accepted
  std::optional<double> err_threshold;  ///< maximum relative error a k may have to be accepted
  SelectionRule rule = SelectionRule::silhouette;
  double wilcoxon_alpha = 0.05;      ///< significance level of the signed-rank rule
  bool h_silhouettes = false;        ///< also silhouettes of H's rows (clustered like W's columns)
  int groups = 1;                    ///< process groups running different (k, p) jobs, 1 ≤ groups ≤ processes
  int max_cluster_iterations = 100;  ///< cap on the assignment / median rounds of the clustering
  /// Perturbations whose relative error exceeds accept_factor times the best one of the same k (stuck in a poor
  /// local minimum) are left out of the clustering, as NMFk.jl's acceptfactor does; infinity keeps all. Errors
  /// up to 1e-4 (an exact fit, to rounding) are always kept.
  double accept_factor = 2.0;
  /// Each group's process grid: "auto" or "PRxPC" (= the group's size). Context::grid sets it too; where both are
  /// set they must agree.
  std::string grid = "auto";
  FactorOptions factor;
  /// Folder of the checkpoints (one file per finished job plus a manifest); empty: none are kept.
  std::string checkpoint_dir;
  /// Clear the checkpoints (all of them: every job is recomputed) instead of reusing those of these data and
  /// options and refusing others.
  bool restart = false;
  /// Extra facts identifying the data for the checkpoint manifest (e.g. {"file_bytes", "123456"}).
  std::vector<std::pair<std::string, std::string>> data_identity;
  std::function<void(const NmfkProgress&)> progress;  ///< called on each group's first rank
  /// Called with one line when a checkpointed run is resumed or cleared (world rank 0).
  std::function<void(const std::string&)> notice;
  /// Also choose k by cross-validation (cross_validate()) over the same ks: cv_folds folds each hiding cv_holdout
  /// of the entries, keyed by factor.seed like the perturbations, fitted with `factor`'s solver options. One
  /// process only; not checkpointed (a resumed run computes it again).
  bool cv = false;
  int cv_folds = 5;          ///< ≥ 1
  double cv_holdout = 0.05;  ///< in (0, 1)
};

/// Everything measured for one k.
template <class T>
struct NmfkRank {
  index_t k = 0;
  std::vector<double> silhouettes;    ///< per cluster: mean silhouette of its P members (cosine distance)
  double min_silhouette = 0;          ///< minimum over clusters: the stability S_k
  double mean_silhouette = 0;         ///< mean over all k·P columns
  std::vector<double> h_silhouettes;  ///< the same for H's rows (when requested, else empty)
  double h_min_silhouette = 0;
  double h_mean_silhouette = 0;
  double rel_error = 0;                     ///< ||A − W H||_F / ||A||_F of the regression on the original A
  std::vector<double> column_errors;        ///< ||a_j − W h_j|| / ||a_j|| per column (0 for an all-zero column)
  std::vector<double> perturbation_errors;  ///< relative error of each perturbed factorisation (against A_p)
  std::vector<int> perturbation_iterations;
  std::vector<int> rejected_perturbations;  ///< left out of the clustering (see NmfkOptions::accept_factor)
  int cluster_iterations = 0;               ///< assignment rounds the clustering took
  bool cluster_converged = false;           ///< assignments stopped changing before the cap
  bool accepted = false;                    ///< meets the silhouette (and error) thresholds
  double seconds = 0;  ///< factorisations (as run or as recorded in the checkpoint) + clustering + regression
  DenseMatrix<T> W;    ///< m x k: the cluster centroids (element-wise medians), columns summing to 1
  DenseMatrix<T> H;    ///< k x n: the regression of H on A with W fixed
};

/// One step of the signed-rank rule: are the per-column errors at `to_k` significantly below those at `from_k`?
struct WilcoxonStep {
  index_t from_k = 0;
  index_t to_k = 0;
  double statistic = 0;  ///< W+: the sum of the ranks of the positive differences error(from) − error(to)
  index_t pairs = 0;     ///< non-zero differences
  double p_value = 1;    ///< one-sided
  bool exact = false;    ///< exact null distribution (small samples without ties) or normal approximation
  bool significant = false;
};

/// The outcome of both selection rules.
struct NmfkSelection {
  std::optional<index_t> selected_k;  ///< the k of the deciding rule; empty when no k was accepted
  SelectionRule decided_by = SelectionRule::silhouette;
  std::optional<index_t> silhouette_k;  ///< rule (a)
  std::optional<index_t> wilcoxon_k;    ///< rule (b)
  /// The cross-validation's choice (one-standard-error rule) when NmfkOptions::cv; it never decides selected_k.
  std::optional<index_t> cv_k;
  std::vector<WilcoxonStep> wilcoxon_steps;
  index_t best_candidate = 0;  ///< selected_k, or when nothing was accepted the k with the highest minimum silhouette
  std::string message;         ///< one line for people
};

/// What nmfk() returns. Complete on world rank 0; other ranks get `selection` only.
template <class T>
struct NmfkResult {
  index_t rows = 0, cols = 0;
  std::vector<NmfkRank<T>> ranks;  ///< ascending k
  NmfkSelection selection;
  int jobs_total = 0;
  int jobs_run = 0;     ///< factorisations computed by this call
  int jobs_loaded = 0;  ///< taken from checkpoints
  int processes = 1;
  int groups = 1;
  std::string group_grid;  ///< the grid of the first group, e.g. "2x1"
  double seconds = 0;      ///< the whole call, cross-validation included
  /// What the user should know about the data and the options (the CLI prints them, nmfk.json lists them), e.g.
  /// a Poisson perturbation of entries that are not counts.
  std::vector<std::string> warnings;
  /// Held-out error per k (the same ks as `ranks`) when NmfkOptions::cv; empty otherwise.
  std::optional<CrossValidationResult> cv;
};

/// NMFk of the matrix of `source` on the processes of `context` (collective): the processes are split into
/// options.groups groups running the (k, perturbation) jobs, each job on its group's grid (context.grid; the
/// context's backend and threads replace options.factor's), each process reading only its block of a file.
/// Finished jobs are checkpointed under options.checkpoint_dir and reused by a rerun with the same data and
/// options; a file source adds its size to the data's identity. Throws dnmf::Error naming the source for bad
/// options, checkpoints made with other data or options (unless options.restart) and bad data; dnmf::Cancelled
/// when options.factor.cancel asked to stop. Transposed sources are not accepted (NMFk clusters A's columns).
template <class T>
NmfkResult<T> nmfk(const Source& source, const NmfkOptions& options, const Context& context = Context());

/// NMFk of a matrix in memory on one process (without options.cv: UsageError; use the Source entry point).
template <class T>
NmfkResult<T> nmfk(const MatrixRef<T>& a, const NmfkOptions& options);

/// Facts about the run for nmfk.json (nmfk_run_info() fills them from the source).
struct NmfkRunInfo {
  std::string input;   ///< path of the input file
  std::string format;  ///< "npy", "mtx", ...
  std::string precision = "f64";
  index_t nnz = -1;
};

/// The run facts of an NMFk of `source` in precision T (a file's header is read by this process alone).
template <class T>
NmfkRunInfo nmfk_run_info(const Source& source);

/// What write_nmfk_outputs() produced.
struct NmfkOutputs {
  std::string json, csv, svg, png, gnuplot_script;  ///< paths; svg/png empty when no plot was drawn
  std::string plot_warning;  ///< why the plot is missing (gnuplot not found or failed); empty when drawn
};

/// Writes OUTDIR/nmfk.json, nmfk.csv, k_<K>/W.npy, H.npy, column_errors.npy, and the plot (nmfk.svg,
/// nmfk.png, drawn by gnuplot from nmfk.gp). Without a working gnuplot everything else is still written and
/// the returned plot_warning says what is missing. Call on world rank 0. `shown_directory`: the folder the
/// messages name (where the caller moves a staging `directory`'s files; empty: `directory`).
template <class T>
NmfkOutputs write_nmfk_outputs(const NmfkResult<T>& result, const NmfkOptions& options, const NmfkRunInfo& run,
                               const std::string& directory, const std::string& shown_directory = "");

}  // namespace dnmf
