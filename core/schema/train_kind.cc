// The `train` kind: one training run of the paper's model (core/job_config.h
// is its schema), run as `tailsweep-lab lab train`; its result is
// job_result.h's TrainResult, its outcomes collapsed, diverged and
// ratio_above X, judged by the child.

#include "core/schema/train_kind.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/job_config.h"
#include "core/schema/checkpoint_name.h"
#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/schema_kind.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"

namespace tailsweep {
namespace train_kind {  // named: the kinds' files share unity batches

absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  JobConfig config;
  TS_RETURN_IF_ERROR((SchemaConfig<JobConfig, SetJobKey>(spec, cell, &config)));
  TS_RETURN_IF_ERROR(ValidateJobConfig(config));
  return JobConfigToKeyValues(config);
}

KeyValues Defaults() {
  return JobConfigToKeyValues(JobConfig{}, KeyListing::kEvery);
}

absl::Status ParseOutcome(const std::string& text, const SweepSpec&,
                          SearchSpec& s) {
  const std::vector<std::string> words =
      absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (words.size() == 1 && words[0] == "collapsed") {
    s.outcome = SearchSpec::Outcome::kCollapsed;
  } else if (words.size() == 1 && words[0] == "diverged") {
    s.outcome = SearchSpec::Outcome::kDiverged;
  } else if (words.size() == 2 && words[0] == "ratio_above" &&
             absl::SimpleAtod(words[1], &s.ratio_above) &&
             std::isfinite(s.ratio_above) && s.ratio_above > 0) {
    s.outcome = SearchSpec::Outcome::kRatioAbove;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("outcome '", text,
                     "': allowed: collapsed, diverged, or ratio_above X (X > "
                     "0: the median distance ratio above X)"));
  }
  return absl::OkStatus();
}

// Every job key as --set KEY=VALUE; its GPUs made the only visible ones;
// --resume when a checkpoint is there.
absl::StatusOr<ChildCommand> Child(const ChildJob& job) {
  ChildCommand out = LabChildCommand(job);
  out.argv.push_back(kTrainKindName);
  JobConfig config;
  for (const auto& [key, value] : job.params) {
    TS_RETURN_IF_ERROR(SetJobKey(config, key, value));
    out.argv.push_back("--set");
    out.argv.push_back(absl::StrCat(key, "=", value));
  }
  const bool cuda = absl::StartsWith(job.device, "cuda");
  if (absl::StartsWith(job.device, "cuda:")) {
    out.env.push_back(
        absl::StrCat("CUDA_VISIBLE_DEVICES=", job.visible_devices.empty()
                                                  ? job.device.substr(5)
                                                  : job.visible_devices));
  }
  out.argv.insert(out.argv.end(),
                  {"--out-dir", job.dir, "--device", cuda ? "cuda" : "cpu"});
  if (NewestCheckpointIn(JobPath(job.dir, kCheckpointDirName)).ok()) {
    out.argv.push_back("--resume");
  }
  return out;
}

// Done, or stopped when the result says so (at a checkpoint, on SIGTERM or
// when its lease file ran out).
FinishedJob ReadFinished(const std::string& dir, int exit_code) {
  if (std::optional<FinishedJob> ended = ReadExit(exit_code, true)) {
    return *ended;
  }
  FinishedJob out;
  absl::StatusOr<std::string> text = ReadResultFile(dir);
  if (!text.ok()) {
    out.error = std::string(text.status().message());
    return out;
  }
  absl::StatusOr<TrainResult> result = ParseTrainResult(*text);
  if (!result.ok()) {
    out.error = std::string(result.status().message());
    return out;
  }
  out.outcome = result->stopped ? JobOutcome::kStopped : JobOutcome::kDone;
  out.lease_ran_out = result->stopped && result->lease_ran_out;
  out.result_json = *std::move(text);
  return out;
}

std::vector<MetricPoint> ResultPointsOf(const std::string& json) {
  absl::StatusOr<TrainResult> result = ParseTrainResult(json);
  if (!result.ok()) return {};
  return ResultPoints(*result);
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  absl::StatusOr<TrainResult> result = ParseTrainResult(json);
  if (!result.ok()) return result.status();
  return result->resumed_from_step;
}

}  // namespace train_kind

const JobKindDef& TrainKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = kTrainKindName;
    d.old_workers_run = true;
    d.check_key = SchemaCheckKey<JobConfig, JobKeys, SetJobKey>;
    d.check_value = SchemaCheckValue<JobConfig, SetJobKey>;
    d.job_params = train_kind::Params;
    d.default_params = train_kind::Defaults;
    d.parse_outcome = train_kind::ParseOutcome;
    d.child_command = train_kind::Child;
    d.read_finished = train_kind::ReadFinished;
    d.result_points = train_kind::ResultPointsOf;
    d.check_result = train_kind::CheckResult;
    d.table = ResultTable::kTrainCells;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
