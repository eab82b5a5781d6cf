#ifndef TAILSWEEP_CLI_EXPORTS_H_
#define TAILSWEEP_CLI_EXPORTS_H_

// The flat tables `tailsweep export` writes, for pandas and spreadsheets
// (as Optuna's trials_dataframe and MLflow's search_runs give): one row per
// job, per result row or per metric point, every parameter its own column
// "params_KEY" and every result field its own column, typed (numbers,
// booleans, strings; null where a row has no value). The result's fields
// are taken from its JSON as the job wrote it (core/schema/job_result.h),
// not listed again here: a field added there is a column here.
//
// - jobs: job_id, state, job_state, attempt, epoch, holder, last_error,
//   params_* (the grid values).
// - results, train sweeps: one row per done job: job_id, params_* (the
//   job's whole config, fixed values too), then the result's fields.
//   Tails sweeps: one row per testbed row of each done job: job_id,
//   params_* (the grid values), then the row's fields.
// - metrics: job_id, params_* (the grid values), name, step, value (NaN
//   and infinities as in core/schema/json_number.h).
//
// Columns come in order of first appearance; rendering: CSV (RFC 4180,
// cli/render.h; null empty, booleans true/false, numbers in shortest
// round-trip form) or JSON Lines (one object per row). Torch-free.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep::cli {

class FlatTable {
 public:
  // Starts a row; Set fills its columns (adding new ones).
  void AddRow();
  void Set(const std::string& column, nlohmann::json value);

  const std::vector<std::string>& columns() const { return columns_; }
  size_t rows() const { return rows_.size(); }

  std::string Csv(bool header = true) const;
  std::string JsonLines() const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<nlohmann::json>> rows_;  // short rows: null after
};

FlatTable JobsExport(const std::vector<v1::JobInfo>& jobs);

// InvalidArgument naming the job when a stored result does not parse.
absl::StatusOr<FlatTable> ResultsExport(const std::vector<v1::JobInfo>& jobs);

// One job's points, appended to `table`.
void AddMetricsExport(const v1::JobInfo& job,
                      const std::vector<v1::MetricPoint>& points,
                      FlatTable* table);

}  // namespace tailsweep::cli

#endif  // TAILSWEEP_CLI_EXPORTS_H_
