#ifndef TAILSWEEP_CORE_JOB_RUNNER_H_
#define TAILSWEEP_CORE_JOB_RUNNER_H_

// Runs one job end to end: train (optionally resuming from the newest
// checkpoint), then evaluate, unless a stop was requested. This is the one
// boundary where LibTorch's exceptions become statuses: c10::OutOfMemoryError
// -> ResourceExhausted, any other c10::Error -> Internal.

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/checkpoint.h"
#include "core/evaluation.h"
#include "core/job_config.h"
#include "core/trainer.h"

namespace tailsweep {

struct JobRunOptions {
  torch::Device device = torch::kCPU;
  TrainerEnv trainer;  // its checkpoint_dir is also where a resume looks
  bool resume = false;
  // Called once with the step the run starts from (0 when fresh), before
  // any metric is written; lets a sink drop metrics past a checkpoint.
  std::function<void(int64_t)> on_start;
};

struct JobResult {
  int64_t start_step = 0;
  TrainOutcome training;
  // Empty when training stopped early on request (it will be resumed).
  std::optional<EvalResult> evaluation;
  // The training onset alone (every step checked; -1: none), before the
  // final evaluation's spread is weighed into training.collapse_step.
  int64_t training_onset = -1;
};

// FailedPrecondition when resume is asked for and no checkpoint exists.
absl::StatusOr<JobResult> RunJob(const JobConfig& config,
                                 const JobRunOptions& options);

// Evaluates a checkpoint's model with its own config (eval_instances
// overridden when > 0). Returns the checkpoint's state too.
struct CheckpointEval {
  TrainingState state;
  EvalResult evaluation;
};
absl::StatusOr<CheckpointEval> EvaluateCheckpoint(const std::string& path,
                                                  int64_t eval_instances,
                                                  torch::Device device);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_JOB_RUNNER_H_
