#include "cli/running_jobs.h"

#include <algorithm>
#include <set>

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
        GetAllMetrics(c, j.job_id(), {}, from);
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
      // Each name's newest value (names may be logged at different rates).
      for (const v1::MetricPoint& p : it->second) {
        seen.step = std::max(seen.step, p.step());
        seen.values[p.name()] = p.value();  // by name, then step
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

std::vector<std::string> RunningJobs::Columns() const {
  std::set<std::string> names;
  for (const auto& [id, seen] : jobs_) {
    for (const auto& [name, value] : seen.values) {
      if (name.find('/') == std::string::npos) names.insert(name);
    }
  }
  std::vector<std::string> out;
  for (const char* first : {kLossMetric, kSpreadRatioMetric}) {
    if (names.erase(first) > 0 || names.empty()) out.push_back(first);
  }
  for (const std::string& name : names) out.push_back(name);
  out.resize(std::min<size_t>(out.size(), 2));
  while (out.size() < 2) {
    out.push_back(out.empty() || out[0] != kLossMetric ? kLossMetric
                                                       : kSpreadRatioMetric);
  }
  return out;
}

Table RunningJobs::View(Clock::time_point now, size_t max_rows) const {
  const std::vector<std::string> metrics = Columns();
  Table t{
      {"job", "cell", "worker", "step", metrics[0], metrics[1], "last point"},
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
    auto value = [&](const std::string& name) -> std::string {
      auto v = s.values.find(name);
      return v == s.values.end() ? "-" : FormatForPeople(v->second);
    };
    t.rows.push_back({id.substr(0, 12), s.cell, s.worker,
                      s.step > 0 ? absl::StrCat(s.step) : "-",
                      value(metrics[0]), value(metrics[1]),
                      s.changed_seen ? absl::StrCat(age_s, "s ago") : "-"});
  }
  return t;
}

}  // namespace tailsweep::cli
