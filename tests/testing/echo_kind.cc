// A fourth job kind, for tests only: `echo`. Its job writes its `value`
// back as its result ({"value": N}); its results table is one column,
// `value`, the median over a cell's seeds. It proves a kind is this one file
// (and the registration line at its end): the coordinator, the CLI, the
// report, the HTTP API and Python show its table without knowing it
// (tests/coordinator/echo_kind_test.cc).

#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/schema/job_kinds.h"
#include "core/schema/json_number.h"
#include "core/schema/sweep_spec.h"
#include "core/statistics.h"

namespace tailsweep {
namespace echo_kind {

absl::Status CheckKey(const std::string& key) {
  if (key == "value" || key == "seed") return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("key '", key, "': an echo job takes value and seed"));
}

absl::Status CheckValue(const std::string& key, const std::string& value) {
  if (absl::Status k = CheckKey(key); !k.ok()) return k;
  double number = 0;
  if (!absl::SimpleAtod(value, &number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key '", key, "': '", value, "' is not a number"));
  }
  return absl::OkStatus();
}

absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  std::map<std::string, std::string> values = {{"seed", "0"}, {"value", "0"}};
  for (const KeyValues* kv : {&spec.fixed, &cell}) {
    for (const auto& [k, v] : *kv) values[k] = v;
  }
  return KeyValues(values.begin(), values.end());
}

absl::StatusOr<ChildCommand> Child(const ChildJob& job) {
  std::string value = "0";
  for (const auto& [k, v] : job.params) {
    if (k == "value") value = v;
  }
  ChildCommand out;
  out.argv = {"/bin/sh", "-c",  "printf '{\"value\": %s}' \"$1\" > \"$2\"",
              "echo",    value, JobPath(job.dir, kResultFileName)};
  return out;
}

FinishedJob ReadFinished(const std::string& dir, int exit_code) {
  return ReadDoneResult(dir, exit_code, /*bad_input_code=*/false, nullptr);
}

std::optional<double> ValueOf(absl::string_view json) {
  const nlohmann::json doc =
      nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() ? NumberAt(doc, "value") : std::nullopt;
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  if (!ValueOf(json)) {
    return absl::InvalidArgumentError("echo result: {\"value\": N} expected");
  }
  return 0;
}

ResultsTable Summarize(absl::Span<const ResultJob> jobs, bool over_seeds) {
  const std::vector<JobGroup> groups = GroupJobs(jobs, over_seeds);
  ResultsTable t;
  AddKeyColumns(groups, t);
  const size_t value = t.AddColumn("echoed", ColumnType::kNumber);
  t.note = "echoed: the value the jobs wrote back (median over seeds)";
  for (const JobGroup& g : groups) {
    std::vector<double> values;
    for (const ResultJob* job : g.jobs) {
      if (job->state != JobState::kDone) continue;
      if (std::optional<double> v = ValueOf(job->result_json)) {
        values.push_back(*v);
      }
    }
    std::vector<ResultValue> row = KeyRow(g, t);
    row[value] = values.empty() ? std::nan("") : Median(values);
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace echo_kind

const JobKindDef& EchoKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = "echo";
    d.check_key = echo_kind::CheckKey;
    d.check_value = echo_kind::CheckValue;
    d.job_params = echo_kind::Params;
    d.child_command = echo_kind::Child;
    d.read_finished = echo_kind::ReadFinished;
    d.check_result = echo_kind::CheckResult;
    d.summarize = echo_kind::Summarize;
    return d;
  }();
  return def;
}

// The registration line.
[[maybe_unused]] const bool kEchoRegistered = RegisterJobKind(EchoKindDef);

}  // namespace tailsweep
