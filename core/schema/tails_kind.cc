// The `tails` kind: one tail-estimator experiment (core/tails_job.h is its
// schema), run as `tailsweep-lab lab tails`; its result is a table of
// rows (job_result.h's TailsResultJson). It has no yes/no outcome, so no
// search.

#include "core/schema/tails_kind.h"

#include <algorithm>
#include <vector>

#include "core/schema/job_kinds.h"
#include "core/schema/job_result.h"
#include "core/schema/schema_kind.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"
#include "core/tails_job.h"

namespace tailsweep {
namespace tails_kind {  // named: the kinds' files share unity batches

absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  TailsJobConfig config;
  TS_RETURN_IF_ERROR(
      (SchemaConfig<TailsJobConfig, SetTailsJobKey>(spec, cell, &config)));
  return TailsJobToKeyValues(config);
}

KeyValues Defaults() { return TailsJobToKeyValues(TailsJobConfig{}); }

// The job's keys as lab tails' flags.
absl::StatusOr<ChildCommand> Child(const ChildJob& job) {
  TailsJobConfig c;
  for (const auto& [key, value] : job.params) {
    TS_RETURN_IF_ERROR(SetTailsJobKey(c, key, value));
  }
  const KeyValues kv = TailsJobToKeyValues(c);
  auto value = [&](absl::string_view key) {
    for (const auto& [k, v] : kv) {
      if (k == key) return v;
    }
    return std::string();
  };
  ChildCommand out = LabChildCommand(job);
  out.argv.insert(
      out.argv.end(),
      {kTailsKindName, "--seams", value("seam"), "--budgets", value("n"),
       "--index-grid", value("indices"), "--trials", value("trials"), "--seed",
       value("seed"), "--reference-index", value("reference_index"),
       "--out-dir", job.dir});
  return out;
}

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
  if (absl::Status rows = ParseTailsResult(*text).status(); !rows.ok()) {
    out.error = std::string(rows.message());
    return out;
  }
  out.outcome = JobOutcome::kDone;
  out.result_json = *std::move(text);
  return out;
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  TS_RETURN_IF_ERROR(ParseTailsResult(json).status());
  return 0;  // run whole every attempt
}

}  // namespace tails_kind

const JobKindDef& TailsKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = kTailsKindName;
    d.old_workers_run = true;
    d.check_key = SchemaCheckKey<TailsJobConfig, TailsJobKeys, SetTailsJobKey>;
    d.check_value = SchemaCheckValue<TailsJobConfig, SetTailsJobKey>;
    d.job_params = tails_kind::Params;
    d.default_params = tails_kind::Defaults;
    d.child_command = tails_kind::Child;
    d.read_finished = tails_kind::ReadFinished;
    d.check_result = tails_kind::CheckResult;
    d.table = ResultTable::kTailsRows;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
