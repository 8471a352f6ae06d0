// How the solver options read in the JSON files that record a run (report.json, nmfk.json, cv.json): one
// spelling for all three.
#pragma once

#include <nlohmann/json.hpp>

#include "dnmf/options.hpp"

namespace dnmf {

/// {"l1_w": ..., "l2_w": ..., "l1_h": ..., "l2_h": ...}, found by nlohmann's `j["penalties"] = penalties`.
inline void to_json(nlohmann::ordered_json& j, const Penalties& p) {
  j = {{"l1_w", p.l1_w}, {"l2_w", p.l2_w}, {"l1_h", p.l1_h}, {"l2_h", p.l2_h}};
}

}  // namespace dnmf
