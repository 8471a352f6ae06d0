// What a dnmf::Context holds behind its public face: the communicator of its processes.
#pragma once

#include <memory>

#include "dist/communicator.hpp"
#include "dnmf/context.hpp"
#include "dnmf/options.hpp"

namespace dnmf::detail {

/// The processes of a context. `owned` is empty when the communicator is dist::world(), which lives to the end
/// of the program.
struct ContextState {
  std::unique_ptr<dist::Communicator> owned;
  dist::Communicator* comm = nullptr;
};

}  // namespace dnmf::detail

namespace dnmf::api {

/// The communicator of `context`.
inline dist::Communicator& communicator(const Context& context) { return *context.state().comm; }

/// `options` with what the context decides (backend, threads) filled in; dnmf::Error for context settings
/// this build cannot honour (a device ordinal, a device budget, a backend this build or machine lacks, TF32
/// without the cuda backend). The one place factor() and nmfk() check them: the CLI relies on these messages.
FactorOptions resolve(const FactorOptions& options, const Context& context);

}  // namespace dnmf::api
