// The `command` kind: any program (command_job.h; the child's side:
// docs/child-contract.md). Its spec section is command_spec.h's, its
// parameters free-form, its outcomes named rules the coordinator judges
// on the job's stored metrics.

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/schema/command_spec.h"
#include "core/schema/device_placement.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/json_number.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"
#include "core/statistics.h"

namespace tailsweep {
namespace command_kind {  // named: the kinds' files share unity batches

absl::Status CheckKey(const std::string& key) { return CheckParamName(key); }

absl::Status CheckValue(const std::string& key, const std::string& value) {
  TS_RETURN_IF_ERROR(CheckParamName(key));
  if (key == kGpusKey) return ParseGpus(value).status();
  return absl::OkStatus();
}

absl::Status ParseSection(absl::string_view source, const YAML::Node& root,
                          SweepSpec& spec) {
  return ParseCommandSection(source, root, spec.command);
}

void EmitSection(YAML::Emitter& out, const SweepSpec& spec) {
  EmitCommandSection(out, spec.command);
}

absl::Status PrepareSubmit(const std::string& spec_dir, SweepSpec& spec) {
  return PrepareCommandForSubmit(spec_dir, spec.command);
}

// The user's keys in name order, then the definition (part of the
// identity) and where it runs (not).
absl::StatusOr<KeyValues> Params(const SweepSpec& spec, const KeyValues& cell) {
  std::map<std::string, std::string> values;
  for (const auto& [k, v] : spec.fixed) values[k] = v;
  for (const auto& [k, v] : cell) values[k] = v;
  KeyValues params(values.begin(), values.end());
  TS_RETURN_IF_ERROR(CheckTemplate(spec.command, params));
  params.emplace_back(kCommandParam, CommandDefinitionJson(spec.command));
  if (!spec.command.workdir.empty()) {
    params.emplace_back(kWorkdirParam, spec.command.workdir);
  }
  return params;
}

absl::Status ParseOutcome(const std::string& text, const SweepSpec& spec,
                          SearchSpec& s) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "'search' of a command sweep needs 'outcome': one of its "
        "'outcomes'");
  }
  std::vector<std::string> names;
  for (const OutcomeRule& o : spec.command.outcomes) {
    if (o.name == text) {
      s.outcome = s.holds = text;
      s.fact.clear();
      return absl::OkStatus();
    }
    names.push_back(o.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "outcome '", text, "' is not one of the sweep's outcomes; allowed: ",
      names.empty() ? "(none: declare them under 'outcomes')"
                    : absl::StrJoin(names, ", ")));
}

// The result file is the child's option: null when it wrote none (or
// wrote something that is not JSON, which the worker logs). Exit status 2
// is the program's own business, not "input refused".
FinishedJob ReadFinished(const std::string& dir, int exit_code) {
  if (std::optional<FinishedJob> ended = ReadExit(exit_code, false)) {
    return *ended;
  }
  FinishedJob out;
  absl::StatusOr<std::string> text = ReadResultFile(dir);
  if (absl::IsResourceExhausted(text.status())) {  // over the limit
    out.error = std::string(text.status().message());
    out.permanent = true;
    return out;
  }
  out.outcome = JobOutcome::kDone;
  out.result_json = text.ok() ? *text : "null";
  return out;
}

absl::StatusOr<CommandSpec> DefinitionOf(const KeyValues& params) {
  for (const auto& [k, v] : params) {
    if (k == kCommandParam) return ParseCommandDefinition(v);
  }
  return absl::InvalidArgumentError("a command job without its definition");
}

ChildRules RulesOf(const KeyValues& params) {
  ChildRules rules;
  absl::StatusOr<CommandSpec> def = DefinitionOf(params);
  if (!def.ok()) return rules;
  rules.stop_grace_ms = def->stop_grace_s * 1000;
  rules.stop_after_steps = def->stop_after_steps;
  for (const OutcomeRule& rule : def->outcomes) {
    if (std::find(def->stop_on.begin(), def->stop_on.end(), rule.name) !=
        def->stop_on.end()) {
      rules.stop_on.push_back(rule);
    }
  }
  return rules;
}

std::string DoneResult(const DoneRun& run) {
  return CommandResultJson(run.child_result, run.resumed_from,
                           run.skipped_lines, run.early_stop);
}

absl::StatusOr<int64_t> CheckResult(absl::string_view json) {
  absl::StatusOr<CommandResult> r = ParseCommandResult(json);
  if (!r.ok()) return r.status();
  return r->resumed_from_step;
}

std::vector<OutcomeRule> Outcomes(const KeyValues& params) {
  absl::StatusOr<CommandSpec> def = DefinitionOf(params);
  return def.ok() ? def->outcomes : std::vector<OutcomeRule>{};
}

// ---- Results: what the coordinator added to a done job's result
// (CommandResultWithSummary): each metric's last value and each outcome.
struct Stored {
  std::map<std::string, double> last;  // NaN: no finite value
  std::map<std::string, bool> outcomes;
};
Stored StoredOf(absl::string_view result_json) {
  Stored out;
  const nlohmann::json doc =
      nlohmann::json::parse(result_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return out;
  if (auto s = doc.find("summary"); s != doc.end() && s->is_object()) {
    for (const auto& [name, m] : s->items()) {
      const std::optional<double> v =
          m.is_object() ? NumberAt(m, "last") : std::nullopt;
      out.last[name] = v ? *v : std::nan("");
    }
  }
  if (auto o = doc.find("outcomes"); o != doc.end() && o->is_object()) {
    for (const auto& [name, v] : o->items()) {
      if (v.is_boolean()) out.outcomes[name] = v.get<bool>();
    }
  }
  return out;
}

// Per cell (seeds pooled) or per job: each metric's last value, the median
// over the done jobs (NaN last), and each outcome as the done runs where it
// holds; metrics and outcomes in name order.
ResultsTable Summarize(absl::Span<const ResultJob> jobs, bool over_seeds) {
  const std::vector<JobGroup> groups = GroupJobs(jobs, over_seeds);
  std::vector<std::vector<Stored>> stored(groups.size());
  std::set<std::string> metrics, outcomes;
  for (size_t i = 0; i < groups.size(); ++i) {
    for (const ResultJob* job : groups[i].jobs) {
      if (job->state != JobState::kDone) continue;
      stored[i].push_back(StoredOf(job->result_json));
      for (const auto& m : stored[i].back().last) metrics.insert(m.first);
      for (const auto& o : stored[i].back().outcomes) outcomes.insert(o.first);
    }
  }
  ResultsTable t;
  AddCellColumns(groups, t);
  // A metric or outcome named as a column already there gets a prefix.
  auto add = [&](const std::string& name, const char* prefix, ColumnType type) {
    return t.AddColumn(t.ColumnIndex(name) ? prefix + name : name, type);
  };
  std::vector<std::pair<std::string, size_t>> metric_at, outcome_at;
  for (const std::string& m : metrics) {
    metric_at.emplace_back(m, add(m, "metric.", ColumnType::kNumber));
  }
  for (const std::string& o : outcomes) {
    outcome_at.emplace_back(o, add(o, "outcome.", ColumnType::kFraction));
  }
  t.note =
      "metrics: the last logged value (median over seeds); outcomes: runs "
      "where it holds, of those done";
  for (size_t i = 0; i < groups.size(); ++i) {
    std::vector<ResultValue>& row = t.rows[i];
    row.resize(t.columns.size());
    for (const auto& [name, c] : metric_at) {
      std::vector<double> values;
      bool any = false;
      for (const Stored& s : stored[i]) {
        auto it = s.last.find(name);
        if (it == s.last.end()) continue;
        any = true;
        if (!std::isnan(it->second)) values.push_back(it->second);
      }
      if (any) row[c] = values.empty() ? std::nan("") : Median(values);
    }
    for (const auto& [name, c] : outcome_at) {
      Fraction f{0, static_cast<int64_t>(stored[i].size())};
      for (const Stored& s : stored[i]) {
        auto it = s.outcomes.find(name);
        if (it != s.outcomes.end() && it->second) ++f.count;
      }
      row[c] = f;
    }
  }
  return t;
}

// The declared outcomes as judged; facts: each metric's last value.
JobOutcomes ResultOutcomes(absl::string_view result_json) {
  Stored s = StoredOf(result_json);
  return {std::move(s.outcomes), std::move(s.last)};
}

}  // namespace command_kind

const JobKindDef& CommandKindDef() {
  static const SpecSection section = {
      CommandSectionKeys(), command_kind::ParseSection,
      command_kind::EmitSection, command_kind::PrepareSubmit};
  static const ChildContract contract = {
      command_kind::RulesOf, command_kind::DoneResult, command_kind::Outcomes};
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = "command";
    d.check_key = command_kind::CheckKey;
    d.check_value = command_kind::CheckValue;
    d.list_values = true;
    d.section = &section;
    d.job_params = command_kind::Params;
    d.not_identity = kWorkdirParam;
    d.parse_outcome = command_kind::ParseOutcome;
    d.child_command = CommandChildFor;
    d.read_finished = command_kind::ReadFinished;
    d.contract = &contract;
    d.check_result = command_kind::CheckResult;
    d.summarize = command_kind::Summarize;
    d.outcomes = command_kind::ResultOutcomes;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
