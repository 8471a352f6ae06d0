// dnmf CLI: the report.json of `dnmf factor`.
#pragma once

#include <string>
#include <vector>

#include "dnmf/factorize.hpp"
#include "dnmf/options.hpp"

namespace dnmf::cli {

/// Bytes moved between processes (DESIGN §4), for the report.
struct CommunicationFigures {
  int processes = 1;
  std::vector<double> bytes_per_iteration_per_rank;  ///< measured: what each rank sent, per iteration
  double model_bytes_per_iteration = 0;              ///< DESIGN §4's prediction per rank
};

/// What the report says about the run besides the solver's result.
struct RunDescription {
  std::string input;      ///< path as given on the command line
  std::string format;     ///< "npy" or "mtx"
  std::string precision;  ///< "f32" or "f64"
  std::string grid = "1x1";
  index_t m = 0;
  index_t n = 0;
  index_t nnz = 0;  ///< stored entries (sparse) or non-zero entries (dense)
  FactorOptions options;
  CommunicationFigures communication;
  std::string memory_json;  ///< --memory-budget's plan and stream figures (stream_report.hpp); empty: none
};

/// The report as pretty-printed JSON (options, shape, iterations, errors per iteration, timings, peak memory,
/// version, UTC timestamp). Non-finite numbers are written as null.
template <class T>
std::string factor_report_json(const RunDescription& run, const FactorResult<T>& result);

}  // namespace dnmf::cli
