#ifndef TAILSWEEP_PROTO_WIRE_RECORDS_H_
#define TAILSWEEP_PROTO_WIRE_RECORDS_H_

// The records that cross the wire, converted between core/schema's types
// and the v1 messages. Nothing above proto/ builds or reads these messages'
// fields for them.

#include "absl/status/statusor.h"
#include "core/schema/job_lease.h"
#include "core/schema/metric_point.h"
#include "proto/tailsweep.pb.h"

namespace tailsweep {

void ToProto(const MetricPoint& point, v1::MetricPoint* out);
MetricPoint FromProto(const v1::MetricPoint& point);

// DataLoss for a kind this build does not know (a newer coordinator's).
absl::StatusOr<JobLease> FromProto(const v1::JobLease& lease);

}  // namespace tailsweep

#endif  // TAILSWEEP_PROTO_WIRE_RECORDS_H_
