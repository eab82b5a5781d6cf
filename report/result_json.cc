#include "report/result_json.h"

#include <iterator>

#include "core/schema/job_state.h"
#include "proto/paged_reads.h"
#include "proto/wire_records.h"

namespace tailsweep {

nlohmann::json CountsJson(const JobCounts& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (JobState state : kJobStates) {
    out[std::string(JobStateName(state))] = counts.Of(state);
  }
  return out;
}

nlohmann::json SweepSettingsJson(const v1::SweepSettings& s,
                                 const v1::SweepHours& h) {
  nlohmann::json tags = nlohmann::json::object();
  for (const auto& [k, v] : s.tags()) tags[k] = v;
  return {{"priority", s.priority()},
          {"max_running", s.max_running()},
          {"paused", s.paused()},
          {"held", s.held()},
          {"max_failures", s.max_failures()},
          {"failures", s.failures()},
          {"timeout_s", s.timeout_s()},
          {"tags", tags},
          {"notes", s.notes()},
          {"stop_rule", s.stop_rule()},
          {"gpu_hours", h.gpu_hours()},
          {"cpu_hours", h.cpu_hours()},
          {"preempted_gpu_hours", h.preempted_gpu_hours()},
          {"preempted_cpu_hours", h.preempted_cpu_hours()}};
}

nlohmann::json JobStateNamesJson() {
  nlohmann::json out = nlohmann::json::array();
  for (JobState state : kJobStates)
    out.push_back(std::string(JobStateName(state)));
  return out;
}

nlohmann::json CellResultJson(const v1::CellResult& r, JsonNumberFn number) {
  return {{"jobs", r.jobs()},
          {"done", r.done()},
          {"failed", r.failed()},
          {"ratio_median", number(r.ratio_median())},
          {"ratio_mean", number(r.ratio_mean())},
          {"ratio_ci_low", number(r.ratio_ci_low())},
          {"ratio_ci_high", number(r.ratio_ci_high())},
          {"seed_min", number(r.seed_min())},
          {"seed_max", number(r.seed_max())},
          {"bold", r.bold()},
          {"collapsed", r.collapsed()},
          {"collapse_step", number(r.collapse_step())},
          {"diverged", r.diverged()},
          {"hill_stat", number(r.hill_stat())},
          {"stopped_early", r.stopped_early()},
          {"steps_saved", r.steps_saved()}};
}

namespace {

// A boundary sweep's jobs as the plan reads them (boundary_search.h).
std::vector<SearchJob> SearchJobsOf(const std::vector<v1::JobInfo>& jobs) {
  std::vector<SearchJob> out;
  for (const v1::JobInfo& j : jobs) {
    SearchJob job;
    for (const v1::KeyValue& kv : j.cell()) {
      job.cell.emplace_back(kv.key(), kv.value());
    }
    job.state = ParseJobState(j.state()).value_or(JobState::kQueued);
    job.result_json = j.result_json();
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<CellSearch>> BoundariesOf(
    const CoordinatorApi& calls, const SweepSpec& spec) {
  v1::GetBoundariesRequest req;
  req.set_sweep(spec.name);
  v1::GetBoundariesResponse resp;
  const absl::Status st = calls.GetBoundaries(req, &resp);
  if (st.ok()) return FromProto(resp);
  if (st.code() != absl::StatusCode::kUnimplemented) return st;
  absl::StatusOr<std::vector<v1::JobInfo>> jobs =
      ListAllJobs(calls, spec.name, "");
  if (!jobs.ok()) return jobs.status();
  return PlanSearch(spec, SearchJobsOf(*jobs));
}

nlohmann::json SearchJson(const std::vector<CellSearch>& plan,
                          JsonNumberFn number) {
  nlohmann::json doc = nlohmann::json::array();
  for (const CellSearch& c : plan) {
    nlohmann::json row = nlohmann::json::object();
    for (const auto& [k, v] : c.cell) row[k] = v;
    row["state"] = std::string(CellSearchStateName(c.state));
    row["estimate"] = number(c.estimate);
    row["bracket_lo"] = number(c.bracket_lo);
    row["bracket_hi"] = number(c.bracket_hi);
    row["runs"] = c.runs;
    nlohmann::json probes = nlohmann::json::array();
    for (const ProbePoint& p : c.probes) {
      probes.push_back({{"value", p.value},
                        {"x", number(p.x)},
                        {"yes", p.yes},
                        {"n", p.yes + p.no},
                        {"failed", p.failed},
                        {"pending", p.pending},
                        {"low", number(p.low)},
                        {"high", number(p.high)},
                        {"verdict", std::string(ProbeVerdictName(p.verdict))}});
    }
    row["probes"] = std::move(probes);
    doc.push_back(std::move(row));
  }
  return doc;
}

}  // namespace tailsweep
