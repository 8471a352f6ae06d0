// dnmf::Context: a communicator and the resources of a job (see dnmf/context.hpp).

#include "dnmf/context.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/context_state.hpp"
#include "backend/kernels.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "stream/bytes.hpp"
#include "util/memory.hpp"

namespace dnmf {

Context::Context() : state_(std::make_shared<detail::ContextState>()) {
  state_->owned = std::make_unique<dist::SingleCommunicator>();
  state_->comm = state_->owned.get();
}

Context Context::world() {
  auto state = std::make_shared<detail::ContextState>();
  state->comm = &dist::world();
  return Context(std::move(state));
}

int Context::rank() const { return state_->comm->rank(); }
int Context::size() const { return state_->comm->size(); }
std::string Context::communicator_name() const { return state_->comm->name(); }
void Context::abort(int code) const {
  state_->comm->abort(code);
  std::abort();  // not reached: the communicator's abort ends the process, but the compiler cannot see through it
}

void Context::on_root(const std::function<void()>& step) const {
  dist::Communicator& comm = *state_->comm;
  std::string error;
  ErrorKind kind = ErrorKind::general;
  if (comm.rank() == 0) {
    try {
      step();
    } catch (const Error& e) {
      error = e.what();
      kind = e.kind();
      if (error.empty()) error = "failed";
    }
  }
  dist::throw_root_error(comm, 0, std::move(error), kind);
}

std::string Context::broadcast(std::string text) const {
  dist::Communicator& comm = *state_->comm;
  if (comm.size() == 1) return text;
  std::int64_t length = comm.rank() == 0 ? static_cast<std::int64_t>(text.size()) : 0;
  comm.broadcast(&length, 1, dist::Scalar::i64, 0);
  text.resize(static_cast<std::size_t>(length));
  if (length > 0) comm.broadcast(text.data(), text.size(), dist::Scalar::u8, 0);
  return text;
}

bool backend_available(BackendKind kind, std::string* why_not) { return backend::backend_available(kind, why_not); }

void check_grid(const std::string& text) {
  if (text != "auto") (void)dist::parse_grid(text);
}

std::int64_t parse_bytes(const std::string& text) { return stream::parse_bytes(text); }
std::string human_bytes(double bytes) { return stream::human_bytes(bytes); }
std::int64_t peak_rss_bytes() { return util::peak_rss_bytes(); }

namespace api {

FactorOptions resolve(const FactorOptions& options, const Context& context) {
  if (context.device != -1)
    throw UsageError("device " + std::to_string(context.device) +
                     ": choosing a CUDA device is not supported yet; the runtime's current device is used (device -1)");
  if (context.device_memory_budget != 0)
    throw UsageError("device memory budget: streaming to the device is not wired into factor() yet; leave it at 0");
  if (context.memory_budget < 0) throw UsageError("memory budget: must be >= 0 bytes");
  FactorOptions o = options;
  o.backend = context.backend;
  o.threads = context.threads;
  std::string why_not;
  if (!backend_available(o.backend, &why_not))
    throw UsageError(o.backend == BackendKind::cuda ? "--backend cuda: " + why_not : why_not);
  if (o.tf32 && o.backend != BackendKind::cuda) throw UsageError("--tf32: tensor-core float math needs --backend cuda");
  return o;
}

}  // namespace api
}  // namespace dnmf
