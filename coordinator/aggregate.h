#ifndef TAILSWEEP_COORDINATOR_AGGREGATE_H_
#define TAILSWEEP_COORDINATOR_AGGREGATE_H_

// Results per cell, and over training seeds: the jobs whose cells differ
// only in `seed` form one row. Per job, the result holds the median and mean
// distance ratio over held-out instances and its 95% bootstrap interval
// (instance variability at fixed weights, science.md). Over seeds:
// - ratio_median / ratio_mean: median / mean over seeds of the per-seed
//   values; ratio_ci_low / ratio_ci_high: median over seeds of the interval
//   ends; seed_min / seed_max: the range of the per-seed medians (training-
//   seed variability, which the bootstrap interval does not describe);
// - bold when ratio_ci_low <= 1 (the typical seed's interval reaches 1);
// - collapsed / diverged: how many seeds did; collapse_step: median onset
//   of the seeds that collapsed.
// Values that do not exist (no done job, no Hill statistic) are NaN.
//
// This module owns results: the service only copies its answers into
// messages and the CLI only renders them. Results are read through
// core/schema/job_result.h; a stored result that does not parse counts as
// done without values.

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/store.h"
#include "core/schema/tails_row.h"

namespace tailsweep {

struct CellSummary {
  KeyValues cell;  // the grid values, without seed when over seeds
  int64_t jobs = 0, done = 0, failed = 0;
  double ratio_median, ratio_mean, ratio_ci_low, ratio_ci_high;
  double seed_min, seed_max;
  int64_t collapsed = 0, diverged = 0;
  // Runs that ended before their last step by themselves (early stopping:
  // job_result.h's early_stop), and the training steps they did not run.
  int64_t stopped_early = 0, steps_saved = 0;
  double collapse_step, hill_stat;
  bool bold = false;
};

// Rows in the order of the jobs' first appearance (grid order).
std::vector<CellSummary> Summarize(const std::vector<JobRow>& jobs,
                                   bool over_seeds);

// The paper's shape: one row per cell without `group_by`, one column per
// value of it (first-seen order); cells index into `summaries` (-1: none).
// A key that is not in the cells gives one column, "-".
struct PivotTable {
  std::string group_by;
  std::vector<std::string> columns;
  struct Row {
    std::string label;  // "key=value key=value"; "-" when nothing is left
    std::vector<int> cells;
  };
  std::vector<Row> rows;
};
PivotTable Pivot(const std::vector<CellSummary>& summaries,
                 const std::string& group_by);

// Tails sweeps (science.md 7): one row per (job cell, index) from the done
// jobs' results, in grid order and then the job's own row order (seam,
// budget, index). Over seeds, the jobs whose cells differ only in `seed`
// are one row per index, each number the median over those seeds.
struct TailsSummary {
  KeyValues cell;  // without seed when over seeds
  TailsRow row;
  int64_t seeds = 0;  // done jobs the row is made of
};
std::vector<TailsSummary> SummarizeTails(const std::vector<JobRow>& jobs,
                                         bool over_seeds);

}  // namespace tailsweep

#endif  // TAILSWEEP_COORDINATOR_AGGREGATE_H_
