// dnmf internal: named points where tests make the output commit fail or die, to prove that the previous output set
// survives each step (docs/reliability.md). Without the variables every point is a no-op.
#pragma once

namespace dnmf::io {

/// DNMF_TEST_FAIL_AT=<step>: throws IoError at `step`, as a failing system call would. DNMF_TEST_KILL_AT=<step>:
/// the process dies of SIGKILL there, as under `kill -9` or a power cut (no destructor, no cleanup).
/// DNMF_TEST_SIGNAL_AT=<step>: the process sends itself SIGTERM there, as a user's `kill` at that moment.
void fault_point(const char* step);

/// DNMF_TEST_NO_EXCHANGE set: behave as on a file system without renameat2(RENAME_EXCHANGE), so that the
/// fallback commit is tested on Linux too.
[[nodiscard]] bool exchange_disabled_for_test();

}  // namespace dnmf::io
