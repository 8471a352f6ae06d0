// dnmf CLI: failures in a distributed job. A step that every process runs identically turns its error into a
// CollectiveError (reported once, processes end normally); a step that only rank 0 runs (creating the output
// folder, say) shares its outcome, so the other processes neither hang nor carry on alone.
#pragma once

#include <string>
#include <utility>

#include "dist/communicator.hpp"
#include "dnmf/error.hpp"

namespace dnmf::cli {

/// Runs `step` on every rank; its dnmf::Error becomes a CollectiveError. For steps whose outcome is the same
/// on every rank by construction (option checks, a header broadcast from rank 0, the grid's shape).
template <class Step>
decltype(auto) on_every_rank(Step&& step) {
  try {
    return std::forward<Step>(step)();
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& e) {
    throw CollectiveError(e);
  }
}

/// Runs `step` on rank 0 only and then tells every rank whether it failed: a failure is a CollectiveError with
/// rank 0's message everywhere.
template <class Step>
void on_root_for_all(dist::Communicator& world, Step&& step) {
  std::string error;
  if (world.rank() == 0) {
    try {
      std::forward<Step>(step)();
    } catch (const Error& e) {
      error = e.what();
      if (error.empty()) error = "failed";
    }
  }
  if (world.size() > 1) {
    std::int64_t length = static_cast<std::int64_t>(error.size());
    world.broadcast(&length, 1, dist::Scalar::i64, 0);
    error.resize(static_cast<std::size_t>(length));
    if (length > 0) world.broadcast(error.data(), error.size(), dist::Scalar::u8, 0);
  }
  if (!error.empty()) throw CollectiveError(error);
}

}  // namespace dnmf::cli
