// A step that every process of a job runs identically (option checks, a header read on rank 0 and broadcast,
// the grid's shape): its failure is the same everywhere, so it is reported once and every process ends normally.
#pragma once

#include <utility>

#include "dnmf/error.hpp"

namespace dnmf::api {

/// Runs `step`; its dnmf::Error becomes a CollectiveError.
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

}  // namespace dnmf::api
