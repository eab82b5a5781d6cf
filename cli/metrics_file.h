#ifndef TAILSWEEP_CLI_METRICS_FILE_H_
#define TAILSWEEP_CLI_METRICS_FILE_H_

// A MetricsSink writing one line per logged step to a JSONL file
// (core/schema/metrics_line.h), flushed line by line. Resuming from a
// checkpoint at step S first drops the lines past S (they will be logged again,
// identically), so the file never holds a step twice.

#include <cstdio>
#include <string>

#include "core/training_signals.h"

namespace tailsweep::cli {

class MetricsFile : public MetricsSink {
 public:
  explicit MetricsFile(std::string path) : path_(std::move(path)) {}
  ~MetricsFile() override;

  // Keeps the lines with step <= start_step (all of them are dropped when
  // start_step is 0) and opens the file for appending.
  absl::Status Open(int64_t start_step);
  absl::Status Write(const StepMetrics& metrics) override;

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_METRICS_FILE_H_
