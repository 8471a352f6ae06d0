// See dnmf/progress.hpp.

#include "dnmf/progress.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace dnmf {

std::string ProgressLines::operator()(const IterationInfo& info) {
  // Every one of the first iterations shows whether the run is sane at all; later a line every 2% of the
  // budget, or after 2 seconds of silence so that slow iterations still show signs of life.
  constexpr int kEveryIteration = 10;
  constexpr double kMaxSilence = 2.0;
  const int step = std::max(1, info.max_iterations / 50);
  const bool due = info.iteration <= kEveryIteration || info.iteration - last_iteration_ >= step ||
                   info.seconds - last_seconds_ >= kMaxSilence || info.iteration == info.max_iterations;
  if (!due) return {};
  last_iteration_ = info.iteration;
  last_seconds_ = info.seconds;
  const double per_iteration = info.iteration > 0 ? info.seconds / info.iteration : 0.0;
  // The ETA assumes the whole budget runs; a converging run finishes sooner.
  const double eta = per_iteration * std::max(0, info.max_iterations - info.iteration);
  std::array<char, 160> line{};
  std::snprintf(line.data(), line.size(), "iter %d/%d  rel_error %.3e  %.3g s/iter  ETA %.1f s", info.iteration,
                info.max_iterations, info.rel_error, per_iteration, eta);
  return line.data();
}

std::string nmfk_progress_line(const NmfkProgress& p, int groups) {
  const std::string who = groups > 1 ? "[group " + std::to_string(p.group) + "] " : "";
  std::array<char, 200> line{};
  std::snprintf(line.data(), line.size(), "nmfk: %sk=%lld p=%d rel_error=%.3e iterations=%d %.2f s (%d/%d)",
                who.c_str(), static_cast<long long>(p.k), p.perturbation, p.rel_error, p.iterations, p.seconds,
                p.jobs_done, p.jobs_total);
  return line.data();
}

}  // namespace dnmf
