#include "core/training_signals.h"

#include <cmath>

namespace tailsweep {

double LearningRate(const JobConfig& config, int64_t step) {
  if (step <= config.warmup) {
    return config.lr * static_cast<double>(step) / config.warmup;
  }
  const int64_t decay = config.steps - config.warmup;
  if (decay <= 0) return config.lr;
  const double progress = static_cast<double>(step - config.warmup) / decay;
  return config.lr * 0.5 * (1.0 + std::cos(M_PI * progress));
}

void CollapseTracker::Observe(int64_t step, double spread_ratio) {
  // NaN (a diverged output) counts as below: it has no spread left.
  const bool below = !(spread_ratio >= threshold_);
  if (below && below_since_ < 0) below_since_ = step;
}

int64_t CollapseOnsetAfterEvaluation(int64_t onset, int64_t final_step,
                                     double eval_spread) {
  if (onset >= 0) return onset;
  return eval_spread >= kEvalCollapseSpread ? -1 : final_step;
}

}  // namespace tailsweep
