#ifndef TAILSWEEP_TESTS_TESTING_MEMORY_SINK_H_
#define TAILSWEEP_TESTS_TESTING_MEMORY_SINK_H_

// A MetricsSink that keeps everything in memory, and fails on demand.

#include <vector>

#include "core/training_signals.h"

namespace tailsweep::testing {

class MemorySink : public MetricsSink {
 public:
  absl::Status Write(const StepMetrics& m) override {
    if (fail_after >= 0 && static_cast<int64_t>(metrics.size()) >= fail_after) {
      return absl::ResourceExhaustedError("sink is full");
    }
    metrics.push_back(m);
    return absl::OkStatus();
  }

  std::vector<StepMetrics> metrics;
  int64_t fail_after = -1;  // -1: never fail
};

}  // namespace tailsweep::testing

#endif  // TAILSWEEP_TESTS_TESTING_MEMORY_SINK_H_
