#ifndef TAILSWEEP_CORE_POINT_CSV_H_
#define TAILSWEEP_CORE_POINT_CSV_H_

// Point sets as CSV files: one point per line, one column per coordinate,
// comma-separated, with an optional header line (a first line with any
// field that is not a number). Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tailsweep {

struct PointSet {
  std::vector<std::string> columns;  // header names; empty without a header
  int64_t rows = 0;
  int64_t dims = 0;
  std::vector<double> values;  // row-major [rows, dims]
};

// Parses CSV text; `source` names it in errors. Blank lines are skipped,
// fields may carry spaces around them, "\r\n" endings are accepted.
// InvalidArgument with "source:line: ..." for a ragged row, a field that is
// not a finite number, or no data rows.
absl::StatusOr<PointSet> ParsePointsCsv(absl::string_view text,
                                        absl::string_view source);

// Reads and parses a file; NotFound when it cannot be opened.
absl::StatusOr<PointSet> ReadPointsCsv(const std::string& path);

// Writes `points` with its header (when non-empty), numbers in shortest
// round-trip form, atomically (temp file then rename). Internal on I/O error.
absl::Status WritePointsCsv(const std::string& path, const PointSet& points);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_POINT_CSV_H_
