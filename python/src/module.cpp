// dnmf._core: the public C++ API (include/dnmf/) for the Python package. Only the calls and conversions live
// here; the estimators' behaviour is written in Python (python/dnmf/). Every computation runs with the GIL
// released.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "arguments.hpp"
#include "c_locale.hpp"
#include "dnmf/context.hpp"
#include "dnmf/error.hpp"
#include "dnmf/factor.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/nmfk.hpp"
#include "dnmf/output_set.hpp"
#include "dnmf/progress.hpp"
#include "dnmf/source.hpp"
#include "dnmf/version.hpp"
#include "gil.hpp"
#include "hooks.hpp"
#include "keyword_messages.hpp"
#include "memory_policy.hpp"
#include "sources.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace dnmf::python {
namespace {

/// A float array of the given precision (any strides) as a matrix the library owns (initial factors).
template <class T>
DenseMatrix<T> dense_copy(const AnyMatrix& a, const char* name) {
  if (a.dtype() != nb::dtype<T>())
    throw nb::type_error((std::string("dnmf: ") + name + " must have the input's dtype").c_str());
  DenseMatrix<T> m(static_cast<index_t>(a.shape(0)), static_cast<index_t>(a.shape(1)));
  const auto* data = static_cast<const T*>(a.data());
  const index_t s0 = a.stride(0), s1 = a.stride(1);
  // In blocks of 64 rows, so that a C-order array (numpy's default) is read along its rows and written down
  // the columns without a pass over the whole array per column.
  constexpr index_t kRows = 64;
  for (index_t i0 = 0; i0 < m.rows(); i0 += kRows) {
    const index_t i1 = std::min(m.rows(), i0 + kRows);
    for (index_t i = i0; i < i1; ++i)
      for (index_t j = 0; j < m.cols(); ++j) m(i, j) = data[i * s0 + j * s1];
  }
  return m;
}

/// Runs `work` with the GIL released; a stop requested from Python (Ctrl-C, the callback's exception) is
/// raised in Python, a stop asked by the callback's return value as dnmf.Cancelled.
template <class Work>
auto run_released(PythonHooks& hooks, Work&& work) {
  try {
    GilRelease released;
    return work();
  } catch (const Cancelled&) {
    hooks.rethrow_pending();
    throw;
  }
}

template <class T>
nb::dict factorization_dict(Factorization<T>&& run) {
  nb::dict out;
  FactorResult<T>& r = run.result;
  const bool gathered = r.W.rows() > 0 || r.H.cols() > 0;
  if (!gathered && run.communication.processes == 1 && run.w_block.cols() == run.m && run.h_block.cols() == run.n) {
    // One process left its blocks ungathered (factor_as): Wᵀ's storage is a C-order W as it is, H's a Fortran H.
    out["W"] = nb::cast(to_numpy(std::move(run.w_block), true));
    out["H"] = nb::cast(to_numpy(std::move(run.h_block)));
  } else {
    out["W"] = gathered ? nb::cast(to_numpy(std::move(r.W))) : nb::none();
    out["H"] = gathered ? nb::cast(to_numpy(std::move(r.H))) : nb::none();
  }
  out["iterations"] = r.iterations;
  out["converged"] = r.converged;
  out["rel_error"] = r.rel_error;
  out["norm_a"] = r.norm_a;
  out["objective"] = r.objective;
  out["rel_error_history"] = r.rel_error_history;
  out["objective_history"] = r.objective_history;
  out["seconds"] = r.seconds;
  out["threads"] = r.threads;
  out["backend"] = r.backend;
  out["grid"] = run.grid;
  out["shape"] = nb::make_tuple(run.m, run.n);
  out["report_json"] = report_json(run);
  return out;
}

template <class T>
nb::dict factor_as(const Source& source, const nb::dict& kwargs, const Context& context, std::optional<AnyMatrix> w0,
                   std::optional<AnyMatrix> h0, nb::object callback, bool verbose) {
  FactorOptions options = factor_options(kwargs);
  std::optional<InitialFactors<T>> initial;
  if (w0 && h0) initial = InitialFactors<T>{dense_copy<T>(*w0, "W"), dense_copy<T>(*h0, "H")};
  PythonHooks hooks(std::move(callback), verbose && context.rank() == 0);
  hooks.install(options);
  const auto start = std::chrono::steady_clock::now();
  // One process hands its blocks over as they are (factorization_dict): gathering W would transpose it first.
  const Gather gather = context.size() == 1 ? Gather::none : Gather::to_root;
  Factorization<T> run = run_released(
      hooks, [&] { return dnmf::factor<T>(source, options, context, gather, initial ? &*initial : nullptr); });
  const double library_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nb::dict out = factorization_dict(std::move(run));
  out["library_seconds"] = library_seconds;  // the call the CLI makes too: the rest is the binding's cost
  return out;
}

nb::dict factor_entry(const Source& source, const nb::dict& kwargs, bool single, std::optional<AnyMatrix> w0,
                      std::optional<AnyMatrix> h0, const nb::object& callback, bool verbose) {
  const CLocaleScope c_locale;  // figures printed and parsed with points, as the CLI does
  const Context context = make_context(kwargs);
  if (single) return factor_as<float>(source, kwargs, context, std::move(w0), std::move(h0), callback, verbose);
  return factor_as<double>(source, kwargs, context, std::move(w0), std::move(h0), callback, verbose);
}

template <class T>
nb::dict rank_dict(NmfkRank<T>&& r) {
  nb::dict d;
  d["k"] = r.k;
  d["silhouettes"] = r.silhouettes;
  d["min_silhouette"] = r.min_silhouette;
  d["mean_silhouette"] = r.mean_silhouette;
  if (!r.h_silhouettes.empty()) {  // computed only when asked for: zeros would read as "no cluster structure"
    d["h_silhouettes"] = r.h_silhouettes;
    d["h_min_silhouette"] = r.h_min_silhouette;
    d["h_mean_silhouette"] = r.h_mean_silhouette;
  }
  d["rel_error"] = r.rel_error;
  d["column_errors"] = r.column_errors;
  d["perturbation_errors"] = r.perturbation_errors;
  d["perturbation_iterations"] = r.perturbation_iterations;
  d["rejected_perturbations"] = r.rejected_perturbations;
  d["accepted"] = r.accepted;
  d["seconds"] = r.seconds;
  d["W"] = to_numpy(std::move(r.W));
  d["H"] = to_numpy(std::move(r.H));
  return d;
}

nb::object optional_k(const std::optional<index_t>& k) { return k ? nb::cast(*k) : nb::none(); }

template <class T>
nb::dict nmfk_as(const Source& source, const nb::dict& kwargs, const Context& context, const std::string& output_dir,
                 const nb::object& callback, bool verbose) {
  NmfkOptions options = nmfk_options(kwargs);
  PythonHooks hooks(nb::none(), false);
  hooks.install(options.factor);
  options.factor.progress = nullptr;
  const bool root = context.rank() == 0;
  if (root && (verbose || !callback.is_none())) {
    options.progress = [&](const NmfkProgress& p) {
      GilAcquire gil;
      // A Python exception must not unwind through the library: it is recorded, stops the run at the next poll
      // and is raised once the library has unwound. A true answer stops the run as NMF's callback does.
      try {
        if (verbose) write_stderr(nmfk_progress_line(p, options.groups) + "\n");
        if (!callback.is_none()) {
          const nb::object answer = callback(p.k, p.perturbation, p.rel_error);
          const int truth = PyObject_IsTrue(answer.ptr());  // -1: its truth value raised (a NumPy array, say)
          if (truth < 0) throw nb::python_error();
          if (truth == 1) hooks.request_stop();
        }
      } catch (nb::python_error& e) {
        hooks.fail(std::move(e));
      }
    };
  }
  // The outputs are one set, replaced whole as the CLI's are (a second run left the first's k_ folders beside its
  // own nmfk.json); the folder is checked, and staged, before the sweep.
  std::optional<OutputSet> output_set;
  if (root && !output_dir.empty())
    output_set.emplace(output_dir,
                       source.is_file() ? std::vector<std::string>{source.name()} : std::vector<std::string>{});
  NmfkResult<T> result = [&] {
    try {
      return run_released(hooks, [&] { return dnmf::nmfk<T>(source, options, context); });
    } catch (const Cancelled& e) {
      // "cancelled at iteration 1" (of the job in progress) said neither what was kept nor what to do next, as
      // the CLI's message does.
      const std::string kept =
          options.checkpoint_dir.empty()
              ? "; nothing was kept (with checkpoint_dir set, finished jobs are kept and a rerun resumes them)"
              : "; the jobs finished so far are checkpointed in " + options.checkpoint_dir +
                    ": the same call with restart=False resumes them";
      throw Cancelled("NMFk stopped by its callback (" + std::string(e.what()) + ")" + kept);
    }
  }();
  nb::dict out;
  const NmfkSelection& s = result.selection;
  out["selected_k"] = optional_k(s.selected_k);
  out["decided_by"] = to_string(s.decided_by);
  out["silhouette_k"] = optional_k(s.silhouette_k);
  out["wilcoxon_k"] = optional_k(s.wilcoxon_k);
  out["cv_k"] = optional_k(s.cv_k);
  out["best_candidate"] = s.best_candidate;
  out["message"] = s.message;
  out["seconds"] = result.seconds;
  out["jobs_run"] = result.jobs_run;
  out["jobs_loaded"] = result.jobs_loaded;
  nb::list data_warnings;
  for (const std::string& text : result.warnings) data_warnings.append(with_python_keywords(text));
  out["warnings"] = data_warnings;
  if (root && !output_dir.empty()) {
    const NmfkRunInfo info = nmfk_run_info<T>(source);
    // Without the GIL: gnuplot may take up to DNMF_GNUPLOT_SECONDS, and other Python threads stalled meanwhile.
    NmfkOutputs files = [&] {
      GilRelease released;
      return write_nmfk_outputs(result, options, info, output_set->staging(), output_dir);
    }();
    // A Ctrl-C while the outputs were written stopped gnuplot (a warning) and was then swallowed: the set was
    // committed without its plots and no KeyboardInterrupt came. It is raised now, and nothing is committed.
    hooks.rethrow_pending();
    output_set->commit({"checkpoints"});  // checkpoints kept in the folder outlive its sets, as the CLI's do
    // The committed set's names, not the staging folder's.
    const std::string staging = output_set->staging();
    if (files.json.rfind(staging, 0) == 0) files.json = output_dir + files.json.substr(staging.size());
    out["json"] = files.json;
    out["plot_warning"] = files.plot_warning;
  }
  nb::list ranks;
  for (NmfkRank<T>& r : result.ranks) ranks.append(rank_dict(std::move(r)));
  out["ranks"] = ranks;
  out["cv"] = nb::none();
  if (result.cv) {
    nb::dict cv;
    std::vector<index_t> ks;
    std::vector<double> mean, standard_error;
    std::vector<std::vector<double>> fold_errors;
    for (const CrossValidationRank& r : result.cv->ranks) {
      ks.push_back(r.k);
      mean.push_back(r.mean);
      standard_error.push_back(r.standard_error);
      fold_errors.push_back(r.fold_errors);
    }
    cv["ks"] = ks;
    cv["mean"] = mean;
    cv["standard_error"] = standard_error;
    cv["fold_errors"] = fold_errors;
    cv["held_out"] = result.cv->held_out;
    cv["unobserved_rows"] = result.cv->unobserved_rows;
    cv["unobserved_cols"] = result.cv->unobserved_cols;
    cv["emptied_rows_per_fold"] = result.cv->emptied_rows;
    cv["emptied_cols_per_fold"] = result.cv->emptied_cols;
    cv["warning"] = cross_validation_warning(*result.cv);
    cv["best_k"] = result.cv->best_k;
    cv["selected_k"] = result.cv->selected_k;
    cv["seconds"] = result.cv->seconds;
    out["cv"] = cv;
  }
  return out;
}

nb::dict nmfk_entry(const Source& source, const nb::dict& kwargs, bool single, const std::string& output_dir,
                    const nb::object& callback, bool verbose) {
  const CLocaleScope c_locale;  // figures printed and parsed with points, as the CLI does
  const Context context = make_context(kwargs);
  if (single) return nmfk_as<float>(source, kwargs, context, output_dir, callback, verbose);
  return nmfk_as<double>(source, kwargs, context, output_dir, callback, verbose);
}

template <class T>
nb::tuple transform_as(const Source& data, const AnyMatrix& basis, BackendKind backend, const TransformPenalty& penalty,
                       int threads) {
  const MatrixRef<T>* a = data.stored<T>();
  if (a == nullptr || data.transposed())
    throw nb::type_error("dnmf: transform needs Xᵀ in Fortran order (CSC for sparse) of the basis's dtype");
  const DenseMatrix<T> w = dense_copy<T>(basis, "the basis");
  TransformResult<T> r;
  {
    GilRelease released;
    r = dnmf::transform<T>(*a, w.view(), backend, penalty, threads);
  }
  return nb::make_tuple(to_numpy(std::move(r.H)), r.rel_error);
}

nb::tuple transform_entry(const Source& data, const AnyMatrix& basis, const std::string& backend, double l1, double l2,
                          int threads) {
  const CLocaleScope c_locale;  // figures printed and parsed with points, as the CLI does
  const BackendKind kind = parse_backend(backend);
  const TransformPenalty penalty{l1, l2};
  if (data.holds_float()) return transform_as<float>(data, basis, kind, penalty, threads);
  return transform_as<double>(data, basis, kind, penalty, threads);
}

template <class T>
nb::tuple transform_masked_as(const Source& data, const AnyMatrix& basis, const MissingValues& missing,
                              BackendKind backend, const TransformPenalty& penalty, int threads) {
  const DenseMatrix<T> w = dense_copy<T>(basis, "the basis");
  TransformResult<T> r;
  {
    GilRelease released;
    r = dnmf::transform<T>(data, w.view(), missing, backend, penalty, threads);
  }
  return nb::make_tuple(to_numpy(std::move(r.H)), r.rel_error, r.unobserved_cols);
}

/// transform() with missing values: `mask` (a Source of A's shape, or None), NaN as missing, unstored as missing.
nb::tuple transform_masked_entry(const Source& data, const AnyMatrix& basis, std::optional<Source> mask,
                                 bool nan_missing, const std::string& unstored, const std::string& backend, double l1,
                                 double l2, int threads) {
  const CLocaleScope c_locale;  // figures printed and parsed with points, as the CLI does
  MissingValues missing;
  missing.mask = std::move(mask);
  missing.nan_missing = nan_missing;
  missing.unstored = parse_unstored(unstored);
  const BackendKind kind = parse_backend(backend);
  const TransformPenalty penalty{l1, l2};
  if (data.holds_float()) return transform_masked_as<float>(data, basis, missing, kind, penalty, threads);
  return transform_masked_as<double>(data, basis, missing, kind, penalty, threads);
}

}  // namespace
}  // namespace dnmf::python

NB_MODULE(_core, m) {
  using namespace dnmf::python;
  m.doc() = "dnmf's C++ library (use the dnmf package, not this module)";
  m.attr("malloc_tuned") = keep_freed_memory();
  // The library's messages are what users see: dnmf.Error is a ValueError, as scikit-learn raises for bad data.
  static PyObject* const error = PyErr_NewException("dnmf.Error", PyExc_ValueError, nullptr);
  // One Python class per ErrorKind, so that callers can tell "fix your data" from "fix your file system"; an
  // I/O failure is also an OSError, as Python's own file errors are.
  static PyObject* const usage_error = PyErr_NewException("dnmf.UsageError", error, nullptr);
  static PyObject* const data_error = PyErr_NewException("dnmf.DataError", error, nullptr);
  static PyObject* const io_error =
      PyErr_NewException("dnmf.IoError", nb::make_tuple(nb::handle(error), nb::handle(PyExc_OSError)).ptr(), nullptr);
  static PyObject* const numerical_error = PyErr_NewException("dnmf.NumericalError", error, nullptr);
  // A stop the callback asked for; Ctrl-C raises KeyboardInterrupt instead.
  static PyObject* const cancelled = PyErr_NewException("dnmf.Cancelled", error, nullptr);
  m.attr("Error") = nb::handle(error);
  m.attr("UsageError") = nb::handle(usage_error);
  m.attr("DataError") = nb::handle(data_error);
  m.attr("IoError") = nb::handle(io_error);
  m.attr("NumericalError") = nb::handle(numerical_error);
  m.attr("Cancelled") = nb::handle(cancelled);
  // The library's messages name the CLI's flags (--precision f64); from Python they name the keyword instead.
  static const auto for_python = [](std::string message) {
    // The NaN hint lists every interface; here the keyword alone (python/tests/test_functions.py checks the text).
    static const std::string nan_hint =
        "(NaN entries of A can be fitted as missing values: --missing nan, MissingValues::nan_missing in C++, or "
        "dnmf.NMF().fit(X, missing='nan'))";
    static const std::string python_hint = "(missing='nan' takes NaN entries as missing)";
    for (auto at = message.find(nan_hint); at != std::string::npos; at = message.find(nan_hint, at))
      message.replace(at, nan_hint.size(), python_hint);
    // nmfk's own hint names the CLI's cv and a C++ function; the Python package has neither.
    static const std::string nmfk_hint =
        "(nmfk needs every entry; dnmf cv --missing nan, or dnmf::cross_validate, chooses k with NaN entries as "
        "missing)";
    static const std::string nmfk_python_hint =
        "(NMFk needs every entry; on the command line, dnmf cv chooses k with NaN entries as missing)";
    for (auto at = message.find(nmfk_hint); at != std::string::npos; at = message.find(nmfk_hint, at))
      message.replace(at, nmfk_hint.size(), nmfk_python_hint);
    return dnmf::python::with_python_keywords(std::move(message));
  };
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const dnmf::Cancelled& e) {
      PyErr_SetString(cancelled, for_python(e.what()).c_str());
    } catch (const dnmf::Error& e) {
      PyObject* type = error;
      switch (e.kind()) {
        case dnmf::ErrorKind::usage:
          type = usage_error;
          break;
        case dnmf::ErrorKind::data:
          type = data_error;
          break;
        case dnmf::ErrorKind::io:
          type = io_error;
          break;
        case dnmf::ErrorKind::numerical:
          type = numerical_error;
          break;
        case dnmf::ErrorKind::general:
          break;
      }
      PyErr_SetString(type, for_python(e.what()).c_str());
    }
  });
  m.attr("__version__") = DNMF_VERSION_STRING;
#ifdef DNMF_HAVE_MPI
  m.attr("has_mpi") = true;
#else
  m.attr("has_mpi") = false;
#endif

  nb::class_<dnmf::Source>(m, "Source", "A matrix file or an in-memory matrix, borrowed without a copy.")
      .def_static("file", &dnmf::Source::file, "path"_a)
      .def_static("dense", &dense_source, "array"_a)
      .def_static("sparse", &sparse_source, "rows"_a, "cols"_a, "indptr"_a, "indices"_a, "data"_a, "by_rows"_a)
      .def_prop_ro("name", &dnmf::Source::name)
      .def_prop_ro("transposed", &dnmf::Source::transposed)
      .def_prop_ro("is_file", &dnmf::Source::is_file)
      .def_prop_ro("holds_float", &dnmf::Source::holds_float);

  m.def("factor", &factor_entry, "source"_a, "options"_a, "single"_a, "W0"_a.none() = nb::none(),
        "H0"_a.none() = nb::none(), "callback"_a.none() = nb::none(), "verbose"_a = false);
  m.def("nmfk", &nmfk_entry, "source"_a, "options"_a, "single"_a, "output_dir"_a = "", "callback"_a.none() = nb::none(),
        "verbose"_a = false);
  m.def("transform", &transform_entry, "data"_a, "basis"_a, "backend"_a = "cpu", "l1"_a = 0.0, "l2"_a = 0.0,
        "threads"_a = 0);
  m.def("transform_masked", &transform_masked_entry, "data"_a, "basis"_a, "mask"_a.none(), "nan_missing"_a,
        "unstored"_a, "backend"_a = "cpu", "l1"_a = 0.0, "l2"_a = 0.0, "threads"_a = 0);
  m.def("backend_available", [](const std::string& name) {
    std::string why;
    const bool ok = dnmf::backend_available(dnmf::parse_backend(name), &why);
    return nb::make_tuple(ok, why);
  });
  m.def("parse_bytes", &dnmf::parse_bytes);
  m.def("parse_k_range", &dnmf::parse_k_range);
}
