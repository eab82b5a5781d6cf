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

CollapseOnsets JudgeCollapse(
    int64_t any_step_onset,
    const std::vector<std::pair<int64_t, double>>& logged, double threshold,
    int64_t final_step, double eval_spread) {
  CollapseOnsets o;
  o.any_step = any_step_onset;
  int run = 0;
  int64_t run_start = -1;
  for (const auto& [step, spread] : logged) {
    const bool below = !(spread >= threshold);  // NaN: below
    if (!below) {
      run = 0;
      continue;
    }
    if (o.logged_step < 0) o.logged_step = step;
    if (run++ == 0) run_start = step;
    if (run == kCollapseRunLength && o.logged_run < 0) o.logged_run = run_start;
  }
  if (!(eval_spread >= kEvalCollapseSpread)) o.final_eval = final_step;
  return o;
}

int64_t OnsetUnder(const CollapseOnsets& onsets, CollapseRule rule) {
  switch (rule) {
    case CollapseRule::kAnyStep:
      return onsets.any_step;
    case CollapseRule::kLoggedStep:
      return onsets.logged_step;
    case CollapseRule::kLoggedRun:
      return onsets.logged_run;
    case CollapseRule::kFinalEval:
      return onsets.final_eval;
  }
  return -1;
}

}  // namespace tailsweep
