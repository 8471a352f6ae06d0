// dnmf Python bindings: taking and giving back the GIL from a thread that may outlive the interpreter.
//
// A daemon thread still fitting when the interpreter shuts down must not take the GIL again: CPython answers
// PyGILState_Ensure and PyEval_RestoreThread on a finalizing interpreter by ending the thread (pthread_exit),
// whose forced unwind through nanobind's noexcept GIL guards called std::terminate: the whole process aborted
// (exit 134) at exit, or after Ctrl-C, where numpy's threads end quietly. These guards look first and, on a
// finalizing interpreter, park the thread instead: the process is about to exit, which ends it.
#pragma once

#include <Python.h>

namespace dnmf::python {

/// Whether the interpreter has begun to shut down (its other threads can no longer take the GIL).
inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

/// Blocks this thread for good, touching nothing: the interpreter is finalizing and the process exits next.
[[noreturn]] void park_thread();

/// nb::gil_scoped_acquire for a thread that may outlive the interpreter (see above).
class GilAcquire {
 public:
  GilAcquire() {
    if (interpreter_finalizing()) park_thread();
    state_ = PyGILState_Ensure();
  }
  ~GilAcquire() { PyGILState_Release(state_); }
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  PyGILState_STATE state_{};
};

/// nb::gil_scoped_release whose end parks the thread instead of taking the GIL back from a finalizing
/// interpreter (see above).
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  ~GilRelease() {
    if (interpreter_finalizing()) park_thread();
    PyEval_RestoreThread(state_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace dnmf::python
