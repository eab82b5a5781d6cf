#ifndef TAILSWEEP_CORE_SCHEMA_JOB_KINDS_H_
#define TAILSWEEP_CORE_SCHEMA_JOB_KINDS_H_

// Job kinds as registrations. A kind is one JobKindDef, defined in its own
// file (train_kind.cc, tails_kind.cc, command_kind.cc), that owns
// everything in which kinds differ: its name, its spec keys and sections,
// its jobs' parameters, the program a worker starts for a job and how that
// program's end is read, its metrics lines and checkpoints, its result, its
// outcomes and its results table (results_table.h, made on the
// coordinator; every reader shows it without knowing the kind). One line
// of job_kinds.cc's table registers it (with its definition's
// declaration); no other code branches on a kind
// (Layers.KindsBranchOnlyInTheirOwnFiles checks). Torch-free.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/schema/command_job.h"
#include "core/schema/job_kind.h"
#include "core/schema/job_protocol.h"
#include "core/schema/metric_point.h"
#include "core/schema/results_table.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace tailsweep {

struct SweepSpec;
struct SearchSpec;
using KeyValues = std::vector<std::pair<std::string, std::string>>;

// What a done job's stored result shows, by name: its yes/no outcomes
// (train: collapsed, diverged; a command job: its declared outcomes) and
// numeric facts (train: ratio_median). What a boundary search asks.
struct JobOutcomes {
  std::map<std::string, bool> holds;
  std::map<std::string, double> facts;
};

// How a worker treats a job's child, from the job's parameters.
struct ChildRules {
  // SIGTERM to SIGKILL of the child's process group; -1: never killed (the
  // child stops itself, e.g. at a checkpoint).
  int64_t stop_grace_ms = -1;
  // Outcomes that end the run early once they hold at a logged point,
  // `stop_after_steps` steps after the first point where one holds.
  std::vector<OutcomeRule> stop_on;
  int64_t stop_after_steps = 0;
};

// What a worker knows when it reports a done job.
struct DoneRun {
  std::string child_result;   // the child's result file ("null": none)
  int64_t resumed_from = 0;   // the step this attempt resumed from
  int64_t skipped_lines = 0;  // metrics lines it could not read
  std::string early_stop;     // the stop_on outcome that ended it, or ""
};

// A kind's own top-level spec keys and what reads and writes them (the
// command kind's `command:`, `env:`, `outcomes:`, ...).
struct SpecSection {
  absl::Span<const absl::string_view> keys;
  absl::Status (*parse)(absl::string_view source, const YAML::Node& root,
                        SweepSpec& spec) = nullptr;
  void (*emit)(YAML::Emitter& out, const SweepSpec& spec) = nullptr;
  // Resolves what only the submitting machine can (a command's workdir and
  // code hash), relative to the spec's folder; nullptr: nothing.
  absl::Status (*prepare_submit)(const std::string& spec_dir,
                                 SweepSpec& spec) = nullptr;
};

// The contract a kind's children keep beyond exiting and writing a result
// (docs/child-contract.md, the command kind's): metrics lines of any names
// (metrics_line.h's generic lines), checkpoints as step-N/ directories
// (uploaded as bundles, unpacked before a resumed attempt), a grace period
// and early stops, a result the worker completes and outcomes the
// coordinator judges. A kind without one: a `tailsweep-lab` child (train's
// metric keys, step-N.pt files).
struct ChildContract {
  // Grace period and early stops from a job's parameters.
  ChildRules (*rules)(const KeyValues& params) = nullptr;
  // The result reported for a done job.
  std::string (*done_result)(const DoneRun& run) = nullptr;
  // The outcomes the coordinator judges on a done job's stored metrics
  // (every attempt's), added to its result with the metrics' summary.
  std::vector<OutcomeRule> (*metric_outcomes)(const KeyValues& params) =
      nullptr;
};

// What every kind is: a few functions of its spec keys, its jobs' programs
// and their results (LevelDB's Comparator is the model); what only some
// kinds have is one optional part each (section, contract).
struct JobKindDef {
  // The spec's `kind:` value, jobs.kind, the wire's kind: 1-32 lowercase
  // letters, digits and '_'.
  absl::string_view name;
  // Whether a worker built before LeaseJobsRequest.kinds (one that names
  // no kinds when it asks for jobs) runs it: train and tails only.
  bool old_workers_run = false;

  // ---- The sweep spec (sweep_spec.h)
  // OK if `key` is a job key of this kind; else why not, naming what is
  // allowed.
  absl::Status (*check_key)(const std::string& key) = nullptr;
  // OK if `value` is a valid value of `key` (a key check_key accepts).
  absl::Status (*check_value)(const std::string& key,
                              const std::string& value) = nullptr;
  // Whether a job key's value may also be a list of scalars.
  bool list_values = false;
  // The kind's own top-level spec keys; nullptr: none.
  const SpecSection* section = nullptr;
  // A job's whole parameters from the spec's fixed keys and one cell (the
  // cell's values win), checked as a whole; canonical order.
  absl::StatusOr<KeyValues> (*job_params)(const SweepSpec& spec,
                                          const KeyValues& cell) = nullptr;
  // Every job key with its default value, canonical order; nullptr: the
  // kind's keys are free-form (GET /api tells clients the types).
  KeyValues (*default_params)() = nullptr;
  // A parameter that is not part of a job's identity ("": none).
  absl::string_view not_identity = "";
  // A search's `outcome:` text into `search` ("" when the spec names
  // none: the kind's default, or InvalidArgument when it has none);
  // InvalidArgument saying what is allowed. nullptr: the kind has no yes/no
  // outcome, so no search.
  absl::Status (*parse_outcome)(const std::string& text, const SweepSpec& spec,
                                SearchSpec& search) = nullptr;

  // ---- The worker (job_protocol.h)
  absl::StatusOr<ChildCommand> (*child_command)(const ChildJob& job) = nullptr;
  // The outcome of a child that exited with `exit_code`, from its
  // directory; ReadExit has the statuses every kind shares.
  FinishedJob (*read_finished)(const std::string& dir, int exit_code) = nullptr;
  // The points a done result adds to the job's curve, sent before it
  // completes; nullptr: none.
  std::vector<MetricPoint> (*result_points)(const std::string& result_json) =
      nullptr;
  // The child contract; nullptr: a lab child's (train's metric keys,
  // step-N.pt checkpoints, the default ChildRules, its result as it is).
  const ChildContract* contract = nullptr;

  // ---- The coordinator
  // Checks a reported result; the step its attempt resumed from.
  absl::StatusOr<int64_t> (*check_result)(absl::string_view json) = nullptr;

  // ---- The results (results_table.h), made on the coordinator
  // The sweep's table from its jobs in grid order: a row per cell, seed
  // left out when `over_seeds`, else per job.
  ResultsTable (*summarize)(absl::Span<const ResultJob> jobs,
                            bool over_seeds) = nullptr;
  // A done job's outcomes and facts, from its stored result; nullptr: none
  // (no search).
  JobOutcomes (*outcomes)(absl::string_view result_json) = nullptr;
};

// The registered definition of `kind`.
inline const JobKindDef& KindDef(JobKind kind) { return kind.def(); }
// The definition named `name`; NotFound naming the kinds there are.
absl::StatusOr<const JobKindDef*> KindDefNamed(absl::string_view name);
// The kind whose section holds `key`, or nullptr.
const JobKindDef* KindOfSectionKey(absl::string_view key);
// Registers a kind defined outside job_kinds.cc's table (a test fixture),
// from a static initializer; returns true. Its name must be new.
bool RegisterJobKind(const JobKindDef& (*def)());
// "train and command": the kinds that have a search, for messages.
std::string KindsWithSearch();

// The child command for `job` (its kind's child_command). InvalidArgument
// for an unknown kind, a key the kind does not have, or a bad value.
absl::StatusOr<ChildCommand> ChildCommandFor(const ChildJob& job);
// Reads the outcome of a job of `kind` whose child exited with `exit_code`
// (128 + S when killed by signal S) from its directory.
FinishedJob ReadFinishedJob(const std::string& kind, const std::string& dir,
                            int exit_code);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_JOB_KINDS_H_
