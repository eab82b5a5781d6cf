#ifndef TAILSWEEP_WORKER_EARLY_STOP_H_
#define TAILSWEEP_WORKER_EARLY_STOP_H_

// A run's early stop (a job's ChildRules::stop_on, job_kinds.h: a command
// job's `stop_on` and `stop_after_steps`), as a worker watches it: fed
// each logged point of the run in order, it says when one of the outcomes
// first holds (the onset) and when the run is to be stopped,
// `stop_after_steps` steps after the onset. Only outcomes that stay true
// once they hold are stop_on rules (the spec checks), so the run's verdict
// is the one it would have had going on. Pure: the worker sends the
// signal and logs. Not thread-safe.

#include <cstdint>
#include <string>
#include <utility>

#include "core/schema/job_kinds.h"
#include "core/schema/metric_point.h"

namespace tailsweep {

class EarlyStop {
 public:
  explicit EarlyStop(ChildRules rules) : rules_(std::move(rules)) {}

  enum class Seen {
    kNothing,
    kOnset,         // an outcome first holds; the stop comes later
    kOnsetAndStop,  // ... and the run stops now (stop_after_steps 0)
    kStop,          // stop_after_steps after the onset: stop now
  };
  Seen Observe(const MetricPoint& point);

  // The outcome that first held ("": none yet), and at which step.
  const std::string& outcome() const { return outcome_; }
  int64_t onset_step() const { return onset_step_; }
  int64_t after_steps() const { return rules_.stop_after_steps; }
  // The outcome the run was stopped for once Observe said so, else "".
  const std::string& stopped_for() const { return stopped_for_; }

 private:
  const ChildRules rules_;
  int64_t onset_step_ = -1;
  std::string outcome_;
  std::string stopped_for_;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_WORKER_EARLY_STOP_H_
