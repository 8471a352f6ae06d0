// dnmf Python bindings: what runs in Python while the library computes with the GIL released — the progress
// callback, the verbose lines, and Ctrl-C.
#pragma once

#include <nanobind/nanobind.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "dnmf/options.hpp"
#include "dnmf/progress.hpp"

namespace dnmf::python {

/// Connects FactorOptions::progress and FactorOptions::cancel to Python. The library calls both on rank 0 after
/// every iteration from the thread that released the GIL; each call takes the GIL back briefly. A signal
/// (Ctrl-C) or an exception raised by the callback stops the run through `cancel`, and rethrow() raises it in
/// Python once the library has unwound (nothing half-done is returned).
class PythonHooks {
 public:
  /// `callback(iteration, rel_error)` is called after every iteration when not None; a true return value
  /// stops the run (dnmf.Cancelled). `verbose` writes the CLI's progress lines to sys.stderr.
  PythonHooks(nanobind::object callback, bool verbose);

  /// Installs the hooks into `options` (they refer to this object, which must outlive the run).
  void install(FactorOptions& options);
  /// Records an exception raised by Python code the library called (it stops the run; rethrow_pending() raises
  /// it). Call with the GIL held.
  void fail(nanobind::python_error&& error);
  /// Stops the run at the next poll of `cancel` without an exception of its own (dnmf.Cancelled is raised): a
  /// callback's true answer.
  void request_stop() { stop_requested_ = true; }
  /// After dnmf::Cancelled: raises KeyboardInterrupt or the callback's exception when one of those stopped the
  /// run; returns when the stop was the callback's request.
  void rethrow_pending();

 private:
  void on_iteration(const IterationInfo& info);
  bool should_stop();

  nanobind::object callback_;
  bool verbose_;
  ProgressLines lines_;
  bool stop_requested_ = false;
  std::optional<nanobind::python_error> pending_;
  std::chrono::steady_clock::time_point last_signal_check_;
  // Signals reach Python's main thread only (PyErr_CheckSignals elsewhere returns at once): polls from any other
  // thread take no GIL. Such a poll from a daemon thread could wait for the GIL while the interpreter began to
  // shut down, and CPython then ended the thread by an unwind that aborted the process.
  std::thread::id signal_thread_;  // the caller's thread where that is Python's main thread, else none
};

/// Writes `text` to sys.stderr, as print(..., file=sys.stderr) would: nothing when sys.stderr is None (pythonw,
/// some daemons). An exception from the write is the caller's (a broken stderr stops the run, as print's would).
/// Call with the GIL held.
void write_stderr(const std::string& text);

}  // namespace dnmf::python
