#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_

// Sweep specs (YAML) and their expansion into jobs (system.md, "Sweep
// spec"). A spec has
//   name:    the sweep's name (letters, digits, '-', '_', '.')
//   kind:    train | tails
//   grid:    KEY: [values...]   the axes; their cartesian product is the jobs
//   exclude: [{KEY: value, ...}] partial assignments whose cells are dropped
//   fixed:   KEY: value          scalars shared by every job
//   overrides: [KEY=VALUE, ...]  what the command line changed (below);
//                                informational, written by ApplyOverrides
// Keys and values are those of the kind's job schema (core/job_config.h,
// core/tails_job.h); every value is validated there, once. A key named
// twice in one mapping (top level, grid, fixed, an exclude entry) is an
// error. Errors give file:line:column, the key and what is allowed, and
// nothing is returned.
// Torch-free.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/job_kind.h"

namespace tailsweep {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct SweepSpec {
  std::string name;
  JobKind kind = JobKind::kTrain;
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;
  std::vector<KeyValues> exclude;
  KeyValues fixed;
  std::vector<std::string> overrides;  // as given, oldest first
  std::string text;                    // the source text it was parsed from
};

struct JobSpec {
  std::string id;    // content hash of `params` (hex SHA-256, 64 chars)
  KeyValues cell;    // the grid values of this job, in grid order
  KeyValues params;  // the full assignment, canonical order, defaults filled
};

// `source` names the text in errors (a file path).
absl::StatusOr<SweepSpec> ParseSweepSpec(absl::string_view text,
                                         absl::string_view source);
// NotFound for a missing file.
absl::StatusOr<SweepSpec> LoadSweepSpec(const std::string& path);

// The jobs of a spec, in grid order (last key fastest). InvalidArgument for a
// cell the schema refuses (e.g. an unidentifiable task that is not excluded),
// naming the cell, and for a grid of more than kMaxSweepCells cells.
inline constexpr int64_t kMaxSweepCells = 100000;
absl::StatusOr<std::vector<JobSpec>> ExpandSweep(const SweepSpec& spec);

// Command-line overrides, as Hydra users type them (`tailsweep submit
// SPEC.yaml lr=1e-3 kernel=softmax,log`):
//   KEY=VALUE          KEY is fixed at VALUE (taken off the grid if there);
//   KEY=V1,V2,...      KEY is a grid axis over the values (taken out of
//   KEY=[V1,...]       `fixed`; a new axis goes last, an existing one keeps
//                      its place); [V] is an axis of one value;
//   name=NAME          the sweep's name (a changed spec needs a new one when
//                      the old sweep has other fixed values).
// KEY is a key of the spec's kind and each value is checked by its schema,
// as the spec's own are. Exclude entries that can no longer match are
// dropped; an entry that would then exclude every cell is an error. The
// result records the overrides (`overrides:`) and its `text` is the YAML
// the coordinator stores, parsed back. InvalidArgument names the override,
// the key and what is allowed.
absl::StatusOr<SweepSpec> ApplyOverrides(
    const SweepSpec& spec, const std::vector<std::string>& overrides);

// The spec as YAML (comments and layout of its source are not kept).
std::string SweepSpecYaml(const SweepSpec& spec);

// Hex SHA-256 of "key=value\n" lines: the job identity.
std::string ContentHash(const KeyValues& params);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_
