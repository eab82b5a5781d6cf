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

namespace {

// The five counts of v1's first release, as fields.
struct LegacyCount {
  JobState state;
  int64_t (v1::GetSweepStatusResponse::*get)() const;
  void (v1::GetSweepStatusResponse::*set)(int64_t);
};
constexpr LegacyCount kLegacyCounts[] = {
    {JobState::kQueued, &v1::GetSweepStatusResponse::queued,
     &v1::GetSweepStatusResponse::set_queued},
    {JobState::kLeased, &v1::GetSweepStatusResponse::leased,
     &v1::GetSweepStatusResponse::set_leased},
    {JobState::kDone, &v1::GetSweepStatusResponse::done,
     &v1::GetSweepStatusResponse::set_done},
    {JobState::kFailed, &v1::GetSweepStatusResponse::failed,
     &v1::GetSweepStatusResponse::set_failed},
    {JobState::kCancelled, &v1::GetSweepStatusResponse::cancelled,
     &v1::GetSweepStatusResponse::set_cancelled},
};

}  // namespace

void ToProto(const JobCounts& counts, v1::GetSweepStatusResponse* out) {
  for (JobState state : kJobStates) {
    (*out->mutable_jobs_by_state())[std::string(JobStateName(state))] =
        counts.Of(state);
  }
  for (const LegacyCount& f : kLegacyCounts) (out->*f.set)(counts.Of(f.state));
}

JobCounts FromProto(const v1::GetSweepStatusResponse& counts) {
  JobCounts out;
  if (counts.jobs_by_state().empty()) {
    for (const LegacyCount& f : kLegacyCounts) {
      out.Of(f.state) = (counts.*f.get)();
    }
    return out;
  }
  for (const auto& [name, n] : counts.jobs_by_state()) {
    // A state this build does not know (a newer coordinator's) is not
    // counted here.
    if (std::optional<JobState> state = ParseJobState(name)) {
      out.Of(*state) = n;
    }
  }
  return out;
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
