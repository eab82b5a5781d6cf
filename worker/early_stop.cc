#include "worker/early_stop.h"

#include "core/schema/command_job.h"

namespace tailsweep {

EarlyStop::Seen EarlyStop::Observe(const MetricPoint& p) {
  if (!stopped_for_.empty()) return Seen::kNothing;
  bool onset = false;
  if (onset_step_ < 0) {
    for (const OutcomeRule& rule : rules_.stop_on) {
      if (rule.metric != p.name || !HoldsAt(rule, p.value)) continue;
      onset_step_ = p.step;
      outcome_ = rule.name;
      onset = true;
      break;
    }
  }
  if (onset_step_ < 0 || p.step < onset_step_ + rules_.stop_after_steps) {
    return onset ? Seen::kOnset : Seen::kNothing;
  }
  stopped_for_ = outcome_;
  return onset ? Seen::kOnsetAndStop : Seen::kStop;
}

}  // namespace tailsweep
