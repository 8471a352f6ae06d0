// dnmf CLI: SIGINT and SIGTERM stop a factorisation cleanly. The first signal only sets a flag that the
// solver's cancel hook polls after every iteration, so the run unwinds, removes its staging folder and leaves
// the previous output set as it was; a second signal of the same kind ends the process at once.
#pragma once

namespace dnmf::cli {

/// Installs the handlers (for the commands that write output sets).
void stop_on_signals();

/// The signal that asked to stop (SIGINT, SIGTERM), or 0.
[[nodiscard]] int stop_signal();

}  // namespace dnmf::cli
