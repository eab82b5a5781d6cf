#ifndef TAILSWEEP_REPORT_RESULT_JSON_H_
#define TAILSWEEP_REPORT_RESULT_JSON_H_

// JSON views of the coordinator's answers that both `tailsweep` (its
// --format json) and the report document write, field for field the same;
// how non-finite numbers are written is the caller's (`number`).

#include <nlohmann/json.hpp>
#include <vector>

#include "absl/status/statusor.h"
#include "core/schema/boundary_search.h"
#include "core/schema/job_counts.h"
#include "core/schema/sweep_spec.h"
#include "proto/coordinator_api.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

using JsonNumberFn = nlohmann::json (*)(double);

// {STATE: count} for every state (core/schema/job_state.h).
nlohmann::json CountsJson(const JobCounts& counts);
// The states' names in their order (a JSON object's keys come sorted).
nlohmann::json JobStateNamesJson();
// A sweep's settings and hours: {"priority", "max_running", "paused",
// "held", "max_failures", "failures", "timeout_s", "tags": {KEY: VALUE},
// "notes", "stop_rule", "gpu_hours", "cpu_hours", "preempted_gpu_hours",
// "preempted_cpu_hours"}.
nlohmann::json SweepSettingsJson(const v1::SweepSettings& settings,
                                 const v1::SweepHours& hours);

// A results row's numbers: {"jobs", "done", "failed", "ratio_median",
// "ratio_mean", "ratio_ci_low", "ratio_ci_high", "seed_min", "seed_max",
// "bold", "collapsed", "collapse_step", "diverged", "hill_stat",
// "stopped_early", "steps_saved"}.
nlohmann::json CellResultJson(const v1::CellResult& r, JsonNumberFn number);

// Where a boundary sweep's search stands: the coordinator's own plan
// (GetBoundaries); from an older coordinator without that call, planned
// here from the sweep's jobs.
absl::StatusOr<std::vector<CellSearch>> BoundariesOf(
    const CoordinatorApi& calls, const SweepSpec& spec);

// Where each cell's search stands: [{grid keys..., "state", "estimate",
// "bracket_lo", "bracket_hi", "runs", "probes": [{"value", "x", "yes", "n",
// "failed", "pending", "low", "high", "verdict"}]}]; numbers as `number`
// writes them.
nlohmann::json SearchJson(const std::vector<CellSearch>& plan,
                          JsonNumberFn number);

}  // namespace tailsweep

#endif  // TAILSWEEP_REPORT_RESULT_JSON_H_
