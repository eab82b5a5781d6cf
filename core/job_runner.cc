#include "core/job_runner.h"

#include <c10/util/Exception.h>

#include "absl/strings/str_cat.h"
#include "core/checkpoint.h"
#include "core/schema/checkpoint_name.h"
#include "core/training_signals.h"

namespace tailsweep {
namespace {

// Runs fn, turning LibTorch exceptions into statuses.
template <typename T, typename Fn>
absl::StatusOr<T> Guarded(Fn fn) {
  try {
    return fn();
  } catch (const c10::OutOfMemoryError& e) {
    return absl::ResourceExhaustedError(e.what_without_backtrace());
  } catch (const c10::Error& e) {
    return absl::InternalError(e.what_without_backtrace());
  }
}

}  // namespace

absl::StatusOr<JobResult> RunJob(const JobConfig& config,
                                 const JobRunOptions& options) {
  return Guarded<JobResult>([&]() -> absl::StatusOr<JobResult> {
    absl::StatusOr<std::unique_ptr<Trainer>> trainer =
        Trainer::Create(config, options.device, options.trainer);
    if (!trainer.ok()) return trainer.status();
    JobResult result;
    if (options.resume) {
      absl::StatusOr<CheckpointFile> newest =
          NewestCheckpointIn(options.trainer.checkpoint_dir);
      if (!newest.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat(newest.status().message(),
                         "; nothing to resume (run without "
                         "resume to start fresh)"));
      }
      if (absl::Status s = (*trainer)->ResumeFrom(newest->path); !s.ok())
        return s;
      result.start_step = (*trainer)->step();
    }
    if (options.on_start) options.on_start(result.start_step);
    absl::StatusOr<TrainOutcome> outcome = (*trainer)->Run();
    if (!outcome.ok()) return outcome.status();
    result.training = *outcome;
    if (outcome->stopped) return result;
    absl::StatusOr<EvalResult> eval =
        Evaluate((*trainer)->model(), config, options.device);
    if (!eval.ok()) return eval.status();
    result.evaluation = *eval;
    TrainOutcome& t = result.training;
    result.training_onset = t.collapse_step;
    t.collapse_step = CollapseOnsetAfterEvaluation(
        t.collapse_step, t.steps_done, eval->spread_ratio);
    t.collapsed = t.collapse_step >= 0;
    return result;
  });
}

absl::StatusOr<CheckpointEval> EvaluateCheckpoint(const std::string& path,
                                                  int64_t eval_instances,
                                                  torch::Device device) {
  return Guarded<CheckpointEval>([&]() -> absl::StatusOr<CheckpointEval> {
    absl::StatusOr<JobConfig> config = ReadCheckpointConfig(path);
    if (!config.ok()) return config.status();
    if (eval_instances > 0) config->eval_instances = eval_instances;
    if (config->eval_instances < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--eval-instances must be >= 2 (got ", config->eval_instances, ")"));
    }
    PointTransformer model(ModelOptionsFor(*config));
    // The checkpoint's tensors are read into the parameters as they are:
    // give them its type first.
    model->to(ModelScalarType(config->precision));
    absl::StatusOr<TrainingState> state = LoadCheckpoint(path, model, nullptr);
    if (!state.ok()) return state.status();
    model->to(device);
    absl::StatusOr<EvalResult> eval = Evaluate(model, *config, device);
    if (!eval.ok()) return eval.status();
    return CheckpointEval{*state, *eval};
  });
}

}  // namespace tailsweep
