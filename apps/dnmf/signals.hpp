// dnmf CLI: SIGINT and SIGTERM stop a factorisation cleanly. The first signal only sets a flag that the
// solver's cancel hook polls after every iteration, so the run unwinds, removes its staging folder and leaves
// the previous output set as it was; a second signal of the same kind ends the process at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dnmf/output_set.hpp"

namespace dnmf::cli {

/// Installs the handlers (for the commands that write output sets).
void stop_on_signals();

/// The signal that asked to stop (SIGINT, SIGTERM), or 0.
[[nodiscard]] int stop_signal();

/// For a command that writes one file and has no loop to poll a flag (convert): SIGINT and SIGTERM remove the
/// temporary being filled (io::remove_temporaries_in_flight), print one line naming `output` and end the process
/// with 128 + the signal. A killed convert left its partial OUT.tmp.<pid>.<n> beside the output.
void end_writes_on_signals(const std::string& output);

/// With end_writes_on_signals: `paths` (at most 4; staged files of gen's set) are also removed by the signal's
/// handler. A killed gen left .A.npy.gen.<pid> and its siblings behind.
void remove_on_signals(const std::vector<std::string>& paths);

/// Whether `digits` (the process-id part of a temporary's name) are the id of a process that no longer exists:
/// what a run killed outright (SIGKILL) left behind. False for text that is no process id (too many digits for
/// one: std::stoll threw "stoll" on such a neighbour's name, exit 1).
[[nodiscard]] bool gone_process(std::string_view digits);

/// A file size limit (ulimit -f) makes writes fail with EFBIG, reported as the I/O error it is, instead of
/// SIGXFSZ ending the process with its temporaries in place. Likewise SIGPIPE: a reader of stderr or stdout that
/// went away (`dnmf factor ... 2>&1 | head -2`) ended the run with exit 141 and its staging folder left; the
/// writes now fail with EPIPE and the run goes on to commit.
void report_file_size_limits();

/// Commits `out` (OutputSet::commit with `carry`) unless SIGINT or SIGTERM has arrived by the time its files are
/// durable (Cancelled, the previous set in place). A signal during the swap itself is reported after it: Cancelled
/// saying that the new set is in place. Either way the exit status is 128 + the signal (it had been 0).
void commit_unless_stopped(OutputSet& out, const std::vector<std::string>& carry = {});

}  // namespace dnmf::cli
