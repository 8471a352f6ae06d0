// dnmf CLI: progress lines of a factorisation, on stderr.
#pragma once

#include "dnmf/options.hpp"

namespace dnmf::cli {

/// A FactorOptions::progress callback printing
/// `iter 120/1000  rel_error 1.234e-03  0.0123 s/iter  ETA 10.8 s` to stderr: every iteration for the first 10,
/// then about every 2% of the iteration budget or after 2 seconds without a line, whichever comes first, and
/// the last iteration of the budget.
class ProgressPrinter {
 public:
  void operator()(const IterationInfo& info);

 private:
  int last_iteration_ = 0;
  double last_seconds_ = 0;
};

}  // namespace dnmf::cli
