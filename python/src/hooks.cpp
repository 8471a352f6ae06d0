// See hooks.hpp.

#include "hooks.hpp"

#include <Python.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <thread>
#include <utility>

#include "gil.hpp"

namespace nb = nanobind;

namespace dnmf::python {

PythonHooks::PythonHooks(nb::object callback, bool verbose)
    : callback_(std::move(callback)), verbose_(verbose), last_signal_check_(std::chrono::steady_clock::now()) {
  const nb::object threading = nb::module_::import_("threading");
  if (threading.attr("current_thread")().is(threading.attr("main_thread")()))
    signal_thread_ = std::this_thread::get_id();
}

void PythonHooks::install(FactorOptions& options) {
  if (verbose_ || !callback_.is_none()) options.progress = [this](const IterationInfo& info) { on_iteration(info); };
  options.cancel = [this] { return should_stop(); };
}

void PythonHooks::on_iteration(const IterationInfo& info) {
  if (stop_requested_) return;
  GilAcquire gil;
  try {
    if (verbose_) {
      const std::string line = lines_(info);
      if (!line.empty()) write_stderr(line + "\n");
    }
    if (!callback_.is_none()) {
      const nb::object answer = callback_(info.iteration, info.rel_error);
      // -1: the answer's truth value raised (a NumPy array, say); that error is the callback's to report.
      const int truth = PyObject_IsTrue(answer.ptr());
      if (truth < 0) throw nb::python_error();
      if (truth == 1) stop_requested_ = true;
    }
  } catch (nb::python_error& e) {
    fail(std::move(e));
  }
}

void PythonHooks::fail(nb::python_error&& error) {
  pending_.emplace(std::move(error));
  stop_requested_ = true;
}

bool PythonHooks::should_stop() {
  // The interpreter is going away (a daemon thread's fit at exit): stop here, touching nothing of Python, before
  // exit's teardown frees what the fit reads (it crashed, SIGSEGV, computing on through it).
  if (interpreter_finalizing()) park_thread();
  if (stop_requested_) return true;
  if (std::this_thread::get_id() != signal_thread_) return false;
  // Taking the GIL costs about a microsecond; a tiny problem's iteration costs tens, so look at most every 20 ms
  // — still well inside the second a person waits after Ctrl-C.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_signal_check_ < std::chrono::milliseconds(20)) return false;
  last_signal_check_ = now;
  GilAcquire gil;
  if (PyErr_CheckSignals() != 0) {
    pending_.emplace();  // takes the KeyboardInterrupt (or whatever the handler raised) out of the interpreter
    stop_requested_ = true;
  }
  return stop_requested_;
}

void PythonHooks::rethrow_pending() {
  if (pending_) {
    nb::python_error e = std::move(*pending_);
    pending_.reset();
    throw e;
  }
}

void park_thread() {
  // The parked call still holds its arguments: nanobind would list them as leaks when the interpreter ends.
  nb::set_leak_warnings(false);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
}

void write_stderr(const std::string& text) {
  const nb::object stderr_object = nb::module_::import_("sys").attr("stderr");
  if (!stderr_object.is_none()) stderr_object.attr("write")(text);
}

}  // namespace dnmf::python
