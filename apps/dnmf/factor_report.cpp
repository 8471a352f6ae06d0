// See factor_report.hpp.

#include "factor_report.hpp"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "dnmf/version.hpp"
#include "util/memory.hpp"

namespace dnmf::cli {
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

}  // namespace

template <class T>
std::string factor_report_json(const RunDescription& run, const FactorResult<T>& result) {
  const FactorOptions& o = run.options;
  nlohmann::ordered_json j;  // insertion order: the report reads top-down
  j["input"] = run.input;
  j["format"] = run.format;
  j["m"] = run.m;
  j["n"] = run.n;
  j["nnz"] = run.nnz;
  j["k"] = o.rank;
  j["algo"] = to_string(o.algorithm);
  j["init"] = to_string(o.init);
  j["seed"] = o.seed;
  j["precision"] = run.precision;
  j["backend"] = result.backend.empty() ? to_string(o.backend) : result.backend;
  j["threads"] = result.threads;
  j["fused"] = result.fused;
  j["penalties"] = {
      {"l1_w", o.penalties.l1_w}, {"l2_w", o.penalties.l2_w}, {"l1_h", o.penalties.l1_h}, {"l2_h", o.penalties.l2_h}};
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
  j["peak_rss_bytes"] = util::peak_rss_bytes();
  j["grid"] = run.grid;
  j["processes"] = run.communication.processes;
  j["communication"] = {
      {"bytes_sent_per_iteration_per_rank", run.communication.bytes_per_iteration_per_rank},
      {"model_bytes_per_iteration_per_rank", run.communication.model_bytes_per_iteration},
      {"model", "DESIGN 4: allgather + reduce-scatter of both factors along the grid, two k x k allreduces"}};
  if (!run.memory_json.empty()) j["memory"] = nlohmann::ordered_json::parse(run.memory_json);
  j["version"] = std::string(dnmf::version());
  j["timestamp"] = utc_timestamp();
  return j.dump(2) + "\n";
}

template std::string factor_report_json<float>(const RunDescription&, const FactorResult<float>&);
template std::string factor_report_json<double>(const RunDescription&, const FactorResult<double>&);

}  // namespace dnmf::cli
