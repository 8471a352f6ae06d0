// report.json of a factorisation (docs/formats.md): what `dnmf factor` writes beside W and H.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "dnmf/blas.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/version.hpp"
#include "util/memory.hpp"
#include "util/options_json.hpp"

namespace dnmf {
namespace {

/// Now as ISO 8601 UTC, e.g. 2024-05-01T12:34:56Z.
std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

/// The "grid_choice" object: the rule, and under the time model each candidate's predicted seconds per
/// iteration beside the chosen grid and the words-only one.
nlohmann::ordered_json grid_choice_json(const GridChoiceFigures& f, const std::string& grid) {
  nlohmann::ordered_json j;
  j["rule"] = f.rule;
  j["chosen"] = grid;
  if (!f.by_words.empty()) j["by_words"] = f.by_words;
  if (f.candidates.empty()) return j;
  j["cache_bytes"] = f.cache_bytes;
  j["candidates"] = nlohmann::ordered_json::array();
  for (const GridCandidate& c : f.candidates)
    j["candidates"].push_back({{"grid", c.grid},
                               {"path", c.path},
                               {"words_per_rank", c.words_per_rank},
                               {"predicted_seconds_per_iteration", c.predicted_seconds},
                               {"compute_seconds", c.compute_seconds},
                               {"memory_seconds", c.memory_seconds},
                               {"network_seconds", c.network_seconds},
                               {"panel_bytes", c.panel_bytes}});
  return j;
}

/// The "memory" object: the plan, the stream's figures and the peak against the budget.
nlohmann::ordered_json memory_json(const MemoryFigures& f) {
  const std::int64_t peak = util::peak_rss_bytes();
  nlohmann::ordered_json j;
  j["budget_bytes"] = f.budget_bytes;
  j["mode"] = f.streamed ? "streamed" : "resident";
  j["planned"] = {{"baseline_bytes", f.baseline_bytes},
                  {"runtime_reserve_bytes", f.runtime_reserve_bytes},
                  {"factors_bytes", f.factors_bytes},
                  {"workspace_bytes", f.workspace_bytes},
                  {"matrix_bytes", f.matrix_bytes},
                  {"ring_bytes", f.ring_bytes},
                  {"staging_bytes", f.staging_bytes},
                  {"total_bytes", f.total_bytes},
                  {"resident_total_bytes", f.resident_total_bytes},
                  {"minimum_budget_bytes", f.minimum_budget_bytes}};
  if (f.streamed) {
    const double passes = static_cast<double>(std::max<long long>(f.passes, 1));
    j["stream"] = {{"access", f.access},
                   {"tile_bytes", f.tile_bytes},
                   {"depth", f.depth},
                   {"tiles_per_pass", f.tiles_per_pass},
                   {"passes", f.passes},
                   {"tiles_delivered", f.tiles_delivered},
                   {"bytes_read", f.bytes_read},
                   {"seconds_waiting", f.seconds_waiting},
                   {"seconds_reading", f.seconds_reading},
                   {"seconds_waiting_per_pass", f.seconds_waiting / passes},
                   {"read_bytes_per_second", f.seconds_reading > 0 ? f.bytes_read / f.seconds_reading : 0.0}};
  }
  j["peak_rss_bytes"] = peak;
  j["peak_over_budget"] = static_cast<double>(peak) / static_cast<double>(f.budget_bytes);
  j["figures_of"] = "rank 0 (every rank plans its own block against the same per-process budget)";
  return j;
}

}  // namespace

template <class T>
std::string report_json(const Factorization<T>& run) {
  const FactorOptions& o = run.options;
  const FactorResult<T>& result = run.result;
  nlohmann::ordered_json j;  // insertion order: the report reads top-down
  j["input"] = run.input;
  j["format"] = run.format;
  j["m"] = run.m;
  j["n"] = run.n;
  j["nnz"] = run.nnz;
  // Observed entries: m·n without missing values; the errors and the objective count only these.
  j["observed"] = result.masked ? result.observed : run.m * run.n;
  if (result.masked)
    j["missing"] = {{"mask", o.missing.mask ? o.missing.mask->name() : std::string()},
                    {"nan_missing", o.missing.nan_missing},
                    {"unstored", to_string(o.missing.unstored)},
                    {"unobserved_rows", result.unobserved_rows},
                    {"unobserved_cols", result.unobserved_cols}};
  j["k"] = o.rank;
  j["algo"] = to_string(o.algorithm);
  j["init"] = to_string(o.init);
  j["seed"] = o.seed;
  j["precision"] = run.precision;
  j["backend"] = result.backend.empty() ? to_string(o.backend) : result.backend;
  j["threads"] = result.threads;
  j["fused"] = result.fused;
  j["update_order"] = o.w_first ? "w_first" : "h_first";
  j["extrapolate"] = o.extrapolate;
  if (o.extrapolate) {
    j["extrapolation_restarts"] = result.extrapolation_restarts;
    j["extrapolation_reverts"] = result.extrapolation_reverts;
  }
  j["penalties"] = o.penalties;
  j["tf32"] = o.tf32;
  j["iterations"] = result.iterations;
  j["max_iterations"] = o.max_iterations;
  j["tol"] = o.tol;
  j["converged"] = result.converged;
  j["rel_error"] = result.rel_error;
  j["objective"] = result.objective;
  j["rel_error_history"] = result.rel_error_history;
  j["objective_history"] = result.objective_history;
  j["seconds"] = result.seconds;
  j["init_seconds"] = result.init_seconds;
  j["seconds_per_iteration"] = result.iterations > 0 ? result.seconds / result.iterations : 0.0;
  if (o.algorithm == Algorithm::bpp) j["nnls_cap_hits"] = result.nnls_cap_hits;
  j["warnings"] = nlohmann::json::array();
  if (result.nnls_cap_hits > 0)
    j["warnings"].push_back(std::to_string(result.nnls_cap_hits) +
                            " NNLS solves hit the pivoting round cap and were finished by an exact active-set solve");
  if (result.initial_w_exponent != 0 || result.initial_h_exponent != 0) {
    char text[240];
    std::snprintf(text, sizeof text,
                  "the given W and H were multiplied by 2^%d and 2^%d: the mean of their product was more than 2^20 "
                  "from A's, or their entries more than 2^40 apart, where the iterations' guards against division by "
                  "zero stall them",
                  result.initial_w_exponent, result.initial_h_exponent);
    j["warnings"].push_back(text);
  }
  if (result.unobserved_rows > 0 || result.unobserved_cols > 0)
    j["warnings"].push_back(std::to_string(result.unobserved_rows) + " rows and " +
                            std::to_string(result.unobserved_cols) +
                            " columns have no observed entry: their rows of W and columns of H are zero");
  j["peak_rss_bytes"] = util::peak_rss_bytes();
  j["grid"] = run.grid;
  j["grid_choice"] = grid_choice_json(run.grid_choice, run.grid);
  j["processes"] = run.communication.processes;
  j["communication"] = {
      {"bytes_sent_per_iteration_per_rank", run.communication.bytes_per_iteration_per_rank},
      {"model_bytes_per_iteration_per_rank", run.communication.model_bytes_per_iteration},
      {"model", result.masked ? "docs/masked.md: allgather of both factors along the grid, reduce-scatter of each "
                                "column's weighted sums (numerator and Gram term), k x k allreduces where the Gram "
                                "matrices are corrected"
                              : "DESIGN 4: allgather + reduce-scatter of both factors along the grid, two k x k "
                                "allreduces"}};
  if (run.memory.budget_bytes > 0) j["memory"] = memory_json(run.memory);
  j["version"] = std::string(dnmf::version());
  const BlasInfo& blas = blas_info();
  j["blas"] = {{"name", blas.name},
               {"version", blas.version},
               {"kernel", blas.kernel},
               {"cpu_vector_isa", blas.cpu_vector_isa},
               {"generic_kernel", blas.generic_kernel}};
  j["timestamp"] = utc_timestamp();
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

template std::string report_json<float>(const Factorization<float>&);
template std::string report_json<double>(const Factorization<double>&);

}  // namespace dnmf
