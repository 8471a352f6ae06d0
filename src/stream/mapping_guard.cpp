#include "stream/mapping_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace dnmf::stream {
namespace {

// Lock-free, so that the handler reads it safely whatever the interrupted thread was doing.
struct Slot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};
static_assert(std::atomic<std::uintptr_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

std::array<Slot, 64> slots;
struct sigaction previous_action {};
std::once_flag installed;

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& slot : slots) {
    const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    // 0: free; 1: the placeholder of a slot being claimed, whose end may already be stored while its begin is not.
    if (begin <= 1 || address < begin || address >= slot.end.load(std::memory_order_acquire)) continue;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* at = reinterpret_cast<void*>(address - address % page);  // NOLINT(performance-no-int-to-ptr)
    // Zeros where the file was: the faulting read completes, and the owner reports the shrink.
    if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      slot.faulted.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  // Not ours: the handler before us, or the default action (the fault repeats on return and ends the process).
  if ((previous_action.sa_flags & SA_SIGINFO) != 0 && previous_action.sa_sigaction != nullptr) {
    previous_action.sa_sigaction(signal, info, context);
  } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signal);
  } else {
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    ::sigaction(SIGBUS, &fallback, nullptr);
  }
}

void install() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &previous_action);
}

}  // namespace

MappingGuard::MappingGuard(const void* begin, std::size_t bytes) {
  std::call_once(installed, install);
  for (std::size_t s = 0; s < slots.size(); ++s) {
    std::uintptr_t expected = 0;
    // Claimed with a placeholder first, so that no fault is matched against a half-written range.
    if (!slots[s].begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    const auto first = reinterpret_cast<std::uintptr_t>(begin);
    slots[s].faulted.store(false, std::memory_order_relaxed);
    slots[s].end.store(first + bytes, std::memory_order_release);
    slots[s].begin.store(first, std::memory_order_release);
    slot_ = static_cast<int>(s);
    return;
  }
}

MappingGuard::~MappingGuard() {
  if (slot_ < 0) return;
  Slot& slot = slots[static_cast<std::size_t>(slot_)];
  slot.end.store(0, std::memory_order_release);
  slot.begin.store(0, std::memory_order_release);
}

bool MappingGuard::faulted() const {
  return slot_ >= 0 && slots[static_cast<std::size_t>(slot_)].faulted.load(std::memory_order_acquire);
}

}  // namespace dnmf::stream
