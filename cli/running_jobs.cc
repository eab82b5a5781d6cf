#include "cli/running_jobs.h"

#include "absl/strings/str_cat.h"
#include "cli/messages.h"
#include "cli/pages.h"
#include "core/number_text.h"
#include "core/schema/job_state.h"
#include "core/schema/metrics_line.h"

namespace tailsweep::cli {

absl::Status RunningJobs::Refresh(Connection& c, const std::string& sweep) {
  absl::StatusOr<std::vector<v1::JobInfo>> running =
      ListAllJobs(c, sweep, std::string(JobStateName(JobState::kLeased)));
  if (!running.ok()) return running.status();
  std::map<std::string, std::vector<v1::MetricPoint>> points;
  for (const v1::JobInfo& j : *running) {
    auto it = jobs_.find(j.job_id());
    const int64_t from = it != jobs_.end() ? it->second.step + 1 : 0;
    absl::StatusOr<std::vector<v1::MetricPoint>> got =
        GetAllMetrics(c, j.job_id(), {kLossMetric, kSpreadRatioMetric}, from);
    if (!got.ok()) return got.status();
    points[j.job_id()] = *std::move(got);
  }
  Update(*running, points, Clock::now());
  return absl::OkStatus();
}

void RunningJobs::Update(
    const std::vector<v1::JobInfo>& running,
    const std::map<std::string, std::vector<v1::MetricPoint>>& points,
    Clock::time_point now) {
  std::map<std::string, Seen> next;
  order_.clear();
  for (const v1::JobInfo& j : running) {
    const bool known = jobs_.count(j.job_id()) > 0;
    Seen seen = known ? jobs_[j.job_id()] : Seen{};
    seen.cell = CellText(j.cell());
    seen.worker = j.holder();
    const int64_t before = seen.step;
    auto it = points.find(j.job_id());
    if (it != points.end()) {
      // By name, then step: the last of each name is its newest.
      for (const v1::MetricPoint& p : it->second) {
        if (p.step() < seen.step) continue;
        seen.step = p.step();
        if (p.name() == kLossMetric) {
          seen.loss = p.value();
          seen.has_loss = true;
        } else if (p.name() == kSpreadRatioMetric) {
          seen.spread = p.value();
          seen.has_spread = true;
        }
      }
    }
    if (known && seen.step != before) {
      seen.changed_seen = true;
      seen.changed = now;
    }
    order_.push_back(j.job_id());
    next[j.job_id()] = std::move(seen);
  }
  jobs_ = std::move(next);
}

Table RunningJobs::View(Clock::time_point now, size_t max_rows) const {
  Table t{
      {"job", "cell", "worker", "step", "loss", "spread_ratio", "last point"},
      {}};
  for (const std::string& id : order_) {
    if (t.rows.size() == max_rows) {
      t.rows.push_back({absl::StrCat("(", order_.size() - max_rows, " more)"),
                        "", "", "", "", "", ""});
      break;
    }
    const Seen& s = jobs_.at(id);
    const int64_t age_s =
        std::chrono::duration_cast<std::chrono::seconds>(now - s.changed)
            .count();
    t.rows.push_back({id.substr(0, 12), s.cell, s.worker,
                      s.step > 0 ? absl::StrCat(s.step) : "-",
                      s.has_loss ? FormatDouble(s.loss) : "-",
                      s.has_spread ? FormatDouble(s.spread) : "-",
                      s.changed_seen ? absl::StrCat(age_s, "s ago") : "-"});
  }
  return t;
}

}  // namespace tailsweep::cli
