#ifndef TAILSWEEP_CORE_SCHEMA_JOB_RESULT_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_RESULT_H_

// What a finished job hands back: its result.json, as a struct with its JSON,
// for both kinds. Written by `tailsweep lab train|tails`, relayed by the
// worker (CompleteJob), validated by the coordinator on arrival and read by
// its aggregation. Non-finite numbers as json_number.h says; a value that
// does not exist (no collapse) is null. Torch-free.
//
// train: {"steps_done", "resumed_from_step", "final_loss", "diverged",
//   "diverged_step", "collapsed", "collapse_step" (under "collapse_rule"),
//   optionally "collapse_rule" and "collapse_onsets": {"any_step",
//   "logged_step", "logged_3", "final_eval": a step or null}, "stopped",
//   optionally
//   "lease_ran_out" (true), optionally "early_stop" ("diverged" or
//   "collapse"), optionally "version", "config": {key: typed value},
//   and unless stopped the evaluation: "ratio_mean", "ratio_median",
//   "ratio_ci_low", "ratio_ci_high", "spread_ratio", "delta", "eval_instances",
//   "hill_stat" (mirrored Pareto only), optionally "samples": [{"instance",
//   "target":
//   [[x, ...], ...], "prediction": [[x, ...], ...]}] (6 significant digits)}
// tails: an array of rows {"seam", "n", "index", "ed_mean", "ed_sd",
//   "w2_mean", "w2_sd", "ed_noise", "w2_noise"}, as `lab tails --format json`
//   prints it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/metrics_line.h"
#include "core/schema/tails_row.h"

namespace tailsweep {

// Why a run ended before its last step by itself (TrainResult::early_stop).
inline constexpr char kEarlyStopDiverged[] = "diverged";  // non-finite loss
inline constexpr char kEarlyStopCollapse[] = "collapse";  // stop_after_collapse

struct TrainResult {
  int64_t steps_done = 0;
  int64_t resumed_from_step = 0;
  double final_loss = 0;
  bool diverged = false;
  int64_t diverged_step = -1;  // -1: none
  bool collapsed = false;
  int64_t collapse_step = -1;  // -1: none
  // The rule those two follow (job_config.h's CollapseRule, by name) and
  // the onset under every rule; written only when known (results before
  // 0.3.0 have neither: their rule was any_step or final_eval).
  std::string collapse_rule;
  std::optional<CollapseOnsets> collapse_onsets;
  // A stop was requested (SIGTERM): the job checkpointed before its last
  // step and must be resumed; it has no evaluation.
  bool stopped = false;
  // Stopped by its lease watchdog (lease_file.h), not by a signal: the
  // worker had not renewed the lease in time. Written only when true.
  bool lease_ran_out = false;
  // Ended before its last step by itself: kEarlyStopDiverged or
  // kEarlyStopCollapse; "" when it ran every step (or was stopped from
  // outside: `stopped`). Written only when set.
  std::string early_stop;
  // The build that ran it (version.h); written only when set.
  std::string version;
  // Where it trained: "cpu", or "cuda:N" and, when the worker chose the GPU,
  // which one ("cuda:0 (CUDA_VISIBLE_DEVICES=5)"); written only when set.
  std::string device;
  // The job's config as text key/values (job_config.h), canonical order.
  std::vector<std::pair<std::string, std::string>> config;
  std::optional<EvalSummary> evaluation;
  // From the final evaluation, for figures (training_signals.h).
  std::vector<PointSample> samples;
};

std::string TrainResultJson(const TrainResult& result);
// InvalidArgument naming the first field that is missing or of the wrong
// type.
absl::StatusOr<TrainResult> ParseTrainResult(absl::string_view json);

std::string TailsResultJson(const std::vector<TailsRow>& rows);
absl::StatusOr<std::vector<TailsRow>> ParseTailsResult(absl::string_view json);

// The samples as result.json writes them (6 significant digits): what the
// report draws.
nlohmann::json SamplesJson(const std::vector<PointSample>& samples);

// The result's points for the store (metrics_line.h): eval/<field> at
// steps_done (when evaluated), collapse_onset and diverged_onset at their
// steps (value: the step).
std::vector<MetricPoint> ResultPoints(const TrainResult& result);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_RESULT_H_
