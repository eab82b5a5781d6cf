#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_

// What the files of the sweep spec share (sweep_spec.cc: the spec, its
// grid and its jobs; search_spec.cc: its `search:` block;
// spec_overrides.cc: KEY=VALUE overrides). Internal to tailsweep_sweep:
// everyone else reads sweep_spec.h. Torch-free.

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/sweep_spec.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace tailsweep {

// OK if `key` is a job key of the spec's kind; else why not, naming what
// is allowed (the kind's check_key, job_kinds.h).
absl::Status CheckJobKey(const SweepSpec& spec, const std::string& key);
// OK if `value` is valid for `key` in the spec's kind.
absl::Status CheckJobValue(const SweepSpec& spec, const std::string& key,
                           const std::string& value);
// 1-128 letters, digits, '-', '_', '.'.
bool ValidSweepName(const std::string& name);
// The job of `cell` (every key it sets), or why the schema refuses it.
absl::StatusOr<JobSpec> CellJob(const SweepSpec& spec, const KeyValues& cell);

// The `search:` block `node` into spec.search (after the grid and fixed
// keys are parsed). Errors at the offending node.
absl::Status ParseSearch(absl::string_view source, const YAML::Node& node,
                         SweepSpec& spec);
// Writes `search` as its block's key and value into an open map.
void EmitSearch(YAML::Emitter& out, const SearchSpec& search);

// OK when `key` is in none of grid, zip and fixed; else "is already in
// 'grid'" (or the others), for the caller to prefix.
absl::Status CheckKeyFree(const SweepSpec& spec, const std::string& key);
// The key of a new axis (`what`: "zip key", "parameter") at `node`: a job
// key of the kind in none of grid, zip and fixed; else why not, at `node`.
absl::StatusOr<std::string> NewAxisKey(absl::string_view source,
                                       const YAML::Node& node,
                                       const SweepSpec& spec,
                                       absl::string_view what);
// Calls `fn` with each cell of the grid and zip axes that `exclude` keeps,
// in grid order (zip first, then the grid's axes, last fastest).
void ForEachCell(const SweepSpec& spec,
                 const std::function<void(const KeyValues&)>& fn);

// search_space.cc: `method`, `parameters`, `run_cap`, `sample_seed` and
// `metric` from the spec's root into spec.space (after grid, zip, exclude,
// fixed and search). Errors at the offending node.
absl::Status ParseSearchSpace(absl::string_view source, const YAML::Node& root,
                              SweepSpec& spec);
// Writes those keys into an open map (none for a grid without a metric).
void EmitSearchSpace(YAML::Emitter& out, const SearchSpace& space);
// A goal: minimize (false) or maximize (true).
absl::StatusOr<bool> ParseGoal(absl::string_view source,
                               const YAML::Node& node);

// sweep_control.cc: the control keys from the spec's root into
// spec.control, and back.
absl::Status ParseSweepControl(absl::string_view source, const YAML::Node& root,
                               SweepSpec& spec);
void EmitSweepControl(YAML::Emitter& out, const SweepControl& control);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_
