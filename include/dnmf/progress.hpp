// dnmf: the progress lines `dnmf factor` prints, for any front end (the CLI writes them to stderr, the Python
// package to sys.stderr) so that every front end shows the same thing.
#pragma once

#include <string>

#include "dnmf/nmfk.hpp"
#include "dnmf/options.hpp"

namespace dnmf {

/// Turns FactorOptions::progress calls into lines such as
/// `iter 120/1000  rel_error 1.234e-03  0.0123 s/iter  ETA 10.8 s`: one for each of the first 10 iterations,
/// then about every 2% of the iteration budget or after 2 seconds without a line, whichever comes first, and
/// for the last iteration of the budget.
class ProgressLines {
 public:
  /// The line for this iteration (no newline), or an empty string when none is due.
  std::string operator()(const IterationInfo& info);

 private:
  int last_iteration_ = 0;
  double last_seconds_ = 0;
};

/// The line `dnmf nmfk` prints when a job finishes (no newline), e.g.
/// `nmfk: k=4 p=2 rel_error=1.234e-02 iterations=180 0.12 s (7/40)`; with several groups it names the job's.
std::string nmfk_progress_line(const NmfkProgress& progress, int groups);

}  // namespace dnmf
