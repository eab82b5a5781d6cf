#ifndef TAILSWEEP_PROTO_WIRE_RECORDS_H_
#define TAILSWEEP_PROTO_WIRE_RECORDS_H_

// The records that cross the wire, converted between core/schema's types
// and the v1 messages. Nothing above proto/ builds or reads these messages'
// fields for them.

#include <vector>

#include "absl/status/statusor.h"
#include "core/schema/boundary_search.h"
#include "core/schema/job_counts.h"
#include "core/schema/job_lease.h"
#include "core/schema/metric_point.h"
#include "core/schema/results_table.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

void ToProto(const MetricPoint& point, v1::MetricPoint* out);
MetricPoint FromProto(const v1::MetricPoint& point);

// Counts go both ways: the map by state name, and the first release's five
// fields for older clients. Read from the map when it is there (a newer
// coordinator), else from the five fields (an older one).
void ToProto(const JobCounts& counts, v1::GetSweepStatusResponse* out);
JobCounts FromProto(const v1::GetSweepStatusResponse& counts);

// DataLoss for a kind this build does not know (a newer coordinator's).
absl::StatusOr<JobLease> FromProto(const v1::JobLease& lease);

// A boundary search's cells (GetBoundaries). FromProto: DataLoss for a
// state or verdict name this build does not know.
void ToProto(const CellSearch& cell, v1::CellBoundary* out);
absl::StatusOr<CellSearch> FromProto(const v1::CellBoundary& cell);
absl::StatusOr<std::vector<CellSearch>> FromProto(
    const v1::GetBoundariesResponse& boundaries);

// A results table (GetResults with `table`): its columns, headline,
// group_by and note on every page, and its rows one by one (a page holds
// some). FromProto: the rows of every page merged; DataLoss for a column
// type or role this build does not know (a newer coordinator's: upgrade),
// or a cell that is not its column's type.
void ToProtoHeader(const ResultsTable& table, v1::ResultsTable* out);
v1::ResultsRow ToProto(const std::vector<ResultValue>& row);
absl::StatusOr<ResultsTable> FromProto(const v1::ResultsTable& table);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_WIRE_RECORDS_H_
