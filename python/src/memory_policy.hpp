// dnmf Python bindings: the process's malloc policy for repeated fits.
#pragma once

namespace dnmf::python {

/// Makes glibc keep freed memory for reuse (mmap threshold 16 MiB, trim threshold 64 MiB) unless the user chose
/// a policy (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES set) or turned this off
/// (DNMF_MALLOC_TUNING=0). Returns whether the policy was set. Why: with glibc's defaults every fit returns its
/// megabytes of buffers to the system and the next fit faults them in again, at ~0.7 ms per MiB on a virtual
/// machine: half of a short fit's time (docs/python.md, "Memory between fits").
bool keep_freed_memory();

}  // namespace dnmf::python
