#ifndef TAILSWEEP_CORE_JOB_CONFIG_H_
#define TAILSWEEP_CORE_JOB_CONFIG_H_

// The job-config schema: every key a training job takes, its type, allowed
// values and default (science.md sections 5 and 6; [choice] marks our own).
// Torch-free and shared by the sweep-spec parser, the coordinator and the
// trainer, so a value is validated once, the same way everywhere. The keys
// map 1:1 onto JobConfig's fields.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/instance.h"
#include "core/marginal.h"
#include "core/model_kinds.h"

namespace tailsweep {

// Which rule `collapsed` and `collapse_step` follow (training_signals.h's
// CollapseOnsets; every result keeps all four): the first step below
// collapse_threshold, every step checked (any_step); the first logged step
// below it (logged_step); the first of kCollapseRunLength consecutive logged
// steps below it (logged_3, the default, chosen before the rerun: a
// collapse that lasts, as the paper's); the final evaluation's spread ratio
// below kEvalCollapseSpread (final_eval).
enum class CollapseRule { kAnyStep, kLoggedStep, kLoggedRun, kFinalEval };
absl::StatusOr<CollapseRule> ParseCollapseRule(absl::string_view name);
absl::string_view CollapseRuleName(CollapseRule rule);

// A run has collapsed once its spread ratio stays below this (science.md;
// the job key collapse_threshold overrides it per job).
inline constexpr double kDefaultCollapseThreshold = 0.05;

struct JobConfig {
  OperatorKind op = OperatorKind::kShearedSwap;               // "operator"
  MarginalFamily marginal = MarginalFamily::kMirroredPareto;  // "marginal"
  AttentionKernel kernel = AttentionKernel::kSoftmax;
  NormPlacement norm = NormPlacement::kPost;
  bool symlog = false;
  uint64_t seed = 0;         // model init and training data
  int64_t n_points = 16384;  // points per ensemble
  int64_t layers = 6;
  int64_t d_model = 256;
  int64_t heads = 8;
  int64_t ffn_multiple = 4;  // FFN width = ffn_multiple * d_model
  int64_t steps = 10000;
  int64_t batch = 4;           // trials (fresh instances) per step
  double lr = 1e-4;            // peak learning rate
  int64_t warmup = 500;        // linear warm-up steps, then cosine decay to 0
  double clip = 1.0;           // gradient-norm clip
  double weight_decay = 0.01;  // AdamW [choice]
  int64_t log_every = 10;      // steps between logged metrics [choice]
  int64_t checkpoint_every = 500;  // [choice]
  int64_t eval_instances = 64;     // held-out instances M [choice]
  // Steps between evaluations during training; 0: only the final one. A
  // multiple of log_every, so an evaluation rides on a logged step [choice].
  int64_t eval_every = 0;
  uint64_t eval_seed = 20261001;  // shared by all jobs of a sweep [choice]
  int64_t reference_trials = 64;  // trials of the sampling reference [choice]
  double collapse_threshold = kDefaultCollapseThreshold;
  Precision precision = Precision::kFloat32;
  CollapseRule collapse_rule = CollapseRule::kLoggedRun;
  // The instances' priors: "tail_index_min", "tail_index_max", "scale1_min",
  // ... "sd2_max" (NAME_min and NAME_max for each range of InstancePrior).
  InstancePrior prior;
  double hill_fraction = 0.1;  // top fraction for the Hill estimator
  int64_t query_tile = 256;    // attention tiling (no effect on values)
  int64_t key_tile = 1024;
  // Devices the worker gives the job, "gpus" (core/schema/device_placement.h):
  // on GPUs the child sees that many, and trains on the first; on the CPU
  // it gets that many slots' threads. Scheduling only: no effect on values.
  int gpus = 1;
  // Early stopping: end the run this many steps after its collapse onset
  // (training_signals.h); -1 ("never"): run every step. The curve up to
  // then and a final evaluation are kept; the result says why it stopped
  // (job_result.h, early_stop). A non-finite loss always ends a run.
  int64_t stop_after_collapse = -1;
};

struct JobKey {
  std::string name;
  std::string help;  // what it means and what is allowed
};

// Every key, in canonical order.
const std::vector<JobKey>& JobKeys();

// The error for a job key's bad value, train and tails keys alike:
// InvalidArgument "key 'KEY': bad value 'VALUE'; allowed: ALLOWED".
absl::Status BadKeyValue(absl::string_view key, absl::string_view value,
                         absl::string_view allowed);

// Sets one key from its text form. InvalidArgument naming the key and what
// is allowed for an unknown key or a value of the wrong type or range; the
// config is unchanged then.
absl::Status SetJobKey(JobConfig& config, absl::string_view key,
                       absl::string_view value);

// Cross-key rules: heads divide d_model, warmup <= steps, eval_every is a
// multiple of log_every, the task is identifiable (not Gaussian matrix
// inverse), each prior range's NAME_min <= NAME_max, and the ranges of the
// other family (the Gaussian's for mirrored Pareto cells, the Pareto's for
// Gaussian ones) at their defaults. InvalidArgument naming keys.
absl::Status ValidateJobConfig(const JobConfig& config);

// Which keys JobConfigToKeyValues lists.
enum class KeyListing {
  // A key added after job ids were first issued (eval_every, precision,
  // the prior's ends, gpus) only when it differs from its default,
  // so a job's key/values, and with them its id (a hash of them), stay what
  // they were before the key existed: resubmitting an old spec to an old
  // database finds its jobs. For ids and checkpoints.
  kIdentity,
  // Every key: what a result records as run, so an export has a value in
  // every params_ column.
  kEvery,
};

// The keys with their values as text, canonical order; SetJobKey of each
// pair rebuilds an equal config.
std::vector<std::pair<std::string, std::string>> JobConfigToKeyValues(
    const JobConfig& config, KeyListing listing = KeyListing::kIdentity);

// The benchmark task the config trains on: operator, family, priors.
Task TaskOf(const JobConfig& config);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_JOB_CONFIG_H_
