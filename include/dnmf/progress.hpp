// dnmf: the progress lines `dnmf factor` prints, for any front end (the CLI writes them to stderr, the Python
// package to sys.stderr) so that every front end shows the same thing.
#pragma once

#include <string>

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

}  // namespace dnmf
