#ifndef TAILSWEEP_REPORT_REPORT_DATA_H_
#define TAILSWEEP_REPORT_REPORT_DATA_H_

// The report document: everything the report page (report/web/report.js)
// draws for one sweep, as one JSON object, read from the coordinator through
// its read RPCs (proto/paged_reads.h), curves downsampled there. The same
// document feeds `tailsweep report` (inlined into the HTML file) and the live
// dashboard (GET /api/sweeps/NAME/report). It is the one contract between
// the C++ and the page:
//
// {"format": 2, "generated_by": version, "generated_ms": Unix ms,
//  "sweep": {"name", "kind" (its kind's name: shown, never branched on),
//    "created_ms", "counts": {state: count}, "states": [state names in
//    order], "spec" (text), "fixed": {key: value}, "version" (the build
//    that expanded it)},
//  "results": the kind's table over seeds (results_table.h's
//    ResultsTableJson: columns with name, type and role; rows of cells),
//  "pivot" (a table with a headline): {"group_by", "columns": [value],
//    "rows": [{"label", "cells": [index into results' rows or -1]}]},
//  "collapse_threshold": number (a job's collapse_threshold, else the
//    default),
//  "cells": [{"cell": {key: value} (grid values, seed left out), "row":
//    its row in "results" (null: none, e.g. a table with a row per testbed
//    row), "jobs": [index into "jobs"], optionally "samples": {"seed",
//    "clouds": a result's "samples" as stored (job_result.h)}}],
//  "jobs": [{"id", "seed", "state", "holder", "last_error", "layers",
//    "steps", "collapse_step", "diverged_step" (from the result when it has
//    them; null: none), "version" (of the build that ran it; null:
//    unknown), "series": {name: [[step...], [value...]]}: a run that
//    logs the collapse signals its loss, spread_ratio and attention per
//    layer, any other run its every metric; with artifact_image_bytes,
//    "artifacts": [{"name", "bytes", "epoch", "src": a data: URI, or null
//    past the budget}] of its image artifacts (PNG, JPEG, GIF, WebP)}],
//  a boundary sweep: "search": {"key", "outcome", "lo", "hi", "log_scale",
//    "cells"}}
//
// Numbers keep 5 significant digits; NaN is null (a gap in a curve), the
// infinities "inf" and "-inf" (the table's NaN is "nan": json_number.h). Every
// string is data: the page inserts them as text, never as markup.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/paged_reads.h"

namespace tailsweep {

struct ReportOptions {
  // The pivot's columns; "": the kind's default (train's kernel).
  std::string group_by;
  // Points per curve, >= 2; per attention curve (one per layer) of runs
  // that log the collapse signals (report_data.cc's ReadCurves).
  int curve_points = 300;
  int attention_points = 100;
  int64_t now_ms = 0;  // "generated_ms"
  // Image artifacts inlined into the document, in bytes in all (jobs in
  // order); 0: none (the live page asks the coordinator for them).
  int64_t artifact_image_bytes = 0;
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
