#ifndef TAILSWEEP_COORDINATOR_STOP_RULES_H_
#define TAILSWEEP_COORDINATOR_STOP_RULES_H_

// The sweeps' stop rules, judged by the coordinator on the stored metric
// points as they arrive (core/schema/sweep_control.h's AshaRule): ASHA
// (asynchronous successive halving, Li et al. 2020). Rungs lie at
// min_steps * reduction^k steps of the rule's metric. When a run's points
// first reach a rung, its value there (its last point at or before the
// rung) is ranked among the values of every run of the sweep that reached
// the rung so far, itself included: outside the best 1/reduction of them
// it is stopped early. The first runs at a rung always go on (there is
// nothing to beat yet), as in ASHA.
//
// The stop goes back on the metrics call's answer (ReportMetricsResponse's
// stop_early) and to every later one for that job: the worker stops the
// run, which ends done, with its result's early_stop naming the rule; its
// steps not run count as early stop's do (status: steps saved).
//
// Thread-safe.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store.h"
#include "core/schema/metric_point.h"

namespace tailsweep {

class StopRules {
 public:
  explicit StopRules(Store* store) : store_(store) {}

  // What a batch of `job_id`'s points is judged against: read before the
  // points are stored.
  struct Before {
    struct Rule {
      std::string sweep;
      AshaRule asha;
      int64_t max_step = -1;  // the job's highest step of the metric so far
    };
    std::vector<Rule> rules;
  };
  absl::StatusOr<Before> Read(const std::string& job_id,
                              const std::vector<MetricPoint>& points);
  // After the points are stored: why the run stops ("" to go on).
  absl::StatusOr<std::string> Judge(const std::string& job_id,
                                    const std::vector<MetricPoint>& points,
                                    const Before& before);
  // The job is over (done, failed): its stop is forgotten.
  void Forget(const std::string& job_id);

  // Whether `value` is outside the best 1/reduction of `values` (which hold
  // it): worse than the cutoff that keeps that share. NaN is the worst.
  static bool Stops(const AshaRule& rule, double value,
                    std::vector<double> values);

 private:
  Store* store_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> stopped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_STOP_RULES_H_
