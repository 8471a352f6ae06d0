// Shrinking mapped files (issue 16, item 3). A file mapping whose file is truncated under it raises SIGBUS
// on the next touch of a page past the new end, in whichever thread touches it (the compute threads read
// lent tiles straight from the mapping). A guard registers a mapping with a process-wide SIGBUS handler: a
// fault inside a registered mapping is answered by mapping a page of zeros over the faulting page, so the
// access completes, and by marking the guard, whose owner then reports an IoError before the pass that read
// the zeros is used. A fault anywhere else goes to the handler that was installed before (or kills the
// process as SIGBUS does by default).
#pragma once

#include <cstddef>

namespace dnmf::stream {

/// One registered mapping (at most 64 at once; beyond that the mapping is simply not guarded).
class MappingGuard {
 public:
  MappingGuard(const void* begin, std::size_t bytes);
  ~MappingGuard();
  MappingGuard(const MappingGuard&) = delete;
  MappingGuard& operator=(const MappingGuard&) = delete;

  /// True once a page of the mapping faulted (the file shrank under it); it then reads as zeros.
  [[nodiscard]] bool faulted() const;
  /// Whether the mapping found a slot in the registry.
  [[nodiscard]] bool guarded() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

}  // namespace dnmf::stream
