// See arguments.hpp.

#include "arguments.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"
#ifdef DNMF_HAVE_MPI
#include <type_traits>

#include "dnmf/mpi.hpp"
#endif

namespace nb = nanobind;

namespace dnmf::python {
namespace {

/// The value under `key` cast to T, or nullptr-like absence: false when the key is missing or None.
template <class T>
bool get(const nb::dict& kwargs, const char* key, T& out) {
  if (!kwargs.contains(key)) return false;
  nb::handle value = kwargs[key];
  if (value.is_none()) return false;
  try {
    out = nb::cast<T>(value);
  } catch (const nb::cast_error&) {
    // A Python int that does not fit the C++ integer (a seed of -1 or 2**64, 2**40 iterations) is a value out
    // of range, not a value of the wrong type.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (PyLong_Check(value.ptr()) != 0)
        throw UsageError(
            "dnmf: option '" + std::string(key) + "' must be in [" + std::to_string(std::numeric_limits<T>::min()) +
            ", " + std::to_string(std::numeric_limits<T>::max()) + "], got " + nb::cast<std::string>(nb::str(value)));
    }
    throw nb::type_error(("dnmf: option '" + std::string(key) + "' has the wrong type").c_str());
  }
  return true;
}

std::int64_t checked_bytes(const std::string& what, std::int64_t bytes) {
  if (bytes < 0) throw UsageError(what + "a byte count must be >= 0, not " + std::to_string(bytes));
  if (bytes == 0) throw UsageError(what + "must be at least one byte (None: no budget)");
  return bytes;
}

std::int64_t bytes_of(const nb::dict& kwargs, const char* key) {
  if (!kwargs.contains(key) || kwargs[key].is_none()) return 0;
  nb::handle value = kwargs[key];
  const std::string what = std::string(key) + ": ";
  if (nb::isinstance<nb::str>(value)) {
    try {  // named by the keyword, as the CLI's message is by its option
      return parse_bytes(nb::cast<std::string>(value));
    } catch (const UsageError& e) {
      throw UsageError(what + e.what());
    }
  }
  // A whole number of bytes, as an int or a float such as 1e9 (a float budget raised std::bad_cast); 0 is refused
  // as the string "0" and the CLI's --memory-budget 0 are (it had meant no budget, silently): None is that.
  double number = 0;
  if (nb::isinstance<nb::bool_>(value)) {
    throw UsageError(what + "a byte count or a size such as '2G', not a bool");
  } else if (nb::isinstance<nb::int_>(value)) {
    std::int64_t bytes = 0;
    if (!nb::try_cast(value, bytes)) throw UsageError(what + "more bytes than a 64-bit count holds");
    return checked_bytes(what, bytes);
  } else if (nb::isinstance<nb::float_>(value)) {
    number = nb::cast<double>(value);
  } else {
    throw UsageError(what + "a byte count or a size such as '2G', not a " +
                     nb::cast<std::string>(nb::str(value.type().attr("__name__"))));
  }
  if (!std::isfinite(number) || number != std::floor(number) || std::abs(number) >= 9.2e18)
    throw UsageError(what + "a whole number of bytes or a size such as '2G', not " +
                     nb::cast<std::string>(nb::repr(value)));
  return checked_bytes(what, static_cast<std::int64_t>(number));
}

#ifdef DNMF_HAVE_MPI
/// An MPI handle from the integer mpi4py gives: a pointer in Open MPI, an int in MPICH.
template <class Handle>
Handle handle_of(std::intptr_t value) {
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<Handle>(value);  // NOLINT(performance-no-int-to-ptr): it is the pointer's value
  } else {
    return static_cast<Handle>(value);
  }
}
#endif

}  // namespace

FactorOptions factor_options(const nb::dict& kwargs) {
  FactorOptions o;
  get(kwargs, "k", o.rank);
  std::string text;
  if (get(kwargs, "algorithm", text)) o.algorithm = parse_algorithm(text);
  get(kwargs, "max_iter", o.max_iterations);
  get(kwargs, "tol", o.tol);
  if (get(kwargs, "init", text)) o.init = text == "given" ? InitMethod::given : parse_init(text);
  get(kwargs, "seed", o.seed);
  get(kwargs, "l1_w", o.penalties.l1_w);
  get(kwargs, "l2_w", o.penalties.l2_w);
  get(kwargs, "l1_h", o.penalties.l1_h);
  get(kwargs, "l2_h", o.penalties.l2_h);
  get(kwargs, "normalize", o.normalize);
  get(kwargs, "fused", o.fused);
  get(kwargs, "w_first", o.w_first);
  get(kwargs, "extrapolate", o.extrapolate);
  get(kwargs, "tf32", o.tf32);
  // Missing values (docs/masked.md): a mask source, NaN as missing, unstored entries as missing.
  Source mask = Source::file("");
  if (get(kwargs, "mask", mask)) o.missing.mask = mask;
  get(kwargs, "nan_missing", o.missing.nan_missing);
  if (get(kwargs, "unstored", text)) o.missing.unstored = parse_unstored(text);
  // 0 returns the start, as the CLI's --iters 0 does.
  if (o.max_iterations < 0) throw UsageError("max_iter must be >= 0, not " + std::to_string(o.max_iterations));
  return o;
}

NmfkOptions nmfk_options(const nb::dict& kwargs) {
  NmfkOptions o;
  o.factor = factor_options(kwargs);
  get(kwargs, "ks", o.ks);
  get(kwargs, "perturbations", o.perturbations);
  get(kwargs, "epsilon", o.epsilon);
  std::string text;
  if (get(kwargs, "perturbation", text)) o.perturbation = parse_perturbation(text);
  get(kwargs, "sil_threshold", o.sil_threshold);
  double err_threshold = 0;
  if (get(kwargs, "err_threshold", err_threshold)) o.err_threshold = err_threshold;
  if (get(kwargs, "rule", text)) o.rule = parse_selection_rule(text);
  get(kwargs, "wilcoxon_alpha", o.wilcoxon_alpha);
  get(kwargs, "h_silhouettes", o.h_silhouettes);
  get(kwargs, "groups", o.groups);
  get(kwargs, "accept_factor", o.accept_factor);
  get(kwargs, "max_cluster_iterations", o.max_cluster_iterations);
  get(kwargs, "checkpoint_dir", o.checkpoint_dir);
  get(kwargs, "restart", o.restart);
  get(kwargs, "cv", o.cv);
  get(kwargs, "cv_folds", o.cv_folds);
  get(kwargs, "cv_holdout", o.cv_holdout);
  return o;
}

Context make_context(const nb::dict& kwargs) {
  Context context;
  nb::handle comm = kwargs.contains("comm") ? kwargs["comm"] : nb::none();
  if (comm.is_none()) {
    context = Context::world();
  } else if (nb::isinstance<nb::bool_>(comm)) {
    if (nb::cast<bool>(comm)) context = Context::world();
  } else {
#ifdef DNMF_HAVE_MPI
    // mpi4py's Comm.handle is the C handle as an integer: a pointer in Open MPI, an int in MPICH.
    context = mpi_context(handle_of<MPI_Comm>(nb::cast<std::intptr_t>(comm)));
#else
    throw UsageError("comm: this build of dnmf has no MPI support");
#endif
  }
  get(kwargs, "grid", context.grid);
  check_grid(context.grid);
  std::string backend;
  if (get(kwargs, "backend", backend)) context.backend = parse_backend(backend);
  get(kwargs, "threads", context.threads);
  if (context.threads < 0) throw UsageError("n_threads must be >= 0, not " + std::to_string(context.threads));
  get(kwargs, "device", context.device);
  context.memory_budget = bytes_of(kwargs, "memory_budget");
  context.device_memory_budget = bytes_of(kwargs, "device_memory_budget");
  return context;
}

}  // namespace dnmf::python
