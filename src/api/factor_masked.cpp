// See factor_masked.hpp. The order follows factor(): every check before any work; the refusals name the
// option and the path that does not support it yet, so a mask is never silently ignored.

#include "api/factor_masked.hpp"

#include <omp.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "api/context_state.hpp"
#include "api/distribution.hpp"
#include "api/factor_masked_grid.hpp"
#include "api/factor_masked_stream.hpp"
#include "api/factorization_parts.hpp"
#include "api/held_matrix.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/block_read.hpp"
#include "solvers/masked_problem.hpp"
#include "solvers/masked_solve.hpp"
#include "solvers/solve.hpp"
#include "util/dense_transpose.hpp"
#include "util/thread_count.hpp"

namespace dnmf::api {
namespace {

/// Which option asked for missing values, for the refusals.
std::string flag_of(const MissingValues& m) {
  if (m.mask) return "--mask";
  if (m.nan_missing) return "--missing nan";
  return "--unstored missing";
}

}  // namespace

template <class T>
Factorization<T> factor_masked(const Source& source, const FactorOptions& requested, const Context& context,
                               Gather gather, const InitialFactors<T>* initial) {
  dist::Communicator& world = api::communicator(context);
  const std::string& name = source.name();
  const std::string flag = flag_of(requested.missing);
  if (world.size() > 1) return factor_masked_grid<T>(source, requested, context, gather, initial);
  // A given grid must fit one process, as on the unmasked path (a 2x1 was ignored here and the run went on 1x1).
  if (context.grid != "auto") (void)dist::Grid(world, dist::parse_grid(context.grid));
  FactorOptions options = api::resolve(requested, context);
  if (options.backend == BackendKind::cuda && context.memory_budget > 0)
    throw UsageError(flag +
                     " with --backend cuda is not supported with --memory-budget yet (a masked GPU run holds "
                     "A on the device; use --backend cpu to stream)");
  if ((options.init == InitMethod::given) != (initial != nullptr))
    throw UsageError(name + (initial != nullptr
                                 ? ": initial factors were given but the init method is " + to_string(options.init)
                                 : ": the init method 'given' needs initial factors"));
  MemoryFigures held_in_memory;  // the plan's figures when a budget keeps the masked problem in memory
  if (context.memory_budget > 0)
    if (auto streamed = factor_masked_streamed<T>(source, options, requested, context, gather, initial, held_in_memory))
      return std::move(*streamed);
  const util::ThreadCountScope thread_count(options.threads);

  const std::string format = source.is_file() ? io::format_name(io::format_of(name)) : "memory";
  const Held<T> a = hold<T>(source);
  std::optional<Held<T>> mask;
  if (options.missing.mask) mask = hold<T>(*options.missing.mask);
  const solvers::StoredMatrix<T> stored_a{&a.ref, source.transposed(), name};
  const solvers::StoredMatrix<T> stored_mask{mask ? &mask->ref : nullptr, mask && options.missing.mask->transposed(),
                                             mask ? options.missing.mask->name() : std::string()};
  const solvers::MaskedProblem<T> problem = solvers::build_masked_problem<T>(stored_a, stored_mask, options.missing);

  if (problem.all_unit) {
    // A mask that masks nothing is no mask: the unmasked solver, with its exact results, runs instead.
    FactorOptions plain = requested;
    plain.missing = MissingValues{};
    return factor<T>(source, plain, context, gather, initial);
  }
  solvers::Factors<T> factors;
  Factorization<T> run;
  try {
    run.result = solvers::solve_masked<T>(problem, options, factors, initial != nullptr ? &initial->W : nullptr,
                                          initial != nullptr ? &initial->H : nullptr);
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    throw_as(e.kind(), name + ": " + e.what());
  }
  describe_input(run, name, format, problem.m, problem.n, options);
  keep_one_process(run, std::move(factors), context, world, gather);
  run.nnz = problem.observed_nonzero;
  run.memory = held_in_memory;
  return run;
}

template Factorization<float> factor_masked<float>(const Source&, const FactorOptions&, const Context&, Gather,
                                                   const InitialFactors<float>*);
template Factorization<double> factor_masked<double>(const Source&, const FactorOptions&, const Context&, Gather,
                                                     const InitialFactors<double>*);

}  // namespace dnmf::api
