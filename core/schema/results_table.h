#ifndef TAILSWEEP_CORE_SCHEMA_RESULTS_TABLE_H_
#define TAILSWEEP_CORE_SCHEMA_RESULTS_TABLE_H_

// A sweep's results as a table: what a kind's `summarize` makes of its
// jobs (job_kinds.h) on the coordinator, and what every reader shows (the
// CLI's table, csv, json and markdown, the report, the HTTP API, Python)
// without knowing the kind. Named, typed columns; rows of typed cells.
//
// - key columns are the grid values that name a row (the cell; with seed
//   when per seed); value columns what the kind measured; a display column
//   is text for people (train's "0.91 [0.85, 0.97] b"), shown in a pivot
//   and left out of csv, json and frames;
// - a number is a double (NaN: no value, e.g. no done job); a fraction is
//   "count of n" runs (an outcome that held in count of the n done runs;
//   its value is count/n, NaN when n is 0); a missing cell is no value.
//
// How a table is written as JSON (ResultsTableJson: the HTTP answer and the
// report's; ResultRecordsJson: `tailsweep results --format json`) lives
// here and only here, numbers spelled as the job protocol spells them
// (json_number.h: "nan", "inf", "-inf"). Torch-free.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/schema/job_state.h"

namespace tailsweep {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

enum class ColumnType { kText, kInteger, kNumber, kBoolean, kFraction };
enum class ColumnRole { kKey, kValue, kDisplay };

// "text", "integer", "number", "boolean", "fraction"; "key", "value",
// "display": the wire's and JSON's names.
absl::string_view ColumnTypeName(ColumnType type);
std::optional<ColumnType> ParseColumnType(absl::string_view name);
absl::string_view ColumnRoleName(ColumnRole role);
std::optional<ColumnRole> ParseColumnRole(absl::string_view name);

struct ResultsColumn {
  std::string name;
  ColumnType type = ColumnType::kNumber;
  ColumnRole role = ColumnRole::kValue;
};

struct Fraction {
  int64_t count = 0;
  int64_t of = 0;
  bool operator==(const Fraction& o) const {
    return count == o.count && of == o.of;
  }
};

// One cell: no value, or a value of its column's type.
using ResultValue =
    std::variant<std::monostate, std::string, int64_t, double, bool, Fraction>;

struct ResultsTable {
  std::vector<ResultsColumn> columns;
  std::vector<std::vector<ResultValue>> rows;  // each as wide as columns
  // The display column a pivot shows in its cells ("": the table has none;
  // readers show it flat), and the key whose values a pivot's columns are
  // by default ("": none).
  std::string headline;
  std::string group_by;
  // What the numbers are, for people: printed under the table.
  std::string note;
  // Made by AddCellColumns: row i for the i-th group of jobs (not written
  // to JSON; AddHoursColumns reads it).
  bool per_cell = false;

  // Adds a column; returns its index.
  size_t AddColumn(std::string name, ColumnType type,
                   ColumnRole role = ColumnRole::kValue);
  // The index of the column `name`, or nullopt.
  std::optional<size_t> ColumnIndex(absl::string_view name) const;
};

// A job as summarize reads it (the store's or the API's row).
struct ResultJob {
  std::string job_id;
  KeyValues cell;  // the grid values, seed included
  JobState state = JobState::kQueued;
  std::string result_json;              // done jobs: the stored result
  double gpu_hours = 0, cpu_hours = 0;  // device time its attempts used
};

// The jobs of one row: the jobs whose cells are equal, seed left out when
// `over_seeds`, in the order of their first job (grid order).
struct JobGroup {
  KeyValues cell;
  std::vector<const ResultJob*> jobs;
  int64_t done = 0, failed = 0;
};
std::vector<JobGroup> GroupJobs(absl::Span<const ResultJob> jobs,
                                bool over_seeds);

// Adds a key column for every key of the groups' cells (first-seen order)
// but those `except` names (the kind's own columns).
void AddKeyColumns(const std::vector<JobGroup>& groups, ResultsTable& table,
                   absl::Span<const absl::string_view> except = {});
// A row as wide as the table's columns holding the group's cell under its
// key columns (no value where the cell lacks one).
std::vector<ResultValue> KeyRow(const JobGroup& group,
                                const ResultsTable& table);
// AddKeyColumns, then the integer columns jobs, done and failed (n_jobs,
// ... where a grid key has that name), and a row
// per group (KeyRow and its counts): the common start of a table with a
// row per cell; kinds append their columns and fill them, row i for group i.
void AddCellColumns(const std::vector<JobGroup>& groups, ResultsTable& table);

// The device time of each row's jobs, summed: number columns gpu_hours and
// cpu_hours after the kind's, when the table has a row per group of
// GroupJobs(jobs, over_seeds) in its order (made by AddCellColumns: its
// per_cell) and no column of those names; else nothing.
void AddHoursColumns(absl::Span<const ResultJob> jobs, bool over_seeds,
                     ResultsTable& table);

// A cell's value as a double: a number, an integer, count/of of a
// fraction (NaN when of is 0), 1/0 of a boolean; NaN otherwise.
double NumberOf(const ResultValue& value);
// A cell as text: numbers in `precise` (shortest round trip) or people's
// 4 significant digits form, "" for no value or NaN, fractions "k/n".
std::string TextOf(const ResultValue& value, bool precise);

// The paper's shape of a table with a headline: one row per cell without
// `group_by`, one column per value of it (first-seen order), each cell the
// index of a table row (-1: none). A key no row has gives one column "-".
struct ResultsPivot {
  std::string group_by;
  std::vector<std::string> columns;
  struct Row {
    std::string label;  // "key=value key=value"; "-" when nothing is left
    std::vector<int> cells;
  };
  std::vector<Row> rows;
};
ResultsPivot PivotOf(const ResultsTable& table, const std::string& group_by);

// {"columns": [{"name", "type", "role"}], "rows": [[cell...]], "headline",
// "group_by", "note"}: cells as JSON values (text, integer, number or its
// word, boolean, a fraction as {"count", "of"}, null for none).
nlohmann::json ResultsTableJson(const ResultsTable& table);
// The table ResultsTableJson wrote; InvalidArgument naming what is wrong.
absl::StatusOr<ResultsTable> ResultsTableFromJson(const nlohmann::json& doc);
// Rows as objects {column: value}, display columns left out, a fraction as
// its number count/of: what `tailsweep results --format json` prints.
nlohmann::json ResultRecordsJson(const ResultsTable& table);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_RESULTS_TABLE_H_
