// See hooks.hpp.

#include "hooks.hpp"

#include <Python.h>
#include <nanobind/stl/string.h>

#include <utility>

namespace nb = nanobind;

namespace dnmf::python {

PythonHooks::PythonHooks(nb::object callback, bool verbose)
    : callback_(std::move(callback)), verbose_(verbose), last_signal_check_(std::chrono::steady_clock::now()) {}

void PythonHooks::install(FactorOptions& options) {
  if (verbose_ || !callback_.is_none()) options.progress = [this](const IterationInfo& info) { on_iteration(info); };
  options.cancel = [this] { return should_stop(); };
}

void PythonHooks::on_iteration(const IterationInfo& info) {
  if (stop_requested_) return;
  nb::gil_scoped_acquire gil;
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
  if (stop_requested_) return true;
  // Taking the GIL costs about a microsecond; a tiny problem's iteration costs tens, so look at most every 20 ms
  // — still well inside the second a person waits after Ctrl-C.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_signal_check_ < std::chrono::milliseconds(20)) return false;
  last_signal_check_ = now;
  nb::gil_scoped_acquire gil;
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

void write_stderr(const std::string& text) {
  const nb::object stderr_object = nb::module_::import_("sys").attr("stderr");
  if (!stderr_object.is_none()) stderr_object.attr("write")(text);
}

}  // namespace dnmf::python
