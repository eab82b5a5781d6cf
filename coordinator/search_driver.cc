#include "coordinator/search_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tailsweep {

absl::Status SearchDriver::Start() {
  absl::StatusOr<std::vector<Store::SweepRow>> sweeps = store_->Sweeps();
  if (!sweeps.ok()) return sweeps.status();
  absl::MutexLock lock(&mu_);
  for (const Store::SweepRow& row : *sweeps) {
    absl::StatusOr<Store::SweepDetail> detail = store_->Sweep(row.name);
    if (!detail.ok()) return detail.status();
    if (detail->spec.empty()) continue;  // a file older than stored specs
    absl::StatusOr<SweepSpec> spec = ParseSweepSpec(detail->spec, row.name);
    if (!spec.ok() || !spec->search) continue;
    searching_[spec->name] = *spec;
    if (absl::Status s = Advance(*spec); !s.ok()) return s;
  }
  if (!searching_.empty()) {
    spdlog::info("{} boundary sweep(s) to advance", searching_.size());
  }
  return absl::OkStatus();
}

absl::Status SearchDriver::Submitted(const SweepSpec& spec) {
  if (!spec.search) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  searching_[spec.name] = spec;
  return Advance(spec);
}

void SearchDriver::JobFinished() {
  absl::MutexLock lock(&mu_);
  for (const auto& [name, spec] : searching_) {
    if (absl::Status s = Advance(spec); !s.ok()) {
      spdlog::warn(
          "sweep {}: next probes not added ({}); tried again at the "
          "next result",
          name, s.ToString());
    }
  }
}

absl::StatusOr<const std::vector<CellSearch>*> SearchDriver::Replan(
    const SweepSpec& spec) {
  KeptPlan kept;
  kept.generation = store_->Generation();
  absl::StatusOr<std::vector<JobRow>> rows = store_->Jobs(spec.name);
  if (!rows.ok()) return rows.status();
  std::vector<SearchJob> jobs;
  for (const JobRow& r : *rows) {
    jobs.push_back({r.cell, r.state, r.result_json});
    kept.next_position = std::max(kept.next_position, r.position + 1);
  }
  kept.plan = PlanSearch(spec, jobs);
  KeptPlan& slot = plans_[spec.name];
  slot = std::move(kept);
  return &slot.plan;
}

absl::StatusOr<std::vector<CellSearch>> SearchDriver::Plan(
    const std::string& sweep) {
  absl::MutexLock lock(&mu_);
  const auto spec = searching_.find(sweep);
  if (spec == searching_.end()) {
    absl::StatusOr<Store::SweepDetail> detail = store_->Sweep(sweep);
    if (!detail.ok()) return detail.status();
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", sweep,
        "' has no boundary search (no 'search:' in its spec): its table is "
        "its results"));
  }
  const auto kept = plans_.find(sweep);
  if (kept != plans_.end() && kept->second.generation == store_->Generation()) {
    return kept->second.plan;
  }
  absl::StatusOr<const std::vector<CellSearch>*> plan = Replan(spec->second);
  if (!plan.ok()) return plan.status();
  return **plan;
}

absl::Status SearchDriver::Advance(const SweepSpec& spec) {
  absl::StatusOr<const std::vector<CellSearch>*> plan = Replan(spec);
  if (!plan.ok()) return plan.status();
  const int64_t next_position = plans_[spec.name].next_position;
  std::vector<JobSpec> add;
  std::vector<std::string> probes;
  for (const CellSearch& c : **plan) {
    for (const auto& [probe, seed] : c.add) {
      absl::StatusOr<JobSpec> job = ProbeJob(spec, c.cell, probe, seed);
      if (!job.ok()) return job.status();
      add.push_back(*std::move(job));
    }
    if (!c.add.empty()) {
      std::vector<std::string> where;
      for (const auto& [k, v] : c.cell)
        where.push_back(absl::StrCat(k, "=", v));
      probes.push_back(absl::StrCat(absl::StrJoin(where, " "), ": ",
                                    spec.search->key, "=", c.add[0].first));
    }
  }
  if (add.empty()) return absl::OkStatus();
  absl::StatusOr<SubmitResult> added =
      store_->SubmitSweep(spec, add, next_position);
  if (!added.ok()) return added.status();
  if (added->added > 0) {
    spdlog::info("sweep {}: {} run(s) added ({})", spec.name, added->added,
                 absl::StrJoin(probes, "; "));
  }
  return absl::OkStatus();
}

}  // namespace tailsweep
