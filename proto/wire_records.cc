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
  out.timeout_s = lease.timeout_s();
  if (lease.has_outputs()) {
    const v1::JobOutputs& o = lease.outputs();
    if (!o.keep().empty()) out.outputs.checkpoints.keep = o.keep();
    out.outputs.checkpoints.metric = o.keep_metric();
    out.outputs.checkpoints.maximize = o.keep_maximize();
    out.outputs.checkpoints.at_most = o.keep_at_most();
    out.outputs.artifacts.assign(o.artifacts().begin(), o.artifacts().end());
    if (o.artifacts_max_mib() > 0) {
      out.outputs.artifacts_max_mib = o.artifacts_max_mib();
    }
    if (o.logs_max_mib() > 0) out.outputs.logs_max_mib = o.logs_max_mib();
  }
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

void ToProtoHeader(const ResultsTable& table, v1::ResultsTable* out) {
  for (const ResultsColumn& c : table.columns) {
    v1::ResultsColumn* col = out->add_columns();
    col->set_name(c.name);
    col->set_type(std::string(ColumnTypeName(c.type)));
    col->set_role(std::string(ColumnRoleName(c.role)));
  }
  out->set_headline(table.headline);
  out->set_group_by(table.group_by);
  out->set_note(table.note);
}

v1::ResultsRow ToProto(const std::vector<ResultValue>& row) {
  v1::ResultsRow out;
  for (const ResultValue& v : row) {
    v1::ResultsCell* cell = out.add_cells();
    if (const auto* text = std::get_if<std::string>(&v)) {
      cell->set_text(*text);
    } else if (const auto* i = std::get_if<int64_t>(&v)) {
      cell->set_integer(*i);
    } else if (const auto* d = std::get_if<double>(&v)) {
      cell->set_number(*d);
    } else if (const auto* b = std::get_if<bool>(&v)) {
      cell->set_boolean(*b);
    } else if (const auto* f = std::get_if<Fraction>(&v)) {
      cell->mutable_fraction()->set_count(f->count);
      cell->mutable_fraction()->set_of(f->of);
    }
  }
  return out;
}

absl::StatusOr<ResultsTable> FromProto(const v1::ResultsTable& table) {
  ResultsTable out;
  for (const v1::ResultsColumn& c : table.columns()) {
    const std::optional<ColumnType> type = ParseColumnType(c.type());
    const std::optional<ColumnRole> role = ParseColumnRole(c.role());
    if (!type || !role) {
      return absl::DataLossError(absl::StrCat(
          "results column '", c.name(), "' has type '", c.type(),
          "' and role '", c.role(),
          "', which this build does not know: upgrade this client to the "
          "coordinator's version"));
    }
    out.AddColumn(c.name(), *type, *role);
  }
  using Cell = v1::ResultsCell;
  for (const v1::ResultsRow& r : table.rows()) {
    if (static_cast<size_t>(r.cells_size()) != out.columns.size()) {
      return absl::DataLossError(absl::StrCat("a results row of ",
                                              r.cells_size(), " cells for ",
                                              out.columns.size(), " columns"));
    }
    std::vector<ResultValue> row;
    for (int i = 0; i < r.cells_size(); ++i) {
      const Cell& c = r.cells(i);
      const ColumnType type = out.columns[static_cast<size_t>(i)].type;
      const bool fits =
          c.value_case() == Cell::VALUE_NOT_SET ||
          (c.value_case() == Cell::kText && type == ColumnType::kText) ||
          (c.value_case() == Cell::kInteger && type == ColumnType::kInteger) ||
          (c.value_case() == Cell::kNumber && type == ColumnType::kNumber) ||
          (c.value_case() == Cell::kBoolean && type == ColumnType::kBoolean) ||
          (c.value_case() == Cell::kFraction && type == ColumnType::kFraction);
      if (!fits) {
        return absl::DataLossError(absl::StrCat(
            "results column '", out.columns[static_cast<size_t>(i)].name, "' (",
            ColumnTypeName(type), ") holds another type"));
      }
      switch (c.value_case()) {
        case Cell::kText:
          row.emplace_back(c.text());
          break;
        case Cell::kInteger:
          row.emplace_back(c.integer());
          break;
        case Cell::kNumber:
          row.emplace_back(c.number());
          break;
        case Cell::kBoolean:
          row.emplace_back(c.boolean());
          break;
        case Cell::kFraction:
          row.emplace_back(Fraction{c.fraction().count(), c.fraction().of()});
          break;
        case Cell::VALUE_NOT_SET:
          row.emplace_back();
          break;
      }
    }
    out.rows.push_back(std::move(row));
  }
  out.headline = table.headline();
  out.group_by = table.group_by();
  out.note = table.note();
  return out;
}

}  // namespace tailsweep
