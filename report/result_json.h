#ifndef TAILSWEEP_REPORT_RESULT_JSON_H_
#define TAILSWEEP_REPORT_RESULT_JSON_H_

// JSON views of the coordinator's answers that both `tailsweep` (its
// --format json) and the report document write, field for field the same;
// how non-finite numbers are written is the caller's (`number`).

#include <nlohmann/json.hpp>

#include "proto/tailsweep.pb.h"

namespace tailsweep {

using JsonNumberFn = nlohmann::json (*)(double);

// {"queued", "leased", "done", "failed", "cancelled"}.
nlohmann::json CountsJson(const v1::GetSweepStatusResponse& counts);

// A results row's numbers: {"jobs", "done", "failed", "ratio_median",
// "ratio_mean", "ratio_ci_low", "ratio_ci_high", "seed_min", "seed_max",
// "bold", "collapsed", "collapse_step", "diverged", "hill_stat"}.
nlohmann::json CellResultJson(const v1::CellResult& r, JsonNumberFn number);

}  // namespace tailsweep

#endif  // TAILSWEEP_REPORT_RESULT_JSON_H_
