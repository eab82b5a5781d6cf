#ifndef TAILSWEEP_REPORT_REPORT_DATA_H_
#define TAILSWEEP_REPORT_REPORT_DATA_H_

// The report document: everything the report page (report/web/report.js)
// draws for one sweep, as one JSON object, read from the coordinator through
// its read RPCs (proto/paged_reads.h), curves downsampled there. The same
// document feeds `tailsweep report` (inlined into the HTML file) and the live
// dashboard (GET /api/sweeps/NAME/report). It is the one contract between
// the C++ and the page:
//
// {"format": 1, "generated_by": version, "generated_ms": Unix ms,
//  "sweep": {"name", "kind" (train|tails), "created_ms", "counts": {"queued",
//    "leased", "done", "failed", "cancelled"}, "spec" (text), "fixed":
//    {key: value}, "version" (the build that expanded it)},
//  train sweeps:
//  "collapse_threshold": number,
//  "table": {"group_by", "columns": [value], "rows": [{"label", "cells":
//    [index into "cells" or -1]}]},
//  "cells": [{"cell": {key: value} (grid values, seed left out), "result":
//    {"jobs", "done", "failed", "ratio_median", "ratio_mean", "ratio_ci_low",
//    "ratio_ci_high", "seed_min", "seed_max", "collapsed", "diverged",
//    "collapse_step", "hill_stat", "bold"}, "jobs": [index into "jobs"],
//    optionally "samples": {"seed", "clouds": [{"instance", "target":
//    [[x, y, ...]], "prediction": [[x, y, ...]]}]} (one seed's final
//    evaluation: job_result.h)}],
//  "jobs": [{"id", "seed", "state", "holder", "last_error", "layers",
//    "steps", "collapse_step" (null: none), "diverged_step" (null: none),
//    "version" (of the build that ran it; null: unknown), "series": {name:
//    [[step...], [value...]]}}],
//  tails sweeps:
//  "tails": [{"seam", "n", "index", "ed_mean", "ed_sd", "w2_mean", "w2_sd",
//    "ed_noise", "w2_noise", "seeds"}]}
//
// Numbers keep 5 significant digits; NaN and infinities are null (a gap in
// a curve). Every string is data: the page inserts them as text, never as
// markup.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/paged_reads.h"

namespace tailsweep {

struct ReportOptions {
  std::string group_by = "kernel";  // the table's columns (GetResults)
  int curve_points = 300;           // per loss or spread-ratio curve, >= 2
  int attention_points = 100;       // per attention curve (one per layer)
  int64_t now_ms = 0;               // "generated_ms"
  // Called after each job's curves are read: (jobs read, jobs in all).
  std::function<void(int64_t, int64_t)> progress;
};

// The statuses of the reads (NotFound, naming the sweeps that exist, for an
// unknown sweep).
absl::StatusOr<std::string> ReportJson(const CoordinatorApi& calls,
                                       const std::string& sweep,
                                       const ReportOptions& options);

}  // namespace tailsweep

#endif  // TAILSWEEP_REPORT_REPORT_DATA_H_
