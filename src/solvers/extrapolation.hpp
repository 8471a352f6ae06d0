// The step size of the extrapolated alternating iteration (Ang & Gillis, "Accelerating nonnegative matrix
// factorization algorithms using extrapolation", Neural Computation 31(2), 2019): it grows while the objective
// falls and shrinks, with a lower ceiling, when a step made it rise. docs/algorithms.md, "Extrapolation".
#pragma once

#include <cmath>
#include <limits>

namespace dnmf::solvers {

/// β for each iteration from the objectives of the iterations before it.
class ExtrapolationSchedule {
 public:
  static constexpr double kFirst = 0.5;     ///< β of the first extrapolated step
  static constexpr double kGrow = 1.05;     ///< β's factor after a step that lowered the objective
  static constexpr double kRaise = 1.01;    ///< the ceiling's factor after such a step
  static constexpr double kShrink = 1.5;    ///< β's divisor after a step that raised it
  static constexpr double kMaxCeiling = 1;  ///< the ceiling never exceeds this

  /// β for the next step, to be applied after an iteration whose objective was `objective`. `decrease`, where
  /// finite, is the objective's fall over that iteration formed more precisely than the difference of two
  /// objectives (float32's, alternating.cpp's stop_change()): it says whether the step raised the objective.
  void record(double objective, double decrease = std::numeric_limits<double>::quiet_NaN()) {
    const bool rose = std::isfinite(decrease) ? decrease < 0 : objective > previous_;
    if (rose) {
      ++restarts_;
      ceiling_ = beta_;
      beta_ /= kShrink;
    } else {
      beta_ = beta_ * kGrow < ceiling_ ? beta_ * kGrow : ceiling_;
      ceiling_ = ceiling_ * kRaise < kMaxCeiling ? ceiling_ * kRaise : kMaxCeiling;
    }
    previous_ = objective;
  }
  /// A step so bad that the iteration went back to the pair before it (alternating.cpp's reverts_step): counted
  /// as a rise, β shrinks; the objective to compare with stays the kept pair's.
  void record_reverted() {
    ++restarts_;
    ceiling_ = beta_;
    beta_ /= kShrink;
  }
  /// The step size the next iteration uses.
  [[nodiscard]] double beta() const { return beta_; }
  /// Overrides β (a process adopting rank 0's value).
  void set_beta(double beta) { beta_ = beta; }
  /// How many steps raised the objective (each shrank β).
  [[nodiscard]] int restarts() const { return restarts_; }

 private:
  double beta_ = kFirst;
  double ceiling_ = kMaxCeiling;
  double previous_ = std::numeric_limits<double>::infinity();
  int restarts_ = 0;
};

}  // namespace dnmf::solvers
