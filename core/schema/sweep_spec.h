#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_

// Sweep specs (YAML) and their expansion into jobs (system.md, "Sweep
// spec"). A spec has
//   name:    the sweep's name (letters, digits, '-', '_', '.')
//   kind:    train | tails
//   grid:    KEY: [values...]   the axes; their cartesian product is the jobs
//   exclude: [{KEY: value, ...}] partial assignments whose cells are dropped
//   fixed:   KEY: value          scalars shared by every job
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
  std::string text;  // the source text it was parsed from
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

// Hex SHA-256 of "key=value\n" lines: the job identity.
std::string ContentHash(const KeyValues& params);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_
