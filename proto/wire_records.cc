#include "proto/wire_records.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace tailsweep {

void ToProto(const MetricPoint& point, v1::MetricPoint* out) {
  out->set_name(point.name);
  out->set_step(point.step);
  out->set_value(point.value);
}

MetricPoint FromProto(const v1::MetricPoint& point) {
  return {point.name(), point.step(), point.value()};
}

absl::StatusOr<JobLease> FromProto(const v1::JobLease& lease) {
  std::optional<JobKind> kind = ParseJobKind(lease.kind());
  if (!kind) {
    return absl::DataLossError(absl::StrCat(
        "lease of job ", lease.job_id(), ": unknown kind '", lease.kind(),
        "' (this worker knows ", JobKindNames(), ")"));
  }
  JobLease out;
  out.job_id = lease.job_id();
  out.sweep = lease.sweep();
  out.kind = *kind;
  out.epoch = lease.epoch();
  out.attempt = lease.attempt();
  out.deadline_ms = lease.deadline_ms();
  for (const v1::KeyValue& kv : lease.params())
    out.params.emplace_back(kv.key(), kv.value());
  return out;
}

}  // namespace tailsweep
