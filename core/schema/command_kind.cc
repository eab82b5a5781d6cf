// The `command` kind: any program (command_job.h; the child's side:
// docs/child-contract.md). Its spec section is command_spec.h's, its
// parameters free-form, its outcomes named rules the coordinator judges
// on the job's stored metrics.

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/schema/command_spec.h"
#include "core/schema/device_placement.h"
#include "core/schema/file_util.h"
#include "core/schema/job_kinds.h"
#include "core/schema/status_macros.h"
#include "core/schema/sweep_spec.h"

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
  std::vector<std::string> names;
  for (const OutcomeRule& o : spec.command.outcomes) {
    if (o.name == text) {
      s.outcome = SearchSpec::Outcome::kNamed;
      s.named = text;
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
  absl::StatusOr<std::string> text = ReadFile(JobPath(dir, kResultFileName));
  FinishedJob out;
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

}  // namespace command_kind

const JobKindDef& CommandKindDef() {
  static const JobKindDef def = [] {
    JobKindDef d;
    d.name = "command";
    d.check_key = command_kind::CheckKey;
    d.check_value = command_kind::CheckValue;
    d.list_values = true;
    d.section_keys = CommandSectionKeys();
    d.parse_section = command_kind::ParseSection;
    d.emit_section = command_kind::EmitSection;
    d.prepare_submit = command_kind::PrepareSubmit;
    d.job_params = command_kind::Params;
    d.not_identity = kWorkdirParam;
    d.parse_outcome = command_kind::ParseOutcome;
    d.outcome_required = true;
    d.child_command = CommandChildFor;
    d.read_finished = command_kind::ReadFinished;
    d.any_metric_names = true;
    d.checkpoint_directories = true;
    d.child_rules = command_kind::RulesOf;
    d.done_result = command_kind::DoneResult;
    d.check_result = command_kind::CheckResult;
    d.metric_outcomes = command_kind::Outcomes;
    d.table = ResultTable::kMetricSummary;
    return d;
  }();
  return def;
}

}  // namespace tailsweep
