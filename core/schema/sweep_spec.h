#ifndef TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_
#define TAILSWEEP_CORE_SCHEMA_SWEEP_SPEC_H_

// Sweep specs (YAML) and their expansion into jobs (system.md, "Sweep
// spec"). A spec has
//   name:    the sweep's name (letters, digits, '-', '_', '.')
//   kind:    train | tails | command
//   command, shell, env, workdir, code, setup, stop_grace_s, outcomes,
//   stop_on: the program of a command sweep (core/schema/command_spec.h)
//   grid:    KEY: [values...]   the axes; their cartesian product is the jobs
//   zip:     KEY: [values...]   axes that vary together (equal lengths):
//                               one axis of tuples, before the grid's
//   exclude: [{KEY: value, ...}] partial assignments whose cells are dropped
//   fixed:   KEY: value          scalars shared by every job
//   overrides: [KEY=VALUE, ...]  what the command line changed (below);
//                                informational, written by ApplyOverrides
//   search:  a boundary search over one key (SearchSpec, below;
//            sweeps/README.md): train and command sweeps
//   method, parameters, run_cap, sample_seed, metric: search beyond grids
//            (core/schema/search_space.h): sampled parameters, crossed
//            with the grid's cells
//   priority, max_running, timeout_s, max_failures, tags, notes, stop:
//            how the sweep runs (core/schema/sweep_control.h)
//   checkpoints, artifacts, artifacts_max_mib, logs_max_mib, notify,
//   stall_after_s: what its runs leave and who hears of them
//            (core/schema/run_outputs.h)
// Keys and values are those of the kind's job schema (core/job_config.h,
// core/tails_job.h; for command sweeps any parameter name, values scalars
// or lists: command_job.h); every value is validated there, once. A key named
// twice in one mapping (top level, grid, fixed, an exclude entry) is an
// error. Errors give file:line:column, the key and what is allowed, and
// nothing is returned.
// Torch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/schema/command_job.h"
#include "core/schema/job_kind.h"
#include "core/schema/run_outputs.h"
#include "core/schema/search_space.h"
#include "core/schema/sweep_control.h"

namespace tailsweep {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// A boundary sweep: for every cell of the grid, where a yes/no outcome of
// the runs flips along one continuous key (core/schema/boundary_search.h
// plans the probes). In the spec:
//   search:
//     key: lr                 # a number key of the kind, not in grid/fixed
//     range: [1e-3, 1e-2]     # lo < hi (lo > 0 on a log scale)
//     scale: log              # log (the default) or linear
//     outcome: collapsed      # collapsed (default) | diverged | ratio_above X
//                             # (train); a declared outcome's name (command)
//     seeds: 4                # runs per probe point (seed 0..seeds-1)
//     extra_seeds: 4          # added once to a point whose vote is split
//     max_probes: 8           # probe points per cell, both ends included
//     tolerance: 0.1          # done when hi/lo - 1 (log) or hi - lo
//                             # (linear) of the bracket is at most this
// The search sets `seed` itself, so `seed` is in neither grid nor fixed.
struct SearchSpec {
  std::string key;
  // The outcome as the spec names it: "collapsed", "ratio_above 1.5", a
  // command sweep's declared outcome.
  std::string outcome = "collapsed";
  // What decides it, by name, from a done job's outcomes (the kind's
  // JobKindDef::outcomes): the yes/no outcome `holds`, or when `fact` is
  // set, whether that numeric fact is above `above`.
  std::string holds = "collapsed";
  std::string fact;
  double above = 0;
  double lo = 0, hi = 0;
  bool log_scale = true;
  // Where the outcome holds: above the boundary ("rising", e.g. collapse as
  // the learning rate grows) or below it ("falling", e.g. collapse as the
  // tail index falls).
  bool rising = true;
  int64_t seeds = 4;
  int64_t extra_seeds = 4;
  int64_t max_probes = 8;
  double tolerance = 0.1;
  bool integer = false;  // the key takes whole numbers (n_points)
};

// A probe point's value as job key text: 4 significant digits, or a whole
// number for an integer key. The same value always gives the same text, so
// a probe's jobs keep their ids.
std::string ProbeText(const SearchSpec& search, double value);

// The outcome as the spec names it (search.outcome).
inline const std::string& OutcomeName(const SearchSpec& search) {
  return search.outcome;
}

struct SweepSpec {
  std::string name;
  JobKind kind;         // train unless the spec names another
  CommandSpec command;  // kind command only
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;
  // Axes that vary together: every list the same length; the i-th cell of
  // the zip takes the i-th value of each.
  std::vector<std::pair<std::string, std::vector<std::string>>> zip;
  std::vector<KeyValues> exclude;
  KeyValues fixed;
  std::vector<std::string> overrides;  // as given, oldest first
  std::optional<SearchSpec> search;
  SearchSpace space;     // method grid unless the spec names another
  SweepControl control;  // what the spec sets of it
  RunOutputs outputs;
  std::string text;  // the source text it was parsed from
};

struct JobSpec {
  // content hash of `params` (hex SHA-256, 64 chars); of a command job's,
  // without where it runs (kWorkdirParam)
  std::string id;
  KeyValues cell;    // the grid values of this job, in grid order
  KeyValues params;  // the full assignment, canonical order, defaults filled
};

// `source` names the text in errors (a file path).
absl::StatusOr<SweepSpec> ParseSweepSpec(absl::string_view text,
                                         absl::string_view source);
// NotFound for a missing file.
absl::StatusOr<SweepSpec> LoadSweepSpec(const std::string& path);

// One job of a boundary search: `cell` (grid values) with the searched key
// at `probe` (ProbeText) and `seed`. Its cell is the grid values, then the
// key, then seed. InvalidArgument as ExpandSweep's.
absl::StatusOr<JobSpec> ProbeJob(const SweepSpec& spec, const KeyValues& cell,
                                 const std::string& probe, int64_t seed);

// The jobs of a spec, in grid order (last key fastest); for a sampled
// method (random, sobol), each sample in draw order crossed with every
// kept cell (the sample's keys first in a job's cell); none for a method a
// study drives (tpe, ...) and for `grid: {}`
// (its jobs are added to the live sweep: AddedJob, AddJobs). With a search: per
// cell, the first probes (both ends of the range, `seeds` seeds each); the
// coordinator adds the rest as results come in. InvalidArgument for a
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
