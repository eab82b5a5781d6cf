#ifndef TAILSWEEP_CORE_SCHEMA_COMMAND_JOB_H_
#define TAILSWEEP_CORE_SCHEMA_COMMAND_JOB_H_

// The `command` job kind: any program as a job's child (docs/
// child-contract.md is the child's side of this contract).
//
// - Definition: a sweep's `command:` (an argv template), `shell:`, `env:`,
//   `workdir:`, `code:` (hashed at submit into `code_hash`), `setup:` and
//   `stop_grace_s:` (CommandSpec). It travels with every job as two
//   reserved parameters: kCommandParam, the definition as canonical JSON
//   (part of the job's identity: another program, environment or code hash
//   gives other jobs), and kWorkdirParam, where it runs (not part of the
//   identity: moving a checkout reruns nothing). User keys cannot take
//   these names (they hold a ':').
// - Parameters: free-form names (CheckParamName); values are YAML scalars
//   or flow lists of scalars, typed for the child as JSON (ParamJson):
//   true/false booleans, numbers, lists, otherwise strings.
// - Macros in the argv template (CommandChildFor): ${args} (--key=value
//   words; a true boolean is --key alone, a false one is left out; a list
//   is --key followed by its items), ${args_no_hyphens} (key=value,
//   key=true, key=[1,2]: Hydra), ${args_json_file} (the parameters file),
//   ${KEY} (one parameter's value), ${job_dir}, ${checkpoint_dir}. ${args}
//   and ${args_no_hyphens} stand alone in their word. `gpus` is placement:
//   it is in the parameters file but not in ${args}.
// Torch-free.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/job_protocol.h"

namespace tailsweep {

inline constexpr char kCommandParam[] = "tailsweep:command";
inline constexpr char kWorkdirParam[] = "tailsweep:workdir";
inline constexpr char kParamsFileName[] = "params.json";
inline constexpr int64_t kDefaultStopGraceS = 30;

// One named outcome of a command sweep, judged by the coordinator on a
// job's stored metrics once it is done (every attempt's points): `metric`
// above (or below) `threshold`, taken at its last logged value, its
// minimum, its maximum, or `any` step (min for below, max for above);
// `not_finite` instead: the metric is NaN or infinite at any step (or never
// logged at all: the outcome does not hold).
struct OutcomeRule {
  enum class At { kLast, kMin, kMax, kAny };
  std::string name;
  std::string metric;
  bool not_finite = false;
  bool above = true;
  double threshold = 0;
  At at = At::kLast;
};

struct CommandSpec {
  std::vector<std::string> command;  // argv template, at least one word
  bool shell = false;                // run through /bin/sh -c
  std::vector<std::pair<std::string, std::string>> env;  // NAME, value
  std::string workdir;             // absolute once submitted; "": job dir
  std::vector<std::string> code;   // paths as written in the spec
  std::string code_hash;           // hex SHA-256 of `code`, set at submit
  std::vector<std::string> setup;  // shell lines run before the command
  int64_t stop_grace_s = kDefaultStopGraceS;
  std::vector<OutcomeRule> outcomes;
  // The outcomes that stop a run early once they hold (each must be a
  // rule that stays true once true: at any / min / max, or not_finite).
  std::vector<std::string> stop_on;
  // How many steps a run goes on after a stop_on outcome first holds (0:
  // it stops then). Part of the definition only when set.
  int64_t stop_after_steps = 0;
};

// InvalidArgument unless `name` is 1-64 letters, digits, '_', '-', '.'
// starting with a letter or '_' (and not a reserved name).
absl::Status CheckParamName(absl::string_view name);

// The JSON value of a parameter's text: true/false, an integer, a finite
// number, a list (text from FlowListText), else the string itself.
nlohmann::json ParamJson(absl::string_view text);
// The text a flow list of scalars is stored as: a compact JSON array.
std::string FlowListText(const std::vector<std::string>& items);

// The definition as the canonical JSON of kCommandParam (no workdir).
std::string CommandDefinitionJson(const CommandSpec& spec);
// Parses CommandDefinitionJson's output (workdir left empty).
absl::StatusOr<CommandSpec> ParseCommandDefinition(absl::string_view json);

// The user's parameters of a command job's params (reserved ones left out).
std::vector<std::pair<std::string, std::string>> UserParams(
    const std::vector<std::pair<std::string, std::string>>& params);
// The parameters file's text: one JSON object, typed (ParamJson).
std::string ParamsFileJson(
    const std::vector<std::pair<std::string, std::string>>& params);

// Checks that every ${...} of the template names a macro or one of
// `params`' keys, and that ${args} words stand alone. InvalidArgument
// naming the word and what is allowed.
absl::Status CheckTemplate(
    const CommandSpec& spec,
    const std::vector<std::pair<std::string, std::string>>& params);

// The hex SHA-256 of the files under `paths` (files or folders, relative to
// `base`): relative path and bytes of every regular file, folders walked in
// name order, names starting with '.' and __pycache__ skipped. NotFound
// names a missing path.
absl::StatusOr<std::string> CodeHash(const std::string& base,
                                     const std::vector<std::string>& paths);

// The child command of a command job (the command kind's child_command).
absl::StatusOr<ChildCommand> CommandChildFor(const ChildJob& job);

// The result a worker reports for a command job that is done: the child's
// result file's object (null when it wrote none), the step it resumed from,
// the metric lines the worker skipped and, when a `stop_on` outcome ended
// it early, that outcome's name ("early_stop"; absent otherwise).
std::string CommandResultJson(const std::string& child_result,
                              int64_t resumed_from_step, int64_t skipped_lines,
                              const std::string& early_stop = "");
struct CommandResult {
  int64_t resumed_from_step = 0;
};
// One metric of a finished job, over every attempt's stored points.
struct MetricSummary {
  std::string name;
  int64_t points = 0;
  int64_t last_step = 0;
  double last = 0, min = 0, max = 0;  // NaN when no finite value
  int64_t not_finite = 0;             // points that are NaN or infinite
};
// Whether each rule holds, by name (OutcomeRule says how).
std::vector<std::pair<std::string, bool>> JudgeOutcomes(
    const std::vector<OutcomeRule>& rules,
    const std::vector<MetricSummary>& metrics);
// The stored result: `result` (CommandResultJson's) with "summary": {NAME:
// {points, last_step, last, min, max, not_finite}} and "outcomes": {NAME:
// bool} added.
std::string CommandResultWithSummary(
    const std::string& result, const std::vector<MetricSummary>& metrics,
    const std::vector<std::pair<std::string, bool>>& outcomes);
// An outcome rule that holds at one point holds from then on (not_finite,
// at: any, above at: max, below at: min): it may stop a run early.
bool StaysTrue(const OutcomeRule& rule);
// Whether `rule` holds at one logged point (StaysTrue rules only).
bool HoldsAt(const OutcomeRule& rule, double value);
// InvalidArgument for a result that is not CommandResultJson's shape.
absl::StatusOr<CommandResult> ParseCommandResult(absl::string_view json);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_COMMAND_JOB_H_
