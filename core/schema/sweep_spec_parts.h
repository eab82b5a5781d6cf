#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_

// What the files of the sweep spec share (sweep_spec.cc: the spec, its
// grid and its jobs; search_spec.cc: its `search:` block;
// spec_overrides.cc: KEY=VALUE overrides). Internal to tailsweep_sweep:
// everyone else reads sweep_spec.h. Torch-free.

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

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_PARTS_H_
