#ifndef TAILSWEEP_CORE_TRAINER_H_
#define TAILSWEEP_CORE_TRAINER_H_

// Trains one job (science.md section 6): AdamW, linear warm-up then cosine
// decay, gradient clipping, a fresh instance per trial per step, energy-
// distance loss. Reports through a MetricsSink every `log_every` steps, with
// an evaluation on the held-out instances every `eval_every` steps before
// the last (the job runner evaluates the final model), checkpoints every
// `checkpoint_every` steps, at the last step and when a stop is requested. A
// non-finite loss marks the run diverged and ends it cleanly; collapse is
// tracked on the training predictions, and ends the run
// `stop_after_collapse` steps after its onset when that is set (a
// checkpoint is written there, so a resumed run ends there too). All are
// results, not errors.
//
// Deterministic: the same config, device and thread count give the same
// metrics bit for bit, and a run resumed from a checkpoint continues exactly
// as the uninterrupted one. Not thread-safe. LibTorch exceptions propagate;
// the job runner (job_runner.h) turns them into statuses.

#include <torch/optim/adamw.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/evaluation.h"
#include "core/job_config.h"
#include "core/model.h"
#include "core/sampling.h"
#include "core/training_signals.h"

namespace tailsweep {

// The trainer's outside world, injected so tests can make it misbehave.
struct TrainerEnv {
  MetricsSink* sink = nullptr;  // required
  // Where checkpoints go; empty: none are written.
  std::string checkpoint_dir;
  // Polled after every step; true makes the trainer checkpoint and return
  // (SIGTERM / preemption). May be empty.
  std::function<bool()> stop_requested;
  // Seconds on a monotonic clock. Default: std::chrono::steady_clock.
  std::function<double()> now;
  // Test seams: may rewrite the step's prediction or loss in place.
  std::function<void(int64_t step, torch::Tensor& prediction)> on_prediction;
  std::function<void(int64_t step, torch::Tensor& loss)> on_loss;
};

struct TrainOutcome {
  int64_t steps_done = 0;
  bool diverged = false;
  int64_t diverged_step = -1;
  bool collapsed = false;
  int64_t collapse_step = -1;
  bool stopped = false;  // a stop was requested before the last step
  // Ended before its last step by itself: kEarlyStopDiverged or
  // kEarlyStopCollapse (job_result.h); empty otherwise.
  std::string early_stop;
  double final_loss = 0;
};

ModelOptions ModelOptionsFor(const JobConfig& config);

class Trainer {
 public:
  // InvalidArgument for an invalid config or a missing sink.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const JobConfig& config, torch::Device device, TrainerEnv env);

  // Restores model, optimizer, step, RNG and collapse state. DataLoss /
  // NotFound from the checkpoint; InvalidArgument when its config differs
  // from this trainer's.
  absl::Status ResumeFrom(const std::string& checkpoint_path);

  // Trains from the current step to config.steps (or a stop / divergence).
  absl::StatusOr<TrainOutcome> Run();

  PointTransformer& model() { return model_; }
  int64_t step() const { return step_; }

 private:
  // Collapsed at least stop_after_collapse steps ago (when set).
  bool CollapseStopDue() const;
  Trainer(const JobConfig& config, torch::Device device, TrainerEnv env);
  absl::Status Checkpoint();
  // The periodic evaluation of the current model, if `step` has one.
  absl::StatusOr<std::optional<EvalSummary>> PeriodicEval(int64_t step);

  JobConfig config_;
  torch::Device device_;
  TrainerEnv env_;
  PointTransformer model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  TaskSampler sampler_;
  CollapseTracker collapse_;
  std::optional<Evaluator> evaluator_;  // made at the first evaluation
  int64_t step_ = 0;
  int64_t diverged_step_ = -1;
};

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_TRAINER_H_
