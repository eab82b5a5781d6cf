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

void ToProto(const CellSearch& cell, v1::CellBoundary* out) {
  for (const auto& [k, v] : cell.cell) {
    v1::KeyValue* kv = out->add_cell();
    kv->set_key(k);
    kv->set_value(v);
  }
  out->set_state(std::string(CellSearchStateName(cell.state)));
  out->set_estimate(cell.estimate);
  out->set_bracket_lo(cell.bracket_lo);
  out->set_bracket_hi(cell.bracket_hi);
  out->set_runs(static_cast<int32_t>(cell.runs));
  for (const ProbePoint& p : cell.probes) {
    v1::ProbePointInfo* probe = out->add_probes();
    probe->set_value(p.value);
    probe->set_x(p.x);
    probe->set_yes(static_cast<int32_t>(p.yes));
    probe->set_no(static_cast<int32_t>(p.no));
    probe->set_failed(static_cast<int32_t>(p.failed));
    probe->set_pending(static_cast<int32_t>(p.pending));
    probe->set_low(p.low);
    probe->set_high(p.high);
    probe->set_verdict(std::string(ProbeVerdictName(p.verdict)));
  }
}

absl::StatusOr<CellSearch> FromProto(const v1::CellBoundary& in) {
  CellSearch cell;
  for (const v1::KeyValue& kv : in.cell()) {
    cell.cell.emplace_back(kv.key(), kv.value());
  }
  bool known = false;
  for (CellSearch::State s :
       {CellSearch::State::kSearching, CellSearch::State::kFound,
        CellSearch::State::kOutOfProbes, CellSearch::State::kBelowRange,
        CellSearch::State::kAboveRange, CellSearch::State::kNoResults}) {
    if (CellSearchStateName(s) == in.state()) {
      cell.state = s;
      known = true;
    }
  }
  if (!known) {
    return absl::DataLossError(
        absl::StrCat("unknown search state '", in.state(), "'"));
  }
  cell.estimate = in.estimate();
  cell.bracket_lo = in.bracket_lo();
  cell.bracket_hi = in.bracket_hi();
  cell.runs = in.runs();
  for (const v1::ProbePointInfo& p : in.probes()) {
    ProbePoint probe;
    probe.value = p.value();
    probe.x = p.x();
    probe.yes = p.yes();
    probe.no = p.no();
    probe.failed = p.failed();
    probe.pending = p.pending();
    probe.low = p.low();
    probe.high = p.high();
    known = false;
    for (ProbePoint::Verdict v :
         {ProbePoint::Verdict::kPending, ProbePoint::Verdict::kBelow,
          ProbePoint::Verdict::kAbove, ProbePoint::Verdict::kUnknown}) {
      if (ProbeVerdictName(v) == p.verdict()) {
        probe.verdict = v;
        known = true;
      }
    }
    if (!known) {
      return absl::DataLossError(
          absl::StrCat("unknown probe verdict '", p.verdict(), "'"));
    }
    cell.probes.push_back(std::move(probe));
  }
  return cell;
}

absl::StatusOr<std::vector<CellSearch>> FromProto(
    const v1::GetBoundariesResponse& boundaries) {
  std::vector<CellSearch> out;
  for (const v1::CellBoundary& c : boundaries.cells()) {
    absl::StatusOr<CellSearch> cell = FromProto(c);
    if (!cell.ok()) return cell.status();
    out.push_back(*std::move(cell));
  }
  return out;
}

}  // namespace tailsweep
