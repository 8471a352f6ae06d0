// The library's messages name the CLI's flags (`use --precision f64`); raised from Python they name the keyword
// (`use precision='f64'`).
#pragma once

#include <string>

namespace dnmf::python {

/// `message` with each CLI flag the Python API has a keyword for written as that keyword: with its value where the
/// flag takes one (`--grid 2x2` → `grid='2x2'`, `--threads 8` → `n_threads=8`), `=True` for a switch
/// (`--extrapolate` → `extrapolate=True`), the bare name where no value follows (`--memory-budget:` →
/// `memory_budget:`). Flags without a keyword stay as they are.
std::string with_python_keywords(std::string message);

}  // namespace dnmf::python
