// dnmf: how a job runs — on one process or a group of MPI processes, on which process grid, backend and
// device, with how many threads and within which memory budgets. What is computed is FactorOptions' business;
// where and how it runs is the context's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dnmf/options.hpp"

namespace dnmf {

namespace detail {
struct ContextState;
}

/// The processes of a job and the resources each one computes with. Copies share the same processes.
/// Every process of the context calls the collective entry points (factor(), nmfk()) with equal arguments.
class Context {
 public:
  /// One process; MPI is never initialised, even in a program started by mpirun.
  Context();
  /// The job's processes: MPI's world when the program was started by an MPI launcher (mpirun, srun), else one
  /// process. MPI is initialised on first use and finalised at exit.
  static Context world();

  /// This process's rank in the context, 0-based.
  [[nodiscard]] int rank() const;
  /// Number of processes.
  [[nodiscard]] int size() const;
  /// "single" or "mpi".
  [[nodiscard]] std::string communicator_name() const;
  /// Ends every process of the job with `code`: the way out when one process fails alone, so that no other
  /// waits forever in a collective.
  [[noreturn]] void abort(int code) const;
  /// Runs `step` on rank 0 only, then every rank learns whether it failed: a dnmf::Error thrown there becomes a
  /// CollectiveError with the same message on every rank (e.g. creating an output folder).
  void on_root(const std::function<void()>& step) const;
  /// Collective: rank 0's `text` on every rank (e.g. the name of a staging folder only rank 0 can choose).
  [[nodiscard]] std::string broadcast(std::string text) const;

  /// The process grid: "auto" or "PRxPC", whose product must equal size(). "auto": on the cpu backend the shape
  /// a cost model predicts fastest (compute path, block shape, words moved; docs/scaling.md), elsewhere the
  /// shape moving the fewest words per process (DESIGN §4). For nmfk() it is the grid of each process group
  /// (fewest words).
  std::string grid = "auto";
  /// Where the kernels run (FactorOptions::backend is replaced by this one in factor() and nmfk()).
  BackendKind backend = BackendKind::cpu;
  /// CUDA device ordinal; -1: the runtime's current device. Only -1 is accepted today.
  int device = -1;
  /// OpenMP threads per process; 0: OpenMP's default (replaces FactorOptions::threads in factor() and nmfk()).
  int threads = 0;
  /// Host memory budget per process in bytes; 0: none (A is held in memory). With a budget, factor() plans
  /// resident or streamed execution and stays within it (DESIGN §5); report.json gets a "memory" section.
  std::int64_t memory_budget = 0;
  /// Device memory budget in bytes; 0: the device's free memory. Only 0 is accepted today.
  std::int64_t device_memory_budget = 0;

  /// The shared state behind the context (library-internal).
  [[nodiscard]] detail::ContextState& state() const { return *state_; }
  /// Wraps existing state (library-internal: how dnmf/mpi.hpp builds a context on a host program's communicator).
  explicit Context(std::shared_ptr<detail::ContextState> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::ContextState> state_;
};

/// True when `kind` is compiled in and usable here (e.g. a CUDA device is present); else `why_not` (if given)
/// receives the reason.
bool backend_available(BackendKind kind, std::string* why_not = nullptr);

/// Throws dnmf::Error naming `text` unless it is "auto" or "PRxPC" with whole numbers >= 1 (Context::grid).
void check_grid(const std::string& text);

/// Parses a byte count as people write it: a positive number with an optional suffix K, M, G or T (powers of
/// 1024, "KiB", "MB" and "GiB" spellings too); throws dnmf::Error naming the text, for "0" too (no budget is
/// Context::memory_budget = 0, not a parsed "0").
[[nodiscard]] std::int64_t parse_bytes(const std::string& text);
/// "256.0 MiB": a byte count for people.
[[nodiscard]] std::string human_bytes(double bytes);
/// Peak resident set size of this process in bytes (0 where the system does not say).
[[nodiscard]] std::int64_t peak_rss_bytes();

}  // namespace dnmf
